#include "dreamscope/storage/trace.h"

#include "dreamscope/storage/columns.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <numeric>
#include <stdexcept>
#include <sys/mman.h>
#include <tuple>

namespace dreamscope {

std::string_view to_string(TraceSource s) {
  switch (s) {
    case TraceSource::Tracer: return "tracer";
    case TraceSource::Kineto: return "kineto";
    case TraceSource::Nsys: return "nsys";
    case TraceSource::Simulator: return "simulator";
  }
  return "unknown";
}

std::optional<TraceSource> trace_source_from_string(std::string_view s) {
  for (auto src : {TraceSource::Tracer, TraceSource::Kineto, TraceSource::Nsys, TraceSource::Simulator}) {
    if (to_string(src) == s) return src;
  }
  return std::nullopt;
}

std::string_view to_string(GpuOpKind k) {
  switch (k) {
    case GpuOpKind::Kernel: return "kernel";
    case GpuOpKind::Memcpy: return "memcpy";
    case GpuOpKind::Memset: return "memset";
    case GpuOpKind::Sync: return "sync";
  }
  return "unknown";
}

std::string_view to_string(CopyKind k) {
  switch (k) {
    case CopyKind::Unknown: return "unknown";
    case CopyKind::HtoD: return "HtoD";
    case CopyKind::DtoH: return "DtoH";
    case CopyKind::HtoA: return "HtoA";
    case CopyKind::AtoH: return "AtoH";
    case CopyKind::AtoA: return "AtoA";
    case CopyKind::AtoD: return "AtoD";
    case CopyKind::DtoA: return "DtoA";
    case CopyKind::DtoD: return "DtoD";
    case CopyKind::HtoH: return "HtoH";
    case CopyKind::PtoP: return "PtoP";
  }
  return "unknown";
}

std::string_view to_string(SyncKind k) {
  switch (k) {
    case SyncKind::Unknown: return "unknown";
    case SyncKind::EventSynchronize: return "event_synchronize";
    case SyncKind::StreamWaitEvent: return "stream_wait_event";
    case SyncKind::StreamSynchronize: return "stream_synchronize";
    case SyncKind::ContextSynchronize: return "context_synchronize";
  }
  return "unknown";
}

std::string_view to_string(EventTable t) {
  switch (t) {
    case EventTable::CudaApi: return "cuda_api";
    case EventTable::GpuOp: return "gpu_op";
    case EventTable::Annotation: return "annotation";
  }
  return "unknown";
}

namespace {

// The columnar tables' column work, over the columns their definitions list (columns.h). A GPU
// op's launch configuration is the one column held otherwise than as its record holds it: an
// index into Trace::launch_configs(), which the builder interns.

// Row `i` of a table, with its launch configuration (if it has one) from `launch_configs`.
template <class Record, class Rows>
Record row_of(const Rows& rows, std::size_t i, const std::vector<LaunchConfig>* launch_configs = nullptr) {
  Record r;
  columns::for_each<Record>([&](const auto& c) {
    if constexpr (columns::is<decltype(c), columns::Launch>) {
      const std::uint32_t launch = (rows.*c.rows)[i];
      if (launch != 0 && launch < launch_configs->size()) r.*c.member = (*launch_configs)[launch];
    } else {
      r.*c.member = (rows.*c.rows)[i];
    }
  });
  return r;
}

// Appends a row; a GPU op's launch configuration as `launch`, the index intern_launch() gave it.
template <class Record, class Rows>
typename columns::Definition<Record>::Index add_row(Rows& rows, const Record& r, std::uint32_t launch = 0) {
  columns::for_each<Record>([&](const auto& c) {
    if constexpr (columns::is<decltype(c), columns::Launch>) {
      (rows.*c.rows).push_back(launch);
    } else {
      (rows.*c.rows).push_back(r.*c.member);
    }
  });
  return typename columns::Definition<Record>::Index{rows.size() - 1};
}

} // namespace

CudaApiRecord CudaApiTable::row(CudaApiIndex i) const { return row_of<CudaApiRecord>(*this, i); }

GpuOpRecord GpuOpTable::row(GpuOpIndex i, const std::vector<LaunchConfig>& launch_configs) const {
  return row_of<GpuOpRecord>(*this, i, &launch_configs);
}

AnnotationRecord AnnotationTable::row(AnnotationIndex i) const { return row_of<AnnotationRecord>(*this, i); }

Trace::Trace() : strings_{std::string()} {}

std::string Trace::meta_value(const std::string& key, std::string fallback) const {
  auto it = meta_.find(key);
  return it == meta_.end() ? std::move(fallback) : it->second;
}

std::int64_t Trace::cpu_cores() const {
  const std::string text = meta_value("cpu_cores");
  std::int64_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  const bool whole = ec == std::errc() && end == text.data() + text.size();
  return whole && n > 0 && n <= (std::int64_t{1} << 20) ? n : 0;
}

std::optional<StringId> Trace::find_string(std::string_view s) const {
  auto it = std::lower_bound(strings_sorted_.begin(), strings_sorted_.end(), s,
                             [&](StringId id, std::string_view v) { return strings_[id] < v; });
  if (it != strings_sorted_.end() && strings_[*it] == s) return *it;
  return std::nullopt;
}

namespace {

// Rows of `range` whose start is in [from - max_dur, to).
template <class Index>
EventRange<Index> window(const std::vector<TimeNs>& start, EventRange<Index> range, TimeNs max_dur, TimeNs from,
                         TimeNs to) {
  auto first = start.begin() + range.begin;
  auto last = start.begin() + range.end;
  auto lo = std::lower_bound(first, last, from - max_dur);
  auto hi = std::lower_bound(lo, last, to);
  return {Index{lo - start.begin()}, Index{hi - start.begin()}};
}

// Room for `n` rows in one column, backed by transparent huge pages where the kernel has them
// for the asking (THP "madvise", Debian's and Ubuntu's default; "always" needs no advice). A
// column of a large trace is tens of MB written once from front to back: in 4 KiB pages its
// first touch faulted 150 k times for 10 M events, a quarter of reading a trace.db
// (storage_bench --benchmark_filter=BM_LoadTrace, under perf); in 2 MiB pages, 512 times
// fewer. Only whole huge pages inside the buffer are advised, so nothing beyond it changes,
// and the advice is a hint: where it is refused, the pages are the ordinary ones.
template <typename T>
void reserve_column(std::vector<T>& column, std::size_t n) {
  column.reserve(n);
  constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;
  const auto begin = reinterpret_cast<std::uintptr_t>(column.data());
  const std::uintptr_t first = (begin + kHugePage - 1) & ~(kHugePage - 1);
  const std::uintptr_t last = (begin + column.capacity() * sizeof(T)) & ~(kHugePage - 1);
#ifdef MADV_HUGEPAGE
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
#else
  (void)first;
  (void)last;
#endif
}

// `n` copies of `value` in a derived column, in such pages.
template <typename T>
void assign_column(std::vector<T>& column, std::size_t n, T value) {
  reserve_column(column, n);
  column.assign(n, value);
}

// A stable sort that takes the ascending runs the input already has: rows that arrive a track
// at a time in time order (a trace.db's, most importers') are a few runs, merged in n log(runs)
// rather than n log n. Input with many short runs goes to std::stable_sort.
template <typename T, typename Less>
void stable_sort_runs(std::vector<T>& v, Less less) {
  const std::size_t most_runs = v.size() / 64 + 1;
  std::vector<std::size_t> bounds{0};
  for (std::size_t i = 1; i < v.size(); ++i) {
    if (!less(v[i], v[i - 1])) continue;
    if (bounds.size() == most_runs) {
      std::stable_sort(v.begin(), v.end(), less);
      return;
    }
    bounds.push_back(i);
  }
  bounds.push_back(v.size());
  if (bounds.size() <= 2) return;
  std::vector<T> merged(v.size());
  while (bounds.size() > 2) {
    std::vector<std::size_t> next{0};
    std::size_t k = 0;
    for (; k + 2 < bounds.size(); k += 2) {
      std::merge(v.begin() + bounds[k], v.begin() + bounds[k + 1], v.begin() + bounds[k + 1],
                 v.begin() + bounds[k + 2], merged.begin() + bounds[k], less);
      next.push_back(bounds[k + 2]);
    }
    if (k + 1 < bounds.size()) {
      std::copy(v.begin() + bounds[k], v.begin() + bounds[k + 1], merged.begin() + bounds[k]);
      next.push_back(bounds[k + 1]);
    }
    v.swap(merged);
    bounds.swap(next);
  }
}

// The sort's helpers below work on any table's rows alike: their rows are plain row numbers.
template <typename T>
void permute(std::vector<T>& v, const std::vector<std::uint32_t>& order) {
  std::vector<T> out;
  out.reserve(v.size());
  for (std::uint32_t i : order) out.push_back(v[i]);
  v.swap(out);
}

template <typename T>
std::size_t bytes_of(const std::vector<T>& v) { return v.capacity() * sizeof(T); }

// The bytes of a columnar table's columns.
template <class Record, class Rows>
std::size_t column_bytes(const Rows& rows) {
  std::size_t n = 0;
  columns::for_each<Record>([&](const auto& c) { n += bytes_of(rows.*c.rows); });
  return n;
}

// Room for `n` rows in each column of a columnar table.
template <class Record, class Rows>
void reserve_rows(Rows& rows, std::size_t n) {
  columns::for_each<Record>([&](const auto& c) { reserve_column(rows.*c.rows, n); });
}

// The row order every table keeps: by track, then start, then longer first (so that an
// enclosing range precedes what it encloses).
std::vector<std::uint32_t> sort_order(const std::vector<TrackId>& track, const std::vector<TimeNs>& start,
                                      const std::vector<TimeNs>& end, bool& already_sorted) {
  auto less = [&](std::uint32_t a, std::uint32_t b) {
    if (track[a] != track[b]) return track[a] < track[b];
    if (start[a] != start[b]) return start[a] < start[b];
    return end[a] > end[b];
  };
  already_sorted = true;
  for (std::size_t i = 1; i < start.size(); ++i) {
    if (less(static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(i - 1))) {
      already_sorted = false;
      break;
    }
  }
  std::vector<std::uint32_t> order;
  if (already_sorted) return order;
  order.resize(start.size());
  std::iota(order.begin(), order.end(), 0);
  stable_sort_runs(order, less);
  return order;
}

// Rows of the args side table follow their events through the sort: `order[new] = old`.
void remap_args(std::vector<std::uint32_t>& arg_rows, const std::vector<std::uint32_t>& order, bool already_sorted) {
  if (already_sorted || arg_rows.empty()) return;
  std::vector<std::uint32_t> new_index(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) new_index[order[i]] = static_cast<std::uint32_t>(i);
  for (std::uint32_t& r : arg_rows) r = new_index[r];
}

// By row, keeping each event's args in the order they were added.
void sort_args(std::vector<std::uint32_t>& rows, std::vector<EventArg>& args) {
  if (std::is_sorted(rows.begin(), rows.end())) return;
  std::vector<std::uint32_t> order(rows.size());
  std::iota(order.begin(), order.end(), 0);
  stable_sort_runs(order, [&](std::uint32_t a, std::uint32_t b) { return rows[a] < rows[b]; });
  permute(rows, order);
  permute(args, order);
}

template <class Index>
void compute_ranges(const std::vector<TrackId>& track, const std::vector<TimeNs>& start, const std::vector<TimeNs>& end,
                    std::size_t track_count, std::vector<EventRange<Index>>& ranges, std::vector<TimeNs>& max_dur) {
  ranges.assign(track_count, EventRange<Index>{});
  max_dur.assign(track_count, 0);
  std::size_t i = 0;
  while (i < track.size()) {
    TrackId t = track[i];
    std::size_t j = i;
    TimeNs longest = 0;
    while (j < track.size() && track[j] == t) {
      longest = std::max(longest, end[j] - start[j]);
      ++j;
    }
    ranges[t] = {Index{i}, Index{j}};
    max_dur[t] = longest;
    i = j;
  }
}

} // namespace

CudaApiRange Trace::cuda_api_in(TrackId t, TimeNs from, TimeNs to) const {
  return window(cuda_api_.start, cuda_api_ranges_[t], cuda_api_max_dur_[t], from, to);
}
GpuOpRange Trace::gpu_ops_in(TrackId t, TimeNs from, TimeNs to) const {
  return window(gpu_ops_.start, gpu_op_ranges_[t], gpu_op_max_dur_[t], from, to);
}
AnnotationRange Trace::annotations_in(TrackId t, TimeNs from, TimeNs to) const {
  return window(annotations_.start, annotation_ranges_[t], annotation_max_dur_[t], from, to);
}

std::vector<AnnotationIndex> Trace::annotation_children(AnnotationIndex a) const {
  std::vector<AnnotationIndex> out;
  const AnnotationRange track = annotation_ranges_[annotations_.track[a]];
  for (AnnotationIndex i{a + 1}; i < track.end && annotations_.start[i] < annotations_.end[a]; ++i) {
    if (annotations_.parent[i] == a) out.push_back(i);
  }
  return out;
}

std::optional<AnnotationIndex> Trace::innermost_annotation_at(TrackId t, TimeNs time) const {
  // Every range open at `time` starts at or before the last range to start by then, and so
  // (nesting being what build() derived) encloses it: the answer is on that range's chain of
  // ancestors, the first one whose end is past `time`.
  const AnnotationRange r = annotation_ranges_[t];
  const auto& start = annotations_.start;
  const auto& end = annotations_.end;
  const auto last = std::upper_bound(start.begin() + r.begin, start.begin() + r.end, time);
  if (last == start.begin() + r.begin) return std::nullopt;
  AnnotationIndex a{last - start.begin() - 1};
  while (end[a] <= time) {
    const AnnotationIndex jump = annotation_jump_[a];
    if (jump != kNoIndex && end[jump] <= time) {
      a = jump;
    } else if (annotations_.parent[a] != kNoIndex) {
      a = annotations_.parent[a];
    } else {
      return std::nullopt;
    }
  }
  return a;
}

std::vector<GpuOpIndex> Trace::gpu_ops_with_correlation(std::int64_t correlation) const {
  std::vector<GpuOpIndex> out;
  const auto& corr = gpu_ops_.correlation;
  auto it = std::lower_bound(gpu_by_correlation_.begin(), gpu_by_correlation_.end(), correlation,
                             [&](GpuOpIndex row, std::int64_t c) { return corr[row] < c; });
  for (; it != gpu_by_correlation_.end() && corr[*it] == correlation; ++it) out.push_back(*it);
  return out;
}

std::optional<CudaApiIndex> Trace::cuda_api_with_correlation(std::int64_t correlation) const {
  const auto& corr = cuda_api_.correlation;
  auto it = std::lower_bound(api_by_correlation_.begin(), api_by_correlation_.end(), correlation,
                             [&](CudaApiIndex row, std::int64_t c) { return corr[row] < c; });
  if (it != api_by_correlation_.end() && corr[*it] == correlation) return *it;
  return std::nullopt;
}

std::span<const EventArg> Trace::args_of(EventRow row) const {
  const ArgColumn& c = args_[static_cast<std::size_t>(row.table)];
  auto [lo, hi] = std::equal_range(c.row.begin(), c.row.end(), row.row);
  return {c.arg.data() + (lo - c.row.begin()), static_cast<std::size_t>(hi - lo)};
}

const EventArg* Trace::find_arg(EventRow row, std::string_view key) const {
  auto id = find_string(key);
  if (!id) return nullptr;
  for (const EventArg& a : args_of(row)) {
    if (a.key == *id) return &a;
  }
  return nullptr;
}

std::optional<std::int64_t> Trace::arg_int(EventRow row, std::string_view key) const {
  const EventArg* a = find_arg(row, key);
  if (!a) return std::nullopt;
  if (a->type == ArgType::Int) return a->int_value;
  if (a->type == ArgType::Double) return static_cast<std::int64_t>(a->double_value);
  return std::nullopt;
}

std::optional<std::string> Trace::arg_text(EventRow row, std::string_view key) const {
  const EventArg* a = find_arg(row, key);
  if (!a) return std::nullopt;
  switch (a->type) {
    case ArgType::Int: return std::to_string(a->int_value);
    case ArgType::Double: {
      char buf[32];
      auto n = std::snprintf(buf, sizeof buf, "%.17g", a->double_value);
      return std::string(buf, static_cast<std::size_t>(n));
    }
    case ArgType::String:
    case ArgType::Json: return std::string(str(a->text));
  }
  return std::nullopt;
}

std::size_t Trace::arg_count() const {
  return args_[0].arg.size() + args_[1].arg.size() + args_[2].arg.size();
}

std::size_t Trace::memory_bytes() const {
  std::size_t n = 0;
  for (const auto& s : strings_) n += sizeof(std::string) + (s.size() > 15 ? s.capacity() : 0);
  n += bytes_of(strings_sorted_);
  n += column_bytes<CudaApiRecord>(cuda_api_) + column_bytes<GpuOpRecord>(gpu_ops_) +
       column_bytes<AnnotationRecord>(annotations_);
  n += bytes_of(annotations_.parent) + bytes_of(annotations_.depth) + bytes_of(annotation_jump_);
  n += bytes_of(flows_) + bytes_of(overheads_) + bytes_of(thread_loads_) + bytes_of(memory_events_) +
       bytes_of(launch_configs_);
  for (const auto& c : args_) n += bytes_of(c.row) + bytes_of(c.arg);
  n += bytes_of(gpu_by_correlation_) + bytes_of(api_by_correlation_);
  n += bytes_of(cuda_api_ranges_) + bytes_of(gpu_op_ranges_) + bytes_of(annotation_ranges_);
  n += bytes_of(cuda_api_max_dur_) + bytes_of(gpu_op_max_dur_) + bytes_of(annotation_max_dur_);
  return n;
}

// --- TraceBuilder ---------------------------------------------------------------------

TraceBuilder::TraceBuilder() {
  string_hashes_.push_back(std::hash<std::string_view>{}(std::string_view()));
  grow_string_slots();
  trace_.launch_configs_.push_back(LaunchConfig{}); // index 0: no launch configuration
}

StringId TraceBuilder::intern(std::string_view s) {
  const std::uint64_t hash = std::hash<std::string_view>{}(s);
  const std::size_t mask = string_slots_.size() - 1;
  for (std::size_t i = hash & mask;; i = (i + 1) & mask) {
    const StringId slot = string_slots_[i];
    if (slot == 0) break;
    const StringId id = slot - 1;
    if (string_hashes_[id] == hash && trace_.strings_[id] == s) return id;
  }
  const auto id = static_cast<StringId>(trace_.strings_.size());
  trace_.strings_.emplace_back(s);
  string_hashes_.push_back(hash);
  // At most half the slots full: the probes stay short.
  if (2 * trace_.strings_.size() > string_slots_.size()) {
    grow_string_slots();
  } else {
    for (std::size_t i = hash & mask;; i = (i + 1) & mask) {
      if (string_slots_[i] == 0) {
        string_slots_[i] = id + 1;
        break;
      }
    }
  }
  return id;
}

// Doubles the slots (1024 at first) and places every string again.
void TraceBuilder::grow_string_slots() {
  string_slots_.assign(std::max<std::size_t>(1024, 2 * string_slots_.size()), 0);
  const std::size_t mask = string_slots_.size() - 1;
  for (std::size_t id = 0; id < string_hashes_.size(); ++id) {
    std::size_t i = string_hashes_[id] & mask;
    while (string_slots_[i] != 0) i = (i + 1) & mask;
    string_slots_[i] = static_cast<StringId>(id + 1);
  }
}

void TraceBuilder::set_meta(const std::string& key, std::string value) { trace_.meta_[key] = std::move(value); }

void TraceBuilder::add_summarized(TimeNs start, TimeNs end) {
  summarized_start_ = summarized_ == 0 ? start : std::min(summarized_start_, start);
  summarized_end_ = summarized_ == 0 ? end : std::max(summarized_end_, end);
  ++summarized_;
}

std::int64_t summarized_event_count(const Trace& trace) {
  const std::string value = trace.meta_value("import_events_summarized");
  std::int64_t n = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  return ec == std::errc() && end == value.data() + value.size() && n > 0 ? n : 0;
}

void TraceBuilder::set_source(TraceSource s) {
  trace_.source_ = s;
  trace_.meta_["source"] = std::string(to_string(s));
}

ProcessId TraceBuilder::add_process(ProcessInfo p) {
  trace_.processes_.push_back(std::move(p));
  return ProcessId{trace_.processes_.size() - 1};
}

DeviceId TraceBuilder::add_device(DeviceInfo d) {
  trace_.devices_.push_back(std::move(d));
  return DeviceId{trace_.devices_.size() - 1};
}

TrackId TraceBuilder::add_track(TrackInfo t) {
  const TrackId id{trace_.tracks_.size()};
  if (t.kind == TrackKind::CpuThread) {
    thread_tracks_.emplace(std::pair{t.process, t.tid}, id);
  } else {
    stream_tracks_.emplace(std::pair{t.device, t.stream}, id);
  }
  trace_.tracks_.push_back(std::move(t));
  return id;
}

TrackId TraceBuilder::thread_track(ProcessId process, std::int64_t tid, std::string_view name) {
  auto it = thread_tracks_.find({process, tid});
  if (it != thread_tracks_.end()) return it->second;
  TrackInfo t;
  t.kind = TrackKind::CpuThread;
  t.process = process;
  t.tid = tid;
  t.name = std::string(name);
  return add_track(std::move(t));
}

TrackId TraceBuilder::stream_track(DeviceId device, std::int64_t stream, std::string_view name) {
  auto it = stream_tracks_.find({device, stream});
  if (it != stream_tracks_.end()) return it->second;
  TrackInfo t;
  t.kind = TrackKind::GpuStream;
  t.device = device;
  t.stream = stream;
  t.name = std::string(name);
  return add_track(std::move(t));
}

void TraceBuilder::reserve(std::size_t api, std::size_t gpu_ops, std::size_t annotations, std::size_t args) {
  for (auto& c : trace_.args_) {
    reserve_column(c.row, args);
    reserve_column(c.arg, args);
  }
  reserve_rows<CudaApiRecord>(trace_.cuda_api_, api);
  reserve_rows<GpuOpRecord>(trace_.gpu_ops_, gpu_ops);
  reserve_rows<AnnotationRecord>(trace_.annotations_, annotations);
}

CudaApiIndex TraceBuilder::add(const CudaApiRecord& r) { return add_row(trace_.cuda_api_, r); }

std::size_t TraceBuilder::LaunchHash::operator()(const LaunchConfig& c) const noexcept {
  std::uint64_t h = 0x9E3779B97F4A7C15ull;
  columns::for_each_field(c, [&](std::int32_t v, const char*) {
    h = (h ^ static_cast<std::uint32_t>(v)) * 0x100000001B3ull;
    h ^= h >> 29;
  });
  return static_cast<std::size_t>(h);
}

std::uint32_t TraceBuilder::intern_launch(const LaunchConfig& c) {
  if (c == LaunchConfig{}) return 0;
  if (last_launch_id_ != 0 && c == last_launch_) return last_launch_id_;
  auto [it, inserted] = launch_ids_.emplace(c, static_cast<std::uint32_t>(trace_.launch_configs_.size()));
  if (inserted) trace_.launch_configs_.push_back(c);
  last_launch_ = c;
  last_launch_id_ = it->second;
  return it->second;
}

GpuOpIndex TraceBuilder::add(const GpuOpRecord& r) { return add(r, intern_launch(r.launch)); }

GpuOpIndex TraceBuilder::add(const GpuOpRecord& r, std::uint32_t launch) { return add_row(trace_.gpu_ops_, r, launch); }

AnnotationIndex TraceBuilder::add(const AnnotationRecord& r) { return add_row(trace_.annotations_, r); }

std::size_t TraceBuilder::row_count(EventTable table) const {
  switch (table) {
    case EventTable::CudaApi: return trace_.cuda_api_.size();
    case EventTable::GpuOp: return trace_.gpu_ops_.size();
    case EventTable::Annotation: return trace_.annotations_.size();
  }
  return 0;
}

void TraceBuilder::add_arg(EventRow row, const EventArg& arg) {
  auto& c = trace_.args_[static_cast<std::size_t>(row.table)];
  c.row.push_back(row.row);
  c.arg.push_back(arg);
}

void TraceBuilder::add_arg(EventRow row, std::string_view key, std::int64_t value) {
  add_arg(row, EventArg{.key = intern(key), .type = ArgType::Int, .int_value = value});
}

void TraceBuilder::add_arg(EventRow row, std::string_view key, std::string_view text) {
  add_arg(row, EventArg{.key = intern(key), .type = ArgType::String, .text = intern(text)});
}

void TraceBuilder::set_call_targets(std::vector<CallTarget> targets) {
  if (targets.empty()) return;
  auto by_correlation = [](const CallTarget& a, const CallTarget& b) { return a.correlation < b.correlation; };
  std::sort(targets.begin(), targets.end(), by_correlation);
  auto& a = trace_.cuda_api_;
  for (std::size_t row = 0; row < a.size(); ++row) {
    if (a.correlation[row] == kNoValue) continue;
    auto [lo, hi] = std::equal_range(targets.begin(), targets.end(), CallTarget{.correlation = a.correlation[row]},
                                     by_correlation);
    for (auto it = lo; it != hi; ++it) {
      if (a.stream[row] == kNoValue) a.stream[row] = it->stream;
      if (a.event[row] == kNoValue) a.event[row] = it->event;
    }
  }
}

Trace TraceBuilder::build() && {
  check_invariants();
  repair_strings();
  Trace& t = trace_;
  const std::size_t tracks = t.tracks_.size();

  // Each event table into (track, start, longer first) order, its args following their rows.
  auto sort_rows = [&]<class Record>(std::type_identity<Record>, auto& rows) {
    bool sorted = false;
    auto order = sort_order(rows.track, rows.start, rows.end, sorted);
    remap_args(t.args_[static_cast<std::size_t>(columns::Definition<Record>::table)].row, order, sorted);
    if (!sorted) columns::for_each<Record>([&](const auto& c) { permute(rows.*c.rows, order); });
  };
  sort_rows(std::type_identity<CudaApiRecord>{}, t.cuda_api_);
  sort_rows(std::type_identity<GpuOpRecord>{}, t.gpu_ops_);
  sort_rows(std::type_identity<AnnotationRecord>{}, t.annotations_);

  compute_ranges(t.cuda_api_.track, t.cuda_api_.start, t.cuda_api_.end, tracks, t.cuda_api_ranges_, t.cuda_api_max_dur_);
  compute_ranges(t.gpu_ops_.track, t.gpu_ops_.start, t.gpu_ops_.end, tracks, t.gpu_op_ranges_, t.gpu_op_max_dur_);
  compute_ranges(t.annotations_.track, t.annotations_.start, t.annotations_.end, tracks, t.annotation_ranges_,
                 t.annotation_max_dur_);

  // Nesting: a range's parent is the innermost earlier range on its track that contains it.
  {
    auto& n = t.annotations_;
    assign_column<AnnotationIndex>(n.parent, n.size(), kNoIndex);
    assign_column<std::uint16_t>(n.depth, n.size(), 0);
    std::vector<AnnotationIndex> stack;
    for (TrackId tr{0}; tr < tracks; ++tr) {
      stack.clear();
      const AnnotationRange r = t.annotation_ranges_[tr];
      for (AnnotationIndex i = r.begin; i < r.end; ++i) {
        while (!stack.empty() && n.end[stack.back()] <= n.start[i]) stack.pop_back();
        while (!stack.empty() && n.end[stack.back()] < n.end[i]) stack.pop_back();
        if (!stack.empty()) {
          n.parent[i] = stack.back();
          n.depth[i] = static_cast<std::uint16_t>(std::min<std::size_t>(stack.size(), UINT16_MAX));
        }
        stack.push_back(i);
      }
    }
    // Skew-binary jump pointers (Myers 1983): a node jumps twice as far as its parent's jump
    // when its parent's two jumps span equal distances, else to its parent. Parents come
    // before children in row order, so one pass fills them. Depth here is the chain length
    // itself, not the clamped 16-bit one.
    assign_column<AnnotationIndex>(t.annotation_jump_, n.size(), kNoIndex);
    std::vector<std::uint32_t> chain_depth;
    assign_column<std::uint32_t>(chain_depth, n.size(), 0);
    for (AnnotationIndex i{0}; i < n.size(); ++i) {
      const AnnotationIndex p = n.parent[i];
      if (p == kNoIndex) continue;
      chain_depth[i] = chain_depth[p] + 1;
      const AnnotationIndex pj = t.annotation_jump_[p];
      const AnnotationIndex pjj = pj == kNoIndex ? AnnotationIndex{kNoIndex} : t.annotation_jump_[pj];
      const bool equal_spans = pj != kNoIndex && pjj != kNoIndex &&
                               chain_depth[p] - chain_depth[pj] == chain_depth[pj] - chain_depth[pjj];
      t.annotation_jump_[i] = equal_spans ? pjj : p;
    }
  }

  for (auto& c : t.args_) sort_args(c.row, c.arg);

  auto index_by_correlation = []<class Index>(const std::vector<std::int64_t>& corr, std::vector<Index>& index) {
    index.clear();
    reserve_column(index, corr.size());
    for (Index i{0}; i < corr.size(); ++i) {
      if (corr[i] != kNoValue) index.push_back(i);
    }
    // Correlation ids grow with time on each track, so the rows are a run a track.
    stable_sort_runs(index, [&](Index a, Index b) { return corr[a] < corr[b]; });
    index.shrink_to_fit();
  };
  index_by_correlation(t.gpu_ops_.correlation, t.gpu_by_correlation_);
  index_by_correlation(t.cuda_api_.correlation, t.api_by_correlation_);

  bool any = false;
  TimeNs lo = 0, hi = 0;
  auto extend = [&](const std::vector<TimeNs>& start, const std::vector<TimeNs>& end) {
    for (std::size_t i = 0; i < start.size(); ++i) {
      if (!any) { lo = start[i]; hi = end[i]; any = true; }
      lo = std::min(lo, start[i]);
      hi = std::max(hi, end[i]);
    }
  };
  extend(t.cuda_api_.start, t.cuda_api_.end);
  extend(t.gpu_ops_.start, t.gpu_ops_.end);
  extend(t.annotations_.start, t.annotations_.end);
  if (summarized_ > 0) {
    lo = any ? std::min(lo, summarized_start_) : summarized_start_;
    hi = any ? std::max(hi, summarized_end_) : summarized_end_;
    t.meta_["import_events_summarized"] = std::to_string(summarized_);
  }
  t.begin_time_ = lo;
  t.end_time_ = hi;

  std::sort(t.calibration_.begin(), t.calibration_.end(),
            [](const auto& x, const auto& y) { return x.event_kind < y.event_kind; });
  // Stable: windows of one thread that start together keep the order they were added in.
  std::stable_sort(t.thread_loads_.begin(), t.thread_loads_.end(), [](const auto& x, const auto& y) {
    return std::tie(x.track, x.start) < std::tie(y.track, y.start);
  });
  // Stable too: at one time, the order the profiler wrote them (an allocation and the release
  // of the same address within a microsecond) is the order that pairs them.
  std::stable_sort(t.memory_events_.begin(), t.memory_events_.end(),
                   [](const auto& x, const auto& y) { return x.time < y.time; });

  t.strings_sorted_.resize(t.strings_.size());
  std::iota(t.strings_sorted_.begin(), t.strings_sorted_.end(), 0);
  std::sort(t.strings_sorted_.begin(), t.strings_sorted_.end(),
            [&](StringId a, StringId b) { return t.strings_[a] < t.strings_[b]; });

  if (auto src = trace_source_from_string(t.meta_value("source"))) t.source_ = *src;
  t.complete_ = t.meta_value("complete", "0") == "1";
  auto meta_integer = [&](const char* key, std::int64_t fallback) -> std::int64_t {
    try {
      const std::string v = t.meta_value(key);
      return v.empty() ? fallback : std::stoll(v);
    } catch (const std::exception&) {
      return fallback;
    }
  };
  t.dropped_events_ = meta_integer("dropped_events", 0);
  t.tracer_writer_cpu_ns_ = meta_integer("tracer_writer_cpu_ns", kNoValue);

  string_slots_ = {};
  string_hashes_ = {};
  launch_ids_.clear();
  last_launch_id_ = 0;
  return std::move(trace_);
}

} // namespace dreamscope
