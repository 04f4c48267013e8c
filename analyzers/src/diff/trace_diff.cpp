// The diff of two traces: steps matched, every event counted into the step it belongs to
// (HTA's rules), then one row per name and subject, compared in time per step.
#include "dreamscope/analyzers/trace_diff.h"

#include <dreamscope/storage/job.h>
#include <dreamscope/storage/kernel_classes.h>
#include <dreamscope/storage/steps.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>
#include <unordered_map>

namespace dreamscope::analyzers {

std::string_view to_string(DiffSubject s) {
  switch (s) {
    case DiffSubject::Operation: return "operation";
    case DiffSubject::GpuWork: return "gpu";
    case DiffSubject::CudaApi: return "cuda_api";
  }
  return "?";
}

std::string_view to_string(DiffChange c) {
  switch (c) {
    case DiffChange::Slower: return "slower";
    case DiffChange::Faster: return "faster";
    case DiffChange::Appeared: return "appeared";
    case DiffChange::Vanished: return "vanished";
    case DiffChange::Unchanged: return "unchanged";
  }
  return "?";
}

namespace {

// The one step of a trace compared whole.
constexpr std::int64_t kWholeTraceKey = 0;
// The name id of a step's own time, outside every operation in it.
constexpr StringId kOutsideOperations = std::numeric_limits<StringId>::max();
constexpr std::string_view kOutsideOperationsName = "(in the step, outside any operation)";

struct Span {
  TimeNs start = std::numeric_limits<TimeNs>::max();
  TimeNs end = std::numeric_limits<TimeNs>::min();
  void add(TimeNs s, TimeNs e) {
    start = std::min(start, s);
    end = std::max(end, e);
  }
  bool empty() const { return start > end; }
  TimeNs duration() const { return empty() ? 0 : end - start; }
};

struct StepRow {
  std::int64_t rank = kNoValue;
  std::int64_t number = kNoValue;
  std::int64_t key = kNoValue;
  TimeNs start = 0, end = 0;
  std::string label;
};

// What one subject of one name added up to in one trace (or one rank of it).
struct Tally {
  std::int64_t count = 0;
  TimeNs total = 0, self = 0;
  bool communication = false, sync_wait = false;
};
using TallyKey = std::uint64_t; // subject << 32 | name id
using Tallies = std::unordered_map<TallyKey, Tally>;

TallyKey tally_key(DiffSubject s, StringId name) {
  return (static_cast<std::uint64_t>(s) << 32) | name;
}

bool is_communication_annotation(std::string_view name, std::string_view category) {
  return category == annotation_category::kCollective || name.starts_with("nccl:") || name.starts_with("gloo:") ||
         name.starts_with("c10d::") || name == "record_param_comms";
}

// A CUDA (or HIP, or driver) call that returns only once the GPU work it waits for is done.
bool is_sync_wait(std::string_view name) { return name.find("Synchronize") != std::string_view::npos; }

// One trace as the diff sees it: its steps, and its events tallied per name.
struct Side {
  const Trace* trace = nullptr;
  std::vector<std::int64_t> track_rank;
  std::vector<StepRow> rows; // the compared step annotations, in time order
  bool numbered = false;     // every row has a step number
  bool whole = false;        // compared as one step

  std::map<std::int64_t, Span> job_steps;                          // by key: first start to last end
  std::map<std::int64_t, std::string> labels;                      // by key: its first row's
  std::map<std::pair<std::int64_t, std::int64_t>, Span> rank_steps; // by (rank, key)
  std::map<std::int64_t, std::vector<const StepRow*>> lookup;       // by rank, by start
  std::map<std::int64_t, Span> rank_extent;                         // every event of a rank

  Tallies all;
  std::map<std::int64_t, Tallies> by_rank;
  bool per_rank = false;
  TimeNs gpu_total = 0;

