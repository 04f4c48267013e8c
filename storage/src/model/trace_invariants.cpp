// The invariants every Trace holds when it leaves TraceBuilder::build(), checked in this one
// place for every loader (trace.db reader, trace log reader, Kineto and nsys importers) and for
// the simulator. The rest of dreamscope relies on them: durations are non-negative, time
// arithmetic cannot overflow, every id indexes something. trace.h lists them.
#include "dreamscope/storage/columns.h"
#include "dreamscope/storage/limits.h"
#include "dreamscope/storage/trace.h"

#include <cmath>
#include <string>

namespace dreamscope {

namespace {

// Counts the rows that break one rule and keeps the first, for a one-line error.
class Violation {
 public:
  Violation(std::string_view table, std::string_view rule) : table_(table), rule_(rule) {}

  void add(std::size_t row, std::string detail) {
    if (count_++ == 0) {
      first_row_ = row;
      first_ = std::move(detail);
    }
  }
  explicit operator bool() const { return count_ > 0; }

  [[noreturn]] void raise(const std::string& origin) const {
    throw TraceError(origin + ": " + std::to_string(count_) + " " + table_ + (count_ == 1 ? " row " : " rows ") +
                     rule_ + "; first: row " + std::to_string(first_row_) + ", " + first_ +
                     " (docs/limits.md)");
  }

 private:
  std::string table_, rule_;
  std::size_t count_ = 0;
  std::size_t first_row_ = 0;
  std::string first_;
};

bool timestamp_in_range(TimeNs t) {
  return t > -limits::kMaxAbsTimestampNs && t < limits::kMaxAbsTimestampNs;
}

std::string interval_text(TimeNs start, TimeNs end) {
  return "start " + std::to_string(start) + " ns, end " + std::to_string(end) + " ns";
}

// The rules every timed row follows, whichever table it is in.
void check_intervals(std::string_view table, const std::vector<TimeNs>& start, const std::vector<TimeNs>& end,
                     const std::string& origin) {
  Violation out_of_range(table, "with a timestamp beyond +-2^62 ns");
  Violation backwards(table, "with end < start");
  for (std::size_t i = 0; i < start.size(); ++i) {
    if (!timestamp_in_range(start[i]) || !timestamp_in_range(end[i])) {
      out_of_range.add(i, interval_text(start[i], end[i]));
    } else if (end[i] < start[i]) {
      backwards.add(i, interval_text(start[i], end[i]));
    }
  }
  if (out_of_range) out_of_range.raise(origin);
  if (backwards) backwards.raise(origin);
}

template <class Id> // StringId, TrackId, ...
void check_ids(std::string_view table, std::string_view what, const std::vector<Id>& ids, std::size_t count,
               const std::string& origin) {
  Violation unknown(table, std::string("naming an unknown ") + std::string(what));
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] >= count) unknown.add(i, std::string(what) + " " + std::to_string(ids[i]));
  }
  if (unknown) unknown.raise(origin);
}

} // namespace

