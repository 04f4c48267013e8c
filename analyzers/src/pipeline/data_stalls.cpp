// Data stalls per step (DS-Analyzer's question, answered from one trace) and top kernels.
#include "dreamscope/analyzers/pipeline.h"
#include "dreamscope/storage/steps.h"
#include "common/intervals.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

namespace dreamscope::analyzers {

namespace {


struct Window {
  std::string name;
  std::int64_t number;
  TimeNs start, end;
};

} // namespace

DataStalls data_stalls(const Trace& trace) {
  const auto& ann = trace.annotations();
  const auto& tracks = trace.tracks();
  DataStalls out;

  std::vector<Window> steps;
  std::vector<AnnotationIndex> waits, loader_ops;
  std::unordered_map<std::int64_t, TimeNs> fetch_of_batch, prep_of_batch;
  for (AnnotationIndex i{0}; i < ann.size(); ++i) {
    if (tracks[ann.track[i]].kind != TrackKind::CpuThread) continue;
    std::string_view name = trace.str(ann.name[i]);
    std::string_view category = trace.str(ann.category[i]);
    const TimeNs dur = ann.end[i] - ann.start[i];
    if (is_step(trace, i)) steps.push_back({step_label(trace, i), step_number(trace, i), ann.start[i], ann.end[i]});
    else if (category == annotation_category::kWait) waits.push_back(i);
    else if (category == annotation_category::kFetch) fetch_of_batch[ann.payload[i]] += dur;
    else if (category == annotation_category::kPrep) prep_of_batch[ann.payload[i]] += dur;
    else if (name.starts_with(kDataLoaderRangePrefix)) loader_ops.push_back(i);
  }
  std::sort(steps.begin(), steps.end(), [](const Window& a, const Window& b) { return a.start < b.start; });
  if (steps.empty() && trace.end_time() > trace.begin_time()) {
    steps.push_back({"(whole trace)", kNoValue, trace.begin_time(), trace.end_time()});
  }

  const bool annotated = !waits.empty() || !fetch_of_batch.empty() || !prep_of_batch.empty();
  const std::vector<AnnotationIndex>& stalls = annotated ? waits : loader_ops;
  out.source = annotated ? "dreamscope annotations" : (!loader_ops.empty() ? "DataLoader operators" : "none");
  for (AnnotationIndex i : stalls) out.waits.push_back({ann.start[i], ann.end[i]});
  std::sort(out.waits.begin(), out.waits.end(),
            [](const TimeSpan& a, const TimeSpan& b) { return a.start != b.start ? a.start < b.start : a.end < b.end; });

  // Each step asks an index of the waits how much of it they cover, and reads only the waits
  // that began inside it: a scan of every wait for every step was quadratic in a long run.
  std::vector<detail::Interval> wait_spans;
  wait_spans.reserve(out.waits.size());
  for (const TimeSpan& t : out.waits) wait_spans.push_back({t.start, t.end});
  std::vector<detail::Interval> step_spans;
  step_spans.reserve(steps.size());
  for (const Window& w : steps) step_spans.push_back({w.start, w.end});
  const std::vector<TimeNs> waited = detail::OverlapIndex(wait_spans).overlaps(step_spans);
  std::vector<std::pair<TimeNs, std::int64_t>> batch_waits; // (start, batch id), by start
  if (annotated) {
    for (AnnotationIndex i : stalls) {
      if (ann.payload[i] != kNoValue) batch_waits.emplace_back(ann.start[i], ann.payload[i]);
    }
    std::sort(batch_waits.begin(), batch_waits.end());
  }
  out.steps.reserve(steps.size());
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const Window& w = steps[k];
    StepDataStall s{.step = w.name, .number = w.number, .start = w.start, .end = w.end};
    s.data_wait = waited[k];
    // A batch belongs to the step in which the training thread started waiting for it.
    std::set<std::int64_t> batches;
    const auto began = [](const std::pair<TimeNs, std::int64_t>& b, TimeNs t) { return b.first < t; };
    auto it = std::lower_bound(batch_waits.begin(), batch_waits.end(), w.start, began);
    for (; it != batch_waits.end() && it->first < w.end; ++it) batches.insert(it->second);
    for (std::int64_t b : batches) {
      if (auto f = fetch_of_batch.find(b); f != fetch_of_batch.end()) s.fetch += f->second;
      if (auto p = prep_of_batch.find(b); p != prep_of_batch.end()) s.prep += p->second;
    }
    s.batches = static_cast<std::int64_t>(batches.size());
    out.total_wait += s.data_wait;
    out.total_time += w.end - w.start;
    out.steps.push_back(std::move(s));
  }
  return out;
}

std::vector<KernelTotal> top_kernels(const Trace& trace, std::size_t limit) {
  const auto& gpu = trace.gpu_ops();
  std::unordered_map<StringId, KernelTotal> by_name;
  TimeNs all = 0;
  for (GpuOpIndex i{0}; i < gpu.size(); ++i) {
    if (gpu.kind[i] != GpuOpKind::Kernel) continue;
    const TimeNs dur = gpu.end[i] - gpu.start[i];
    auto [it, inserted] = by_name.try_emplace(gpu.name[i]);
    KernelTotal& k = it->second;
    if (inserted) {
      k.name = std::string(trace.str(gpu.name[i]));
      k.min = dur;
      k.max = dur;
    }
    ++k.count;
    k.total += dur;
    k.min = std::min(k.min, dur);
    k.max = std::max(k.max, dur);
    all += dur;
  }
  std::vector<KernelTotal> out;
  out.reserve(by_name.size());
  for (auto& [id, k] : by_name) {
    k.share = all > 0 ? static_cast<double>(k.total) / static_cast<double>(all) : 0.0;
    out.push_back(std::move(k));
  }
  std::sort(out.begin(), out.end(), [](const KernelTotal& a, const KernelTotal& b) {
    return a.total != b.total ? a.total > b.total : a.name < b.name;
  });
  if (out.size() > limit) out.resize(limit);
  return out;
}

} // namespace dreamscope::analyzers