  std::string_view name_of(StringId id) const {
    return id == kOutsideOperations ? kOutsideOperationsName : trace->str(id);
  }
};

void collect_steps(Side& s, const std::vector<std::int64_t>& only) {
  const Trace& t = *s.trace;
  const auto& ann = t.annotations();
  for (AnnotationIndex row : find_steps(t)) {
    const std::int64_t number = step_number(t, row);
    if (!only.empty() && std::find(only.begin(), only.end(), number) == only.end()) continue;
    s.rows.push_back(StepRow{s.track_rank[ann.track[row]], number, kNoValue, ann.start[row], ann.end[row],
                             step_label(t, row)});
  }
  s.numbered = !s.rows.empty() && std::all_of(s.rows.begin(), s.rows.end(),
                                               [](const StepRow& r) { return r.number != kNoValue; });
}

// Keys: the step number, or the step's place among its rank's steps (0, 1, ...).
void key_steps(Side& s, bool by_number) {
  std::map<std::int64_t, std::int64_t> next;
  for (StepRow& r : s.rows) {
    r.key = by_number ? r.number : next[r.rank]++;
    s.job_steps[r.key].add(r.start, r.end);
    s.labels.emplace(r.key, r.label);
    s.rank_steps[{r.rank, r.key}].add(r.start, r.end);
    s.lookup[r.rank].push_back(&r);
  }
  for (auto& [rank, v] : s.lookup) {
    std::stable_sort(v.begin(), v.end(), [](const StepRow* x, const StepRow* y) { return x->start < y->start; });
  }
}

// The step an event of `rank` that starts at `t` belongs to: HTA's s.ts <= e.ts < s.ts + s.dur,
// among the steps of its own rank.
std::optional<std::int64_t> step_at(const Side& s, std::int64_t rank, TimeNs t) {
  if (s.whole) return kWholeTraceKey;
  const auto it = s.lookup.find(rank);
  if (it == s.lookup.end()) return std::nullopt;
  const auto& v = it->second;
  auto after = std::upper_bound(v.begin(), v.end(), t, [](TimeNs x, const StepRow* r) { return x < r->start; });
  if (after == v.begin()) return std::nullopt;
  const StepRow* r = *(after - 1);
  if (t < r->end) return r->key;
  return std::nullopt;
}

void add(Side& s, std::int64_t rank, DiffSubject subject, StringId name, TimeNs total, TimeNs self,
         bool communication, bool sync_wait) {
  auto count_in = [&](Tallies& tallies) {
    Tally& t = tallies[tally_key(subject, name)];
    ++t.count;
    t.total += total;
    t.self += std::max<TimeNs>(self, 0);
    t.communication = t.communication || communication;
    t.sync_wait = t.sync_wait || sync_wait;
  };
  count_in(s.all);
  if (s.per_rank) count_in(s.by_rank[rank]);
}

void tally_events(Side& s) {
  const Trace& t = *s.trace;
  const auto& ann = t.annotations();
  const auto& api = t.cuda_api();
  const auto& ops = t.gpu_ops();

  // Self time: the annotation less its child annotations and the CUDA calls made inside it.
  std::vector<TimeNs> self(ann.size());
  for (AnnotationIndex row{0}; row < ann.size(); ++row) {
    self[row] += ann.end[row] - ann.start[row];
    if (ann.parent[row] != kNoIndex) self[ann.parent[row]] -= ann.end[row] - ann.start[row];
  }
  for (CudaApiIndex row{0}; row < api.size(); ++row) {
    if (t.tracks()[api.track[row]].kind != TrackKind::CpuThread) continue;
    if (const auto in = t.innermost_annotation_at(api.track[row], api.start[row])) {
      self[*in] -= std::min(api.end[row], ann.end[*in]) - api.start[row];
    }
  }

  for (AnnotationIndex row{0}; row < ann.size(); ++row) {
    const TrackId track = ann.track[row];
    if (t.tracks()[track].kind != TrackKind::CpuThread) continue;
    const std::int64_t rank = s.track_rank[track];
    s.rank_extent[rank].add(ann.start[row], ann.end[row]);
    if (!step_at(s, rank, ann.start[row])) continue;
    if (is_step(t, row)) {
      add(s, rank, DiffSubject::Operation, kOutsideOperations, self[row], self[row], false, false);
      continue;
    }
    const std::string_view name = t.str(ann.name[row]);
    add(s, rank, DiffSubject::Operation, ann.name[row], ann.end[row] - ann.start[row], self[row],
        is_communication_annotation(name, t.str(ann.category[row])), false);
  }

  for (CudaApiIndex row{0}; row < api.size(); ++row) {
    const std::int64_t rank = s.track_rank[api.track[row]];
    s.rank_extent[rank].add(api.start[row], api.end[row]);
    if (!step_at(s, rank, api.start[row])) continue;
    const TimeNs d = api.end[row] - api.start[row];
    add(s, rank, DiffSubject::CudaApi, api.name[row], d, d, false, is_sync_wait(t.str(api.name[row])));
  }

  for (GpuOpIndex row{0}; row < ops.size(); ++row) {
    if (ops.kind[row] == GpuOpKind::Sync) continue; // a wait, not work
    const std::int64_t rank = s.track_rank[ops.track[row]];
    s.rank_extent[rank].add(ops.start[row], ops.end[row]);
    // GPU work belongs to the step of the call that launched it (HTA); work whose launch
    // the trace does not hold belongs to none, and work with no correlation id at all to
    // the step its start falls in.
    std::optional<std::int64_t> step;
    const CudaApiIndex launch = ops.correlation[row] == kNoValue
                                    ? kNoIndex
                                    : t.cuda_api_with_correlation(ops.correlation[row]).value_or(kNoIndex);
    if (s.whole) {
      step = kWholeTraceKey;
    } else if (launch != kNoIndex && s.track_rank[api.track[launch]] == rank) {
      step = step_at(s, rank, api.start[launch]);
    } else if (ops.correlation[row] == kNoValue || launch != kNoIndex) { // a launch on another rank: ids collide
      step = step_at(s, rank, ops.start[row]);
    }
    if (!step) continue;
    const TimeNs d = ops.end[row] - ops.start[row];
    s.gpu_total += d;
    add(s, rank, DiffSubject::GpuWork, ops.name[row], d, d,
        ops.kind[row] == GpuOpKind::Kernel && is_communication_kernel(t.str(ops.name[row])), false);
  }
}

TimeNs upper_median(std::vector<TimeNs> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2]; // the upper middle of an even count, as `whatif` reports it
}

// Each step key's time: a step of a job takes as long as its slowest rank's (whatif's steps,
// docs/multi-rank.md); the span from the first rank's start to the last rank's end would count
// the ranks' drift.
std::map<std::int64_t, TimeNs> step_times(const Side& s) {
  std::map<std::int64_t, TimeNs> out;
  for (const auto& [key, span] : s.job_steps) out[key] = 0;
  for (const auto& [rank_key, span] : s.rank_steps) {
    TimeNs& t = out[rank_key.second];
    t = std::max(t, span.duration());
  }
  return out;
}

std::vector<TimeNs> job_durations(const Side& s) {
  std::vector<TimeNs> out;
  for (const auto& [key, time] : step_times(s)) {
    if (s.job_steps.count(key)) out.push_back(time);
  }
  return out;
}

// The rank's own steps: a range of rank_steps, which is ordered by rank first. Called once
// per rank, so a scan of every rank's steps made a job of R ranks cost R² (8000 ranks of two
// steps: 11.8 s; bench/complexity.py's `ranks` shape).
std::vector<TimeNs> rank_durations(const Side& s, std::int64_t rank) {
  std::vector<TimeNs> out;
  for (auto it = s.rank_steps.lower_bound({rank, std::numeric_limits<std::int64_t>::min()});
       it != s.rank_steps.end() && it->first.first == rank; ++it) {
    out.push_back(it->second.duration());
  }
  return out;
}

DiffChange classify(const OperationDiff& r, double threshold_pct) {
  if (r.count_a == 0) return DiffChange::Appeared;
  if (r.count_b == 0) return DiffChange::Vanished;
  const double d = r.impact();
  if (d == 0 || std::abs(d) <= threshold_pct / 100.0 * r.per_step_a) return DiffChange::Unchanged;
  return d > 0 ? DiffChange::Slower : DiffChange::Faster;
}

// One row per (subject, name) in either, by |impact|: the largest change first; among equal
// ones, what appeared or vanished before what only changed.
std::vector<OperationDiff> compare(const Side& a, const Tallies& ta, double steps_a, const Side& b,
                                   const Tallies& tb, double steps_b, double threshold_pct) {
  std::map<std::pair<DiffSubject, std::string_view>, OperationDiff> rows;
  auto fill = [&](const Side& s, const Tallies& tallies, bool is_a) {
    for (const auto& [key, tally] : tallies) {
      const auto subject = static_cast<DiffSubject>(key >> 32);
      const std::string_view name = s.name_of(static_cast<StringId>(key & 0xffffffffu));
      OperationDiff& r = rows[{subject, name}];
      r.subject = subject;
      r.communication = r.communication || tally.communication;
      r.sync_wait = r.sync_wait || tally.sync_wait;
      (is_a ? r.count_a : r.count_b) = tally.count;
      (is_a ? r.total_a : r.total_b) = tally.total;
      (is_a ? r.self_a : r.self_b) = tally.self;
    }
  };
  fill(a, ta, true);
  fill(b, tb, false);
  std::vector<OperationDiff> out;
  out.reserve(rows.size());
  for (auto& [key, r] : rows) {
    r.name = std::string(key.second);
    r.per_step_a = steps_a > 0 ? static_cast<double>(r.self_a) / steps_a : 0.0;
    r.per_step_b = steps_b > 0 ? static_cast<double>(r.self_b) / steps_b : 0.0;
    r.change = classify(r, threshold_pct);
    // Counts per step compared exactly: count_a / steps_a against count_b / steps_b.
    const double ca = static_cast<double>(r.count_a) * steps_b, cb = static_cast<double>(r.count_b) * steps_a;
    r.count_change = cb > ca ? '+' : cb < ca ? '-' : '=';
    out.push_back(std::move(r));
  }
  auto structural = [](const OperationDiff& r) {
    return r.change == DiffChange::Appeared || r.change == DiffChange::Vanished;
  };
  std::stable_sort(out.begin(), out.end(), [&](const OperationDiff& x, const OperationDiff& y) {
    const double ix = std::abs(x.impact()), iy = std::abs(y.impact());
    if (ix != iy) return ix > iy;
    return structural(x) > structural(y);
  });
  return out;
}

std::string step_list(const Side& s) {
  std::set<std::int64_t> numbers;
  for (AnnotationIndex row : find_steps(*s.trace)) {
    const std::int64_t n = step_number(*s.trace, row);
    if (n != kNoValue) numbers.insert(n);
  }
  if (numbers.empty()) return "it has no numbered steps";
  if (numbers.size() == 1) return "its step: " + std::to_string(*numbers.begin());
  return "its steps: " + std::to_string(*numbers.begin()) + " to " + std::to_string(*numbers.rbegin());
}

std::string step_numbers(const std::vector<std::int64_t>& v) {
  std::string out;
  for (std::int64_t n : v) out += (out.empty() ? "" : ",") + std::to_string(n);
  return out;
}

} // namespace