void TraceBuilder::check_invariants() const {
  const Trace& t = trace_;
  const std::string& origin = origin_;
  const std::size_t tracks = t.tracks_.size();
  const std::size_t strings = t.strings_.size();

  {
    Violation process(std::string_view("track"), "naming an unknown process");
    Violation device(std::string_view("track"), "naming an unknown device");
    for (std::size_t i = 0; i < tracks; ++i) {
      const TrackInfo& tr = t.tracks_[i];
      if (tr.process != kNoIndex && tr.process >= t.processes_.size()) process.add(i, "process " + std::to_string(tr.process));
      if (tr.device != kNoIndex && tr.device >= t.devices_.size()) device.add(i, "device " + std::to_string(tr.device));
    }
    if (process) process.raise(origin);
    if (device) device.raise(origin);
    Violation device_process(std::string_view("device"), "naming an unknown process");
    for (std::size_t i = 0; i < t.devices_.size(); ++i) {
      const auto p = t.devices_[i].process;
      if (p != kNoIndex && p >= t.processes_.size()) device_process.add(i, "process " + std::to_string(p));
    }
    if (device_process) device_process.raise(origin);
    Violation rank(std::string_view("process"), "with a rank, local rank or world size outside [0, 2^24)");
    Violation offset(std::string_view("process"), "with a clock offset beyond +-2^62 ns");
    Violation host(std::string_view("process"), "with a host name longer than 64 KiB");
    const auto rank_ok = [](std::int64_t v, std::int64_t least) {
      return v == kNoValue || (v >= least && v < limits::kMaxWorldSize);
    };
    for (std::size_t i = 0; i < t.processes_.size(); ++i) {
      const ProcessInfo& p = t.processes_[i];
      if (!rank_ok(p.rank, 0) || !rank_ok(p.local_rank, 0) || !rank_ok(p.world_size, 1)) {
        rank.add(i, "rank " + std::to_string(p.rank) + ", local rank " + std::to_string(p.local_rank) +
                        ", world size " + std::to_string(p.world_size));
      }
      if (!timestamp_in_range(p.clock_offset)) offset.add(i, "offset " + std::to_string(p.clock_offset) + " ns");
      if (p.host.size() > limits::kMaxNameBytes) host.add(i, std::to_string(p.host.size()) + " bytes");
    }
    if (rank) rank.raise(origin);
    if (offset) offset.raise(origin);
    if (host) host.raise(origin);
  }

  // Every track and string column of the event tables names a track and a string that exist:
  // the tracks first, table by table, then the strings.
  auto check_event_ids = [&]<class Encoding>(std::string_view what, std::size_t count) {
    columns::each_record<columns::EventRecords>([&]<class Record>(std::type_identity<Record>) {
      const auto& rows = (t.*columns::Definition<Record>::in)();
      columns::for_each<Record>([&](const auto& c) {
        if constexpr (columns::is<decltype(c), Encoding>) {
          check_ids(columns::Definition<Record>::name, what, rows.*c.rows, count, origin);
        }
      });
    });
  };
  check_event_ids.template operator()<columns::Track>("track", tracks);
  check_event_ids.template operator()<columns::String>("string", strings);
  check_ids("gpu_op", "launch configuration", t.gpu_ops_.launch, t.launch_configs_.size(), origin);

  check_intervals("cuda_api", t.cuda_api_.start, t.cuda_api_.end, origin);
  check_intervals("gpu_op", t.gpu_ops_.start, t.gpu_ops_.end, origin);
  check_intervals("annotation", t.annotations_.start, t.annotations_.end, origin);

  {
    Violation track(std::string_view("flow"), "naming an unknown track");
    Violation kind(std::string_view("flow"), "naming an unknown string");
    Violation time(std::string_view("flow"), "with a timestamp beyond +-2^62 ns");
    for (std::size_t i = 0; i < t.flows_.size(); ++i) {
      const FlowRecord& f = t.flows_[i];
      if (f.from_track >= tracks || f.to_track >= tracks) {
        track.add(i, "tracks " + std::to_string(f.from_track) + " -> " + std::to_string(f.to_track));
      }
      if (f.kind >= strings) kind.add(i, "string " + std::to_string(f.kind));
      if (!timestamp_in_range(f.from_time) || !timestamp_in_range(f.to_time)) {
        time.add(i, "from " + std::to_string(f.from_time) + " ns to " + std::to_string(f.to_time) + " ns");
      }
    }
    if (track) track.raise(origin);
    if (kind) kind.raise(origin);
    if (time) time.raise(origin);
  }
  {
    Violation track(std::string_view("overhead"), "naming an unknown track");
    Violation kind(std::string_view("overhead"), "naming an unknown string");
    std::vector<TimeNs> start, end;
    start.reserve(t.overheads_.size());
    end.reserve(t.overheads_.size());
    for (std::size_t i = 0; i < t.overheads_.size(); ++i) {
      const OverheadRecord& o = t.overheads_[i];
      if (o.track >= tracks) track.add(i, "track " + std::to_string(o.track));
      if (o.kind >= strings) kind.add(i, "string " + std::to_string(o.kind));
      start.push_back(o.start);
      end.push_back(o.end);
    }
    if (track) track.raise(origin);
    if (kind) kind.raise(origin);
    check_intervals("overhead", start, end, origin);
  }
  {
    // Overhead correction scales by these: what it multiplies must be bounded like the
    // calibration costs, and a time the kernel reports is never negative.
    const auto& loads = t.thread_loads_;
    Violation track(std::string_view("thread_load"), "naming an unknown track");
    Violation before_zero(std::string_view("thread_load"), "starting before 0 ns");
    Violation times(std::string_view("thread_load"), "with a CPU or run-queue time outside [0, 2^62] ns");
    Violation counts(std::string_view("thread_load"), "with a negative count of events, timed calls or probe records");
    Violation costs(std::string_view("thread_load"), "with a recording cost that is not a number of ns up to 1e9");
    auto time_ok = [](TimeNs v) { return v == kNoValue || (v >= 0 && v <= limits::kMaxAbsTimestampNs); };
    auto cost_ok = [](double c) { return std::isfinite(c) && c <= limits::kMaxCalibrationCostNs; };
    std::vector<TimeNs> start, end;
    start.reserve(loads.size());
    end.reserve(loads.size());
    for (std::size_t i = 0; i < loads.size(); ++i) {
      const ThreadLoadRecord& l = loads[i];
      if (l.track >= tracks) track.add(i, "track " + std::to_string(l.track));
      if (l.start < 0) before_zero.add(i, interval_text(l.start, l.end));
      if (!time_ok(l.cpu_ns) || !time_ok(l.runqueue_ns)) {
        times.add(i, "cpu_ns " + std::to_string(l.cpu_ns) + ", runqueue_ns " + std::to_string(l.runqueue_ns));
      }
      if (l.events < 0 || l.cost_samples < 0 || l.probe_events < 0) {
        counts.add(i, "events " + std::to_string(l.events) + ", cost_samples " + std::to_string(l.cost_samples) +
                          ", probe_events " + std::to_string(l.probe_events));
      }
      if (!cost_ok(l.range_cost_ns) || !cost_ok(l.mark_cost_ns)) {
        costs.add(i, "range_cost_ns " + std::to_string(l.range_cost_ns) + ", mark_cost_ns " +
                         std::to_string(l.mark_cost_ns));
      }
      start.push_back(l.start);
      end.push_back(l.end);
    }
    if (track) track.raise(origin);
    check_intervals("thread_load", start, end, origin);
    if (before_zero) before_zero.raise(origin);
    if (times) times.raise(origin);
    if (counts) counts.raise(origin);
    if (costs) costs.raise(origin);
  }
  {
    // The memory view sums bytes per operator: bounded, such sums saturate, never overflow.
    const auto& events = t.memory_events_;
    Violation track(std::string_view("memory_event"), "naming an unknown track");
    Violation time(std::string_view("memory_event"), "with a timestamp beyond +-2^62 ns");
    Violation bytes(std::string_view("memory_event"), "with a byte count or total beyond +-2^62");
    auto bytes_ok = [](std::int64_t v) { return v > -limits::kMaxAbsBytes && v < limits::kMaxAbsBytes; };
    for (std::size_t i = 0; i < events.size(); ++i) {
      const MemoryEventRecord& m = events[i];
      if (m.track >= tracks) track.add(i, "track " + std::to_string(m.track));
      if (!timestamp_in_range(m.time)) time.add(i, "time " + std::to_string(m.time) + " ns");
      if (!bytes_ok(m.bytes) || (m.total_allocated != kNoValue && !bytes_ok(m.total_allocated)) ||
          (m.total_reserved != kNoValue && !bytes_ok(m.total_reserved))) {
        bytes.add(i, "bytes " + std::to_string(m.bytes) + ", total_allocated " + std::to_string(m.total_allocated) +
                         ", total_reserved " + std::to_string(m.total_reserved));
      }
    }
    if (track) track.raise(origin);
    if (time) time.raise(origin);
    if (bytes) bytes.raise(origin);
  }
  {
    Violation cost(std::string_view("calibration"), "with a cost that is not a number of ns in [0, 1e9]");
    for (std::size_t i = 0; i < t.calibration_.size(); ++i) {
      const double c = t.calibration_[i].cost_ns;
      if (!std::isfinite(c) || c < 0 || c > limits::kMaxCalibrationCostNs) {
        cost.add(i, t.calibration_[i].event_kind + " " + std::to_string(c) + " ns");
      }
    }
    if (cost) cost.raise(origin);
  }
  // The rules above name each track and string column of these tables; a column added to one
  // since is held to the same.
  columns::each_record<columns::RowRecords>([&]<class Record>(std::type_identity<Record>) {
    const std::vector<Record>& rows = (t.*columns::Definition<Record>::in)();
    columns::for_each<Record>([&](const auto& c) {
      constexpr bool track = columns::is<decltype(c), columns::Track>;
      if constexpr (track || columns::is<decltype(c), columns::String>) {
        Violation unknown(columns::Definition<Record>::name,
                          track ? "naming an unknown track" : "naming an unknown string");
        for (std::size_t i = 0; i < rows.size(); ++i) {
          const std::uint32_t id = rows[i].*c.member;
          if (id >= (track ? tracks : strings)) unknown.add(i, std::string(c.name) + " " + std::to_string(id));
        }
        if (unknown) unknown.raise(origin);
      }
    });
  });

  for (std::size_t table = 0; table < 3; ++table) {
    const char* name = table == 0 ? "cuda_api arg" : table == 1 ? "gpu_op arg" : "annotation arg";
    const std::size_t rows = table == 0 ? t.cuda_api_.size() : table == 1 ? t.gpu_ops_.size() : t.annotations_.size();
    Violation row(name, "naming an unknown event row");
    Violation string(name, "naming an unknown string");
    const auto& column = t.args_[table];
    for (std::size_t i = 0; i < column.row.size(); ++i) {
      if (column.row[i] >= rows) row.add(i, "event row " + std::to_string(column.row[i]));
      const EventArg& a = column.arg[i];
      const bool text = a.type == ArgType::String || a.type == ArgType::Json;
      if (a.key >= strings || (text && a.text >= strings)) string.add(i, "key string " + std::to_string(a.key));
    }
    if (row) row.raise(origin);
    if (string) string.raise(origin);
  }

  // Only names of events are bounded: args may carry long JSON (input shapes, stacks).
  auto check_name_lengths = [&](std::string_view table, const std::vector<StringId>& names) {
    Violation long_name(table, "with a name longer than 64 KiB");
    for (std::size_t i = 0; i < names.size(); ++i) {
      const std::string& s = t.strings_[names[i]];
      if (s.size() > limits::kMaxNameBytes) long_name.add(i, "a name of " + std::to_string(s.size()) + " bytes");
    }
    if (long_name) long_name.raise(origin);
  };
  check_name_lengths("cuda_api", t.cuda_api_.name);
  check_name_lengths("gpu_op", t.gpu_ops_.name);
  check_name_lengths("annotation", t.annotations_.name);
}

void TraceBuilder::repair_strings() {
  auto repair = [](std::string& s) {
    if (!limits::is_valid_utf8(s)) s = limits::repair_utf8(s);
  };
  for (std::string& s : trace_.strings_) repair(s);
  for (auto& [key, value] : trace_.meta_) repair(value);
  auto repair_text = [&]<class Record>(std::vector<Record>& rows) {
    for (Record& r : rows) {
      columns::for_each<Record>([&](const auto& c) {
        if constexpr (columns::is<decltype(c), columns::Text>) repair(r.*c.member);
      });
    }
  };
  repair_text(trace_.processes_);
  repair_text(trace_.devices_);
  repair_text(trace_.tracks_);
  repair_text(trace_.calibration_);
}

} // namespace dreamscope
