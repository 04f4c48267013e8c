// The Trace's tables as columns (columns.h). Every column is filled by one loop in C++ over
// the trace's own vectors into a numpy array that pandas then keeps as it is: no Python
// object per row, no copy beyond the column itself.
#include "columns.h"

#include <dreamscope/storage/job.h>

#include <pybind11/numpy.h>

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace dreamscope::python {

namespace py = pybind11;

namespace {

// A numpy array of n values of type Out, value i being get(i).
template <class Out, class Get>
py::array_t<Out> numbers(std::size_t n, Get get) {
  py::array_t<Out> a(static_cast<py::ssize_t>(n));
  Out* p = a.mutable_data();
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<Out>(get(i));
  return a;
}

template <class Out, class Get>
py::tuple int_column(std::size_t n, Get get) {
  return py::make_tuple("int", numbers<Out>(n, get));
}

template <class Get>
py::tuple float_column(std::size_t n, Get get) {
  return py::make_tuple("int", numbers<double>(n, get));
}

// Numbers where kNoValue is "not recorded": pandas' nullable Int64 on the Python side.
template <class Get>
py::tuple nullable_column(std::size_t n, Get get) {
  return py::make_tuple("nullable", numbers<std::int64_t>(n, get));
}

// Interned strings: each id the column uses gets a code in order of first use, so that the
// categories are the strings the column holds (not the trace's whole string table).
template <class Get>
py::tuple string_column(const Trace& trace, std::size_t n, Get id_of) {
  std::vector<std::int32_t> code_of(trace.strings().size(), -1);
  py::array_t<std::int32_t> codes(static_cast<py::ssize_t>(n));
  std::int32_t* p = codes.mutable_data();
  py::list categories;
  std::int32_t next = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const StringId id = id_of(i);
    std::int32_t& code = code_of[id];
    if (code < 0) {
      code = next++;
      const std::string_view s = trace.str(id);
      categories.append(py::str(s.data(), s.size()));
    }
    p[i] = code;
  }
  return py::make_tuple("category", codes, categories);
}

// Strings that are not interned (names of processes, tracks, devices): the same, by value.
template <class Get>
py::tuple text_column(std::size_t n, Get text_of) {
  std::unordered_map<std::string_view, std::int32_t> code_of;
  py::array_t<std::int32_t> codes(static_cast<py::ssize_t>(n));
  std::int32_t* p = codes.mutable_data();
  py::list categories;
  for (std::size_t i = 0; i < n; ++i) {
    const std::string_view s = text_of(i);
    auto [it, added] = code_of.emplace(s, static_cast<std::int32_t>(code_of.size()));
    if (added) categories.append(py::str(s.data(), s.size()));
    p[i] = it->second;
  }
  return py::make_tuple("category", codes, categories);
}

// An enum whose values are 0..names.size()-1, named as the CLI names them.
template <std::size_t N, class Get>
py::tuple enum_column(std::size_t n, const std::array<std::string_view, N>& names, Get value_of) {
  py::array_t<std::int32_t> codes(static_cast<py::ssize_t>(n));
  std::int32_t* p = codes.mutable_data();
  for (std::size_t i = 0; i < n; ++i) {
    const auto v = static_cast<std::size_t>(value_of(i));
    p[i] = v < N ? static_cast<std::int32_t>(v) : -1;
  }
  py::list categories;
  for (auto s : names) categories.append(py::str(s.data(), s.size()));
  return py::make_tuple("category", codes, categories);
}

constexpr std::array<std::string_view, 2> kApiKinds{"runtime", "driver"};
constexpr std::array<std::string_view, 4> kGpuOpKinds{"kernel", "memcpy", "memset", "sync"};
constexpr std::array<std::string_view, 2> kTrackKinds{"thread", "stream"};
constexpr std::array<std::string_view, 3> kEventTables{"cuda_api", "gpu_op", "annotation"};

// What each track is, for the columns the event tables add (pid and tid of a thread, device
// ordinal and stream id of a stream, its rank in a job).
struct TrackLookup {
  std::vector<std::int64_t> pid, tid, device, stream, rank;
  bool has_ranks = false;

  explicit TrackLookup(const Trace& trace) {
    const auto& tracks = trace.tracks();
    const std::size_t n = tracks.size();
    pid.assign(n, kNoValue);
    tid.assign(n, kNoValue);
    device.assign(n, kNoValue);
    stream.assign(n, kNoValue);
    for (std::size_t t = 0; t < n; ++t) {
      const TrackInfo& info = tracks[t];
      if (info.kind == TrackKind::CpuThread) {
        if (info.process < trace.processes().size()) pid[t] = trace.processes()[info.process].pid;
        tid[t] = info.tid;
      } else {
        if (info.device < trace.devices().size()) {
          const DeviceInfo& d = trace.devices()[info.device];
          device[t] = d.ordinal;
          if (d.process < trace.processes().size()) pid[t] = trace.processes()[d.process].pid;
        }
        stream[t] = info.stream;
      }
    }
    rank = track_ranks(trace);
    has_ranks = std::any_of(rank.begin(), rank.end(), [](std::int64_t r) { return r != kNoValue; });
  }
};

// The columns every event table starts with: its track and what the track is.
template <class TrackOf>
void track_columns(py::dict& d, const TrackLookup& tracks, std::size_t n, TrackOf track_of, bool gpu_side,
                   bool cpu_side) {
  d["track"] = int_column<std::uint32_t>(n, track_of);
  if (cpu_side) {
    d["pid"] = nullable_column(n, [&](std::size_t i) { return tracks.pid[track_of(i)]; });
    d["tid"] = nullable_column(n, [&](std::size_t i) { return tracks.tid[track_of(i)]; });
  }
  if (gpu_side) {
    d["device"] = nullable_column(n, [&](std::size_t i) { return tracks.device[track_of(i)]; });
    d["stream"] = nullable_column(n, [&](std::size_t i) { return tracks.stream[track_of(i)]; });
  }
  if (tracks.has_ranks) d["rank"] = nullable_column(n, [&](std::size_t i) { return tracks.rank[track_of(i)]; });
}

template <class Table>
void time_columns(py::dict& d, const Table& t, std::size_t n) {
  d["start"] = int_column<std::int64_t>(n, [&](std::size_t i) { return t.start[i]; });
  d["end"] = int_column<std::int64_t>(n, [&](std::size_t i) { return t.end[i]; });
  d["dur"] = int_column<std::int64_t>(n, [&](std::size_t i) { return t.end[i] - t.start[i]; });
}

py::dict cuda_api(const Trace& trace) {
  const TrackLookup tracks(trace);
  const auto& t = trace.cuda_api();
  const std::size_t n = t.size();
  py::dict d;
  track_columns(d, tracks, n, [&](std::size_t i) { return t.track[i]; }, false, true);
  time_columns(d, t, n);
  d["name"] = string_column(trace, n, [&](std::size_t i) { return t.name[i]; });
  d["kind"] = enum_column(n, kApiKinds, [&](std::size_t i) { return t.kind[i]; });
  d["cbid"] = int_column<std::int32_t>(n, [&](std::size_t i) { return t.cbid[i]; });
  d["correlation"] = nullable_column(n, [&](std::size_t i) { return t.correlation[i]; });
  d["external_id"] = nullable_column(n, [&](std::size_t i) { return t.external_id[i]; });
  d["result"] = int_column<std::int32_t>(n, [&](std::size_t i) { return t.result[i]; });
  d["stream_arg"] = nullable_column(n, [&](std::size_t i) { return t.stream[i]; });
  d["event"] = nullable_column(n, [&](std::size_t i) { return t.event[i]; });
  return d;
}

// GPU operations; `kernels_only`: the kernels, with their launch configuration and without
// the columns of copies and syncs.
py::dict gpu_ops(const Trace& trace, bool kernels_only) {
  const TrackLookup tracks(trace);
  const auto& g = trace.gpu_ops();
  std::vector<GpuOpIndex> rows;
  if (kernels_only) {
    for (GpuOpIndex i{0}; i < g.size(); ++i) {
      if (g.kind[i] == GpuOpKind::Kernel) rows.push_back(i);
    }
  } else {
    rows.resize(g.size());
    for (GpuOpIndex i{0}; i < g.size(); ++i) rows[i] = i;
  }
  const std::size_t n = rows.size();
  py::dict d;
  track_columns(d, tracks, n, [&](std::size_t i) { return g.track[rows[i]]; }, true, false);
  d["start"] = int_column<std::int64_t>(n, [&](std::size_t i) { return g.start[rows[i]]; });
  d["end"] = int_column<std::int64_t>(n, [&](std::size_t i) { return g.end[rows[i]]; });
  d["dur"] = int_column<std::int64_t>(n, [&](std::size_t i) { return g.end[rows[i]] - g.start[rows[i]]; });
  d["name"] = string_column(trace, n, [&](std::size_t i) { return g.name[rows[i]]; });
  if (!kernels_only) {
    d["kind"] = enum_column(n, kGpuOpKinds, [&](std::size_t i) { return g.kind[rows[i]]; });
    d["subkind"] = text_column(n, [&](std::size_t i) -> std::string_view {
      const GpuOpIndex r = rows[i];
      if (g.kind[r] == GpuOpKind::Memcpy) return to_string(static_cast<CopyKind>(g.subkind[r]));
      if (g.kind[r] == GpuOpKind::Sync) return to_string(static_cast<SyncKind>(g.subkind[r]));
      return {};
    });
  }
  d["correlation"] = nullable_column(n, [&](std::size_t i) { return g.correlation[rows[i]]; });
  if (!kernels_only) {
    d["bytes"] = int_column<std::int64_t>(n, [&](std::size_t i) { return g.bytes[rows[i]]; });
    d["event"] = nullable_column(n, [&](std::size_t i) { return g.event[rows[i]]; });
  }
  const auto& launches = trace.launch_configs();
  auto launch = [&](std::size_t i) -> const LaunchConfig& { return launches[g.launch[rows[i]]]; };
  static const char* const kDims[] = {"x", "y", "z"};
  for (int k = 0; k < 3; ++k) {
    d[py::str(std::string("grid_") + kDims[k])] =
        int_column<std::int32_t>(n, [&](std::size_t i) { return launch(i).grid[k]; });
  }
  for (int k = 0; k < 3; ++k) {
    d[py::str(std::string("block_") + kDims[k])] =
        int_column<std::int32_t>(n, [&](std::size_t i) { return launch(i).block[k]; });
  }
  d["registers_per_thread"] = int_column<std::int32_t>(n, [&](std::size_t i) { return launch(i).registers_per_thread; });
  d["shared_memory"] = nullable_column(n, [&](std::size_t i) -> std::int64_t {
    return launch(i).shared_memory_recorded() ? launch(i).shared_memory() : kNoValue;
  });
  return d;
}

py::dict annotations(const Trace& trace) {
  const TrackLookup tracks(trace);
  const auto& a = trace.annotations();
  const std::size_t n = a.size();
  py::dict d;
  track_columns(d, tracks, n, [&](std::size_t i) { return a.track[i]; }, true, true);
  time_columns(d, a, n);
  d["name"] = string_column(trace, n, [&](std::size_t i) { return a.name[i]; });
  d["domain"] = string_column(trace, n, [&](std::size_t i) { return a.domain[i]; });
  d["category"] = string_column(trace, n, [&](std::size_t i) { return a.category[i]; });
  d["payload"] = nullable_column(n, [&](std::size_t i) { return a.payload[i]; });
  d["external_id"] = nullable_column(n, [&](std::size_t i) { return a.external_id[i]; });
  d["filled_from"] = nullable_column(n, [&](std::size_t i) { return a.filled_from[i]; });
  d["parent"] = nullable_column(n, [&](std::size_t i) -> std::int64_t {
    return a.parent[i] == kNoIndex ? kNoValue : std::int64_t{a.parent[i]};
  });
  d["depth"] = int_column<std::uint16_t>(n, [&](std::size_t i) { return a.depth[i]; });
  return d;
}

// The three event tables as one: what each row is, where and when, and its name.
py::dict events(const Trace& trace) {
  const TrackLookup tracks(trace);
  const auto& api = trace.cuda_api();
  const auto& gpu = trace.gpu_ops();
  const auto& ann = trace.annotations();
  const std::size_t n_api = api.size(), n_gpu = gpu.size(), n = n_api + n_gpu + ann.size();
  // Row i: API calls, then GPU ops, then annotations; (table, index in it).
  auto table_of = [&](std::size_t i) -> std::size_t { return i < n_api ? 0 : i < n_api + n_gpu ? 1 : 2; };
  auto row_of = [&](std::size_t i) -> std::size_t { return i < n_api ? i : i < n_api + n_gpu ? i - n_api : i - n_api - n_gpu; };
  auto track_of = [&](std::size_t i) -> TrackId {
    const std::size_t r = row_of(i);
    switch (table_of(i)) {
      case 0: return api.track[r];
      case 1: return gpu.track[r];
      default: return ann.track[r];
    }
  };
  auto start_of = [&](std::size_t i) -> TimeNs {
    const std::size_t r = row_of(i);
    switch (table_of(i)) {
      case 0: return api.start[r];
      case 1: return gpu.start[r];
      default: return ann.start[r];
    }
  };
  auto end_of = [&](std::size_t i) -> TimeNs {
    const std::size_t r = row_of(i);
    switch (table_of(i)) {
      case 0: return api.end[r];
      case 1: return gpu.end[r];
      default: return ann.end[r];
    }
  };
  py::dict d;
  d["table"] = enum_column(n, kEventTables, table_of);
  track_columns(d, tracks, n, track_of, true, true);
  d["start"] = int_column<std::int64_t>(n, start_of);
  d["end"] = int_column<std::int64_t>(n, end_of);
  d["dur"] = int_column<std::int64_t>(n, [&](std::size_t i) { return end_of(i) - start_of(i); });
  d["name"] = string_column(trace, n, [&](std::size_t i) -> StringId {
    const std::size_t r = row_of(i);
    switch (table_of(i)) {
      case 0: return api.name[r];
      case 1: return gpu.name[r];
      default: return ann.name[r];
    }
  });
  // API calls: runtime or driver; GPU ops: kernel, memcpy, ...; annotations: their category.
  d["category"] = text_column(n, [&](std::size_t i) -> std::string_view {
    const std::size_t r = row_of(i);
    switch (table_of(i)) {
      case 0: return kApiKinds[static_cast<std::size_t>(api.kind[r]) % kApiKinds.size()];
      case 1: return kGpuOpKinds[static_cast<std::size_t>(gpu.kind[r]) % kGpuOpKinds.size()];
      default: return trace.str(ann.category[r]);
    }
  });
  return d;
}

py::dict flows(const Trace& trace) {
  const auto& f = trace.flows();
  const std::size_t n = f.size();
  py::dict d;
  d["kind"] = string_column(trace, n, [&](std::size_t i) { return f[i].kind; });
  d["from_track"] = int_column<std::uint32_t>(n, [&](std::size_t i) { return f[i].from_track; });
  d["from_time"] = int_column<std::int64_t>(n, [&](std::size_t i) { return f[i].from_time; });
  d["to_track"] = int_column<std::uint32_t>(n, [&](std::size_t i) { return f[i].to_track; });
  d["to_time"] = int_column<std::int64_t>(n, [&](std::size_t i) { return f[i].to_time; });
  d["id"] = nullable_column(n, [&](std::size_t i) { return f[i].id; });
  return d;
}

py::dict track_table(const Trace& trace) {
  const TrackLookup lookup(trace);
  const auto& t = trace.tracks();
  const std::size_t n = t.size();
  py::dict d;
  d["track"] = int_column<std::uint32_t>(n, [](std::size_t i) { return i; });
  d["kind"] = enum_column(n, kTrackKinds, [&](std::size_t i) { return t[i].kind; });
  d["pid"] = nullable_column(n, [&](std::size_t i) { return lookup.pid[i]; });
  d["tid"] = nullable_column(n, [&](std::size_t i) { return lookup.tid[i]; });
  d["device"] = nullable_column(n, [&](std::size_t i) { return lookup.device[i]; });
  d["stream"] = nullable_column(n, [&](std::size_t i) { return lookup.stream[i]; });
  d["name"] = text_column(n, [&](std::size_t i) -> std::string_view { return t[i].name; });
  d["process"] = text_column(n, [&](std::size_t i) -> std::string_view {
    const ProcessId p = t[i].kind == TrackKind::CpuThread
                            ? t[i].process
                            : (t[i].device < trace.devices().size() ? trace.devices()[t[i].device].process : kNoIndex);
    return p < trace.processes().size() ? std::string_view(trace.processes()[p].name) : std::string_view();
  });
  if (lookup.has_ranks) d["rank"] = nullable_column(n, [&](std::size_t i) { return lookup.rank[i]; });
  return d;
}

py::dict processes(const Trace& trace) {
  const auto& p = trace.processes();
  const std::size_t n = p.size();
  py::dict d;
  d["pid"] = int_column<std::int64_t>(n, [&](std::size_t i) { return p[i].pid; });
  d["parent_pid"] = nullable_column(n, [&](std::size_t i) { return p[i].parent_pid; });
  d["name"] = text_column(n, [&](std::size_t i) -> std::string_view { return p[i].name; });
  d["command"] = text_column(n, [&](std::size_t i) -> std::string_view { return p[i].command; });
  d["start"] = nullable_column(n, [&](std::size_t i) { return p[i].start; });
  d["end"] = nullable_column(n, [&](std::size_t i) { return p[i].end; });
  d["exit_status"] = nullable_column(n, [&](std::size_t i) { return p[i].exit_status; });
  d["rank"] = nullable_column(n, [&](std::size_t i) { return p[i].rank; });
  d["local_rank"] = nullable_column(n, [&](std::size_t i) { return p[i].local_rank; });
  d["world_size"] = nullable_column(n, [&](std::size_t i) { return p[i].world_size; });
  d["host"] = text_column(n, [&](std::size_t i) -> std::string_view { return p[i].host; });
  d["clock_offset"] = int_column<std::int64_t>(n, [&](std::size_t i) { return p[i].clock_offset; });
  return d;
}

py::dict devices(const Trace& trace) {
  const auto& v = trace.devices();
  const std::size_t n = v.size();
  py::dict d;
  d["ordinal"] = int_column<std::int64_t>(n, [&](std::size_t i) { return v[i].ordinal; });
  d["pid"] = nullable_column(n, [&](std::size_t i) -> std::int64_t {
    return v[i].process < trace.processes().size() ? trace.processes()[v[i].process].pid : kNoValue;
  });
  d["name"] = text_column(n, [&](std::size_t i) -> std::string_view { return v[i].name; });
  d["sm_count"] = int_column<std::int64_t>(n, [&](std::size_t i) { return v[i].sm_count; });
  d["core_clock_khz"] = int_column<std::int64_t>(n, [&](std::size_t i) { return v[i].core_clock_khz; });
  d["memory_clock_khz"] = int_column<std::int64_t>(n, [&](std::size_t i) { return v[i].memory_clock_khz; });
  d["memory_bus_width_bits"] = int_column<std::int64_t>(n, [&](std::size_t i) { return v[i].memory_bus_width_bits; });
  d["memory_bandwidth_bytes_per_s"] =
      int_column<std::int64_t>(n, [&](std::size_t i) { return v[i].memory_bandwidth_bytes_per_s; });
  d["global_memory_bytes"] = int_column<std::int64_t>(n, [&](std::size_t i) { return v[i].global_memory_bytes; });
  d["compute_capability_major"] =
      int_column<std::int64_t>(n, [&](std::size_t i) { return v[i].compute_capability_major; });
  d["compute_capability_minor"] =
      int_column<std::int64_t>(n, [&](std::size_t i) { return v[i].compute_capability_minor; });
  return d;
}

py::dict memory(const Trace& trace) {
  const TrackLookup tracks(trace);
  const auto& m = trace.memory_events();
  const std::size_t n = m.size();
  py::dict d;
  track_columns(d, tracks, n, [&](std::size_t i) { return m[i].track; }, false, true);
  d["time"] = int_column<std::int64_t>(n, [&](std::size_t i) { return m[i].time; });
  d["device_type"] = nullable_column(n, [&](std::size_t i) { return m[i].device_type; });
  d["device_id"] = nullable_column(n, [&](std::size_t i) { return m[i].device_id; });
  d["addr"] = nullable_column(n, [&](std::size_t i) { return m[i].addr; });
  d["bytes"] = int_column<std::int64_t>(n, [&](std::size_t i) { return m[i].bytes; });
  d["total_allocated"] = nullable_column(n, [&](std::size_t i) { return m[i].total_allocated; });
  d["total_reserved"] = nullable_column(n, [&](std::size_t i) { return m[i].total_reserved; });
  return d;
}

py::dict calibration(const Trace& trace) {
  const auto& c = trace.calibration();
  const std::size_t n = c.size();
  py::dict d;
  d["event_kind"] = text_column(n, [&](std::size_t i) -> std::string_view { return c[i].event_kind; });
  d["cost_ns"] = float_column(n, [&](std::size_t i) { return c[i].cost_ns; });
  d["samples"] = int_column<std::int64_t>(n, [&](std::size_t i) { return c[i].samples; });
  d["method"] = text_column(n, [&](std::size_t i) -> std::string_view { return c[i].method; });
  return d;
}

py::dict ranks(const Trace& trace) {
  const std::vector<JobRank> r = job_ranks(trace);
  const std::size_t n = r.size();
  const auto& procs = trace.processes();
  py::dict d;
  d["rank"] = int_column<std::int64_t>(n, [&](std::size_t i) { return r[i].rank; });
  d["local_rank"] = nullable_column(n, [&](std::size_t i) { return r[i].local_rank; });
  d["host"] = text_column(n, [&](std::size_t i) -> std::string_view { return r[i].host; });
  d["pid"] = nullable_column(n, [&](std::size_t i) -> std::int64_t {
    return r[i].processes.empty() ? kNoValue : procs[r[i].processes.front()].pid;
  });
  d["processes"] = int_column<std::int64_t>(n, [&](std::size_t i) { return r[i].processes.size(); });
  return d;
}

constexpr const char* kTables[] = {"events", "cuda_api", "gpu_ops",  "kernels",     "annotations", "flows",
                                   "tracks", "processes", "devices", "memory", "calibration", "ranks", nullptr};

} // namespace

const char* const* table_names() { return kTables; }

py::dict table_columns(const Trace& trace, const std::string& table) {
  if (table == "events") return events(trace);
  if (table == "cuda_api") return cuda_api(trace);
  if (table == "gpu_ops") return gpu_ops(trace, false);
  if (table == "kernels") return gpu_ops(trace, true);
  if (table == "annotations") return annotations(trace);
  if (table == "flows") return flows(trace);
  if (table == "tracks") return track_table(trace);
  if (table == "processes") return processes(trace);
  if (table == "devices") return devices(trace);
  if (table == "memory") return memory(trace);
  if (table == "calibration") return calibration(trace);
  if (table == "ranks") return ranks(trace);
  throw std::invalid_argument("no table '" + table + "'");
}

} // namespace dreamscope::python