TraceDiff diff_traces(const Trace& trace_a, const Trace& trace_b, const DiffOptions& options, std::string name_a,
                      std::string name_b) {
  if (!(options.threshold_pct >= 0) || !std::isfinite(options.threshold_pct)) {
    throw std::invalid_argument("the threshold must be a percentage of 0 or more");
  }
  TraceDiff diff;
  diff.name_a = std::move(name_a);
  diff.name_b = std::move(name_b);
  diff.options = options;

  Side a, b;
  a.trace = &trace_a;
  b.trace = &trace_b;
  a.track_rank = track_ranks(trace_a);
  b.track_rank = track_ranks(trace_b);
  collect_steps(a, options.steps);
  collect_steps(b, options.steps);
  if (!options.steps.empty()) {
    for (const auto* s : {&a, &b}) {
      if (s->rows.empty()) {
        throw std::invalid_argument((s == &a ? diff.name_a : diff.name_b) + ": no step numbered " +
                                    step_numbers(options.steps) + " (" + step_list(*s) + ")");
      }
    }
  }

  diff.whole_trace = a.rows.empty() || b.rows.empty();
  if (diff.whole_trace) {
    a.whole = b.whole = true;
    a.rows.clear();
    b.rows.clear();
    a.job_steps[kWholeTraceKey].add(trace_a.begin_time(), trace_a.end_time());
    b.job_steps[kWholeTraceKey].add(trace_b.begin_time(), trace_b.end_time());
    diff.matched_by_number = false;
  } else {
    std::set<std::int64_t> numbers_a;
    for (const auto& r : a.rows) numbers_a.insert(r.number);
    const bool overlap = std::any_of(b.rows.begin(), b.rows.end(), [&](const StepRow& r) {
      return numbers_a.count(r.number) > 0;
    });
    diff.matched_by_number = a.numbered && b.numbered && overlap;
    key_steps(a, diff.matched_by_number);
    key_steps(b, diff.matched_by_number);
  }

  const auto ranks_a = job_ranks(trace_a), ranks_b = job_ranks(trace_b);
  if (ranks_a.size() >= 2 || ranks_b.size() >= 2) {
    if (ranks_a.size() == ranks_b.size()) {
      a.per_rank = b.per_rank = true;
    } else {
      diff.rank_note = "ranks not compared: " + diff.name_a + " has " + std::to_string(ranks_a.size()) + ", " +
                       diff.name_b + " " + std::to_string(ranks_b.size());
    }
  }
  tally_events(a);
  tally_events(b);
  if (diff.whole_trace) {
    for (Side* s : {&a, &b}) {
      for (const auto& [rank, span] : s->rank_extent) s->rank_steps[{rank, kWholeTraceKey}] = span;
    }
  }

  diff.steps_a = a.job_steps.size();
  diff.steps_b = b.job_steps.size();
  const auto da = job_durations(a), db = job_durations(b);
  diff.step_median_a = upper_median(da);
  diff.step_median_b = upper_median(db);
  diff.slowest_step_a = da.empty() ? 0 : *std::max_element(da.begin(), da.end());
  diff.slowest_step_b = db.empty() ? 0 : *std::max_element(db.begin(), db.end());
  const auto steps_a = static_cast<double>(diff.steps_a), steps_b = static_cast<double>(diff.steps_b);
  diff.gpu_per_step_a = steps_a > 0 ? static_cast<double>(a.gpu_total) / steps_a : 0.0;
  diff.gpu_per_step_b = steps_b > 0 ? static_cast<double>(b.gpu_total) / steps_b : 0.0;

  auto label_of = [](const Side& s, std::int64_t key) {
    if (s.whole) return std::string("(whole trace)");
    const auto it = s.labels.find(key);
    return it == s.labels.end() ? std::string() : it->second;
  };
  auto number_of = [&](std::int64_t key) { return diff.matched_by_number ? key : kNoValue; };
  const auto times_a = step_times(a), times_b = step_times(b);
  for (const auto& [key, span] : a.job_steps) {
    const auto in_b = b.job_steps.find(key);
    if (in_b == b.job_steps.end()) continue;
    diff.steps.push_back(
        StepDiff{label_of(a, key), label_of(b, key), number_of(key), times_a.at(key), times_b.at(key)});
  }
  for (const auto& [key, span] : a.job_steps) {
    if (!b.job_steps.count(key)) {
      diff.steps.push_back(StepDiff{label_of(a, key), {}, number_of(key), times_a.at(key), kNoValue});
    }
  }
  for (const auto& [key, span] : b.job_steps) {
    if (!a.job_steps.count(key)) {
      diff.steps.push_back(StepDiff{{}, label_of(b, key), number_of(key), kNoValue, times_b.at(key)});
    }
  }

  diff.operations = compare(a, a.all, steps_a, b, b.all, steps_b, options.threshold_pct);

  if (a.per_rank) {
    double largest = 0;
    for (std::size_t i = 0; i < ranks_a.size(); ++i) {
      RankDiff r;
      r.rank_a = ranks_a[i].rank;
      r.rank_b = ranks_b[i].rank;
      const auto ra = rank_durations(a, r.rank_a), rb = rank_durations(b, r.rank_b);
      r.step_median_a = upper_median(ra);
      r.step_median_b = upper_median(rb);
      static const Tallies kNone;
      const auto ta = a.by_rank.find(r.rank_a), tb = b.by_rank.find(r.rank_b);
      const auto rows = compare(a, ta == a.by_rank.end() ? kNone : ta->second, static_cast<double>(ra.size()), b,
                                tb == b.by_rank.end() ? kNone : tb->second, static_cast<double>(rb.size()),
                                options.threshold_pct);
      for (const auto& row : rows) {
        if (row.communication) r.communication_change += row.impact();
        const bool own_growth = !row.communication && !row.sync_wait && row.impact() > 0 &&
                                (row.change == DiffChange::Slower || row.change == DiffChange::Appeared);
        if (own_growth && (!r.cause || row.impact() > r.cause->impact())) r.cause = row;
      }
      if (r.cause && r.cause->impact() > largest) {
        largest = r.cause->impact();
        diff.most_changed_rank = diff.ranks.size();
      }
      diff.ranks.push_back(std::move(r));
    }
  }
  return diff;
}

namespace {

double change_pct(double a, double b) {
  if (a > 0) return (b / a - 1.0) * 100.0;
  if (b > 0) return std::numeric_limits<double>::infinity();
  return 0.0;
}

} // namespace

std::map<std::string, double> diff_gate_values(const TraceDiff& d) {
  constexpr double kMs = 1e6;
  std::map<std::string, double> v;
  const auto a = static_cast<double>(d.step_median_a), b = static_cast<double>(d.step_median_b);
  v["step_ms_a"] = a / kMs;
  v["step_ms_b"] = b / kMs;
  v["step_change_pct"] = change_pct(a, b);
  v["slowest_step_change_pct"] =
      change_pct(static_cast<double>(d.slowest_step_a), static_cast<double>(d.slowest_step_b));
  double worst_step = 0;
  for (const auto& s : d.steps) {
    if (s.matched()) worst_step = std::max(worst_step, change_pct(static_cast<double>(s.a), static_cast<double>(s.b)));
  }
  v["worst_step_change_pct"] = worst_step;
  double regression = 0, improvement = 0;
  std::int64_t counts[5] = {0, 0, 0, 0, 0};
  for (const auto& o : d.operations) {
    ++counts[static_cast<int>(o.change)];
    if (o.change == DiffChange::Unchanged) continue; // within the threshold: noise, as the report says
    regression = std::max(regression, o.impact());
    improvement = std::max(improvement, -o.impact());
  }
  v["top_regression_ms"] = regression / kMs;
  v["top_improvement_ms"] = improvement / kMs;
  v["slower"] = static_cast<double>(counts[static_cast<int>(DiffChange::Slower)]);
  v["faster"] = static_cast<double>(counts[static_cast<int>(DiffChange::Faster)]);
  v["appeared"] = static_cast<double>(counts[static_cast<int>(DiffChange::Appeared)]);
  v["vanished"] = static_cast<double>(counts[static_cast<int>(DiffChange::Vanished)]);
  v["gpu_ms_a"] = d.gpu_per_step_a / kMs;
  v["gpu_ms_b"] = d.gpu_per_step_b / kMs;
  v["gpu_change_pct"] = change_pct(d.gpu_per_step_a, d.gpu_per_step_b);
  double worst_rank = 0;
  for (const auto& r : d.ranks) {
    worst_rank = std::max(worst_rank, change_pct(static_cast<double>(r.step_median_a), static_cast<double>(r.step_median_b)));
  }
  v["worst_rank_change_pct"] = worst_rank;
  v["rank_own_growth_ms"] = d.most_changed_rank ? d.ranks[*d.most_changed_rank].cause->impact() / kMs : 0.0;
  return v;
}

} // namespace dreamscope::analyzers
