#include "probe_step_fill.h"

#include "dreamscope/storage/steps.h"
#include "dreamscope/storage/tracer_environment.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <optional>
#include <string_view>

namespace dreamscope::probe_step_fill {

namespace {

// The mark the tracer ends a probe step with (tracer/src/nvtx_injection.cpp, mark_probe_step).
constexpr std::string_view kProbeMark = tracer_environment::kProbeStepMark;
constexpr std::string_view kTracerDomain = tracer_environment::kTracerDomain;
// How far, in steps of the thread, a template may be from its probe step: far enough to pass
// the steps of other names a loop interleaves (a validation pass, a worker's other fetches),
// near enough to be the same part of the run.
constexpr std::size_t kReach = 8;
// The tracer counts the pushes inside two open ranges (ThreadBuffer::kCountedFromDepth).
constexpr std::uint16_t kCountedFromDepth = 2;

struct Inner {
  AnnotationIndex row;
  std::size_t phase; // which of its step's phases holds it
};

// An outermost range of a thread with what the filling reads of it.
struct Step {
  AnnotationIndex row;
  std::vector<AnnotationIndex> phases; // ranges one level in, in time order
  std::vector<Inner> inner;            // ranges two or more levels in
  std::int64_t counted = -1;           // >= 0: a probe step, and the pushes it counted
};

AnnotationIndex ancestor_at_depth(const AnnotationTable& ann, AnnotationIndex row, std::uint16_t depth) {
  while (row != kNoIndex && ann.depth[row] > depth) row = ann.parent[row];
  return row;
}

std::vector<Step> thread_steps(const Trace& trace, TrackId track) {
  const AnnotationTable& ann = trace.annotations();
  const AnnotationRange rows = trace.annotations_on(track);
  std::vector<Step> steps;
  std::vector<std::size_t> step_of(rows.size(), SIZE_MAX); // by row - rows.begin, for outermost ranges
  std::vector<AnnotationIndex> outermost;
  for (AnnotationIndex r = rows.begin; r < rows.end; ++r) {
    if (ann.depth[r] == 0 && ann.end[r] > ann.start[r]) {
      step_of[r - rows.begin] = steps.size();
      steps.push_back(Step{.row = r});
      outermost.push_back(r);
    }
  }
  const std::vector<std::int64_t> counted = probe_step_counts(trace, track, outermost);
  for (std::size_t i = 0; i < steps.size(); ++i) steps[i].counted = counted[i];
  for (AnnotationIndex r = rows.begin; r < rows.end; ++r) {
    if (ann.end[r] <= ann.start[r]) continue;
    const std::uint16_t depth = ann.depth[r];
    if (depth == 0) continue;
    const AnnotationIndex top = ancestor_at_depth(ann, r, 0);
    if (top == kNoIndex || top < rows.begin || top >= rows.end || step_of[top - rows.begin] == SIZE_MAX) continue;
    Step& s = steps[step_of[top - rows.begin]];
    if (depth == 1) {
      s.phases.push_back(r);
      continue;
    }
    if (depth < kCountedFromDepth) continue;
    const AnnotationIndex phase = ancestor_at_depth(ann, r, 1);
    const auto at = std::find(s.phases.begin(), s.phases.end(), phase);
    // Rows come in time order, so a range's phase was met before it.
    if (at != s.phases.end()) s.inner.push_back(Inner{r, static_cast<std::size_t>(at - s.phases.begin())});
  }
  return steps;
}

// Whether `t` ran what the probe step `p` counted: the same name and phases, and as many inner
// ranges as it counted.
bool can_fill_from(const AnnotationTable& ann, const Step& p, const Step& t) {
  if (t.counted >= 0 || ann.name[t.row] != ann.name[p.row] || ann.domain[t.row] != ann.domain[p.row]) return false;
  if (static_cast<std::int64_t>(t.inner.size()) != p.counted || t.phases.size() != p.phases.size()) return false;
  for (std::size_t k = 0; k < t.phases.size(); ++k) {
    const AnnotationIndex a = t.phases[k], b = p.phases[k];
    if (ann.name[a] != ann.name[b] || ann.domain[a] != ann.domain[b] || ann.end[a] <= ann.start[a]) return false;
  }
  return true;
}

// `t` moved from [from_start, from_end) into [to_start, to_end), in proportion.
TimeNs stretch(TimeNs t, TimeNs from_start, TimeNs from_end, TimeNs to_start, TimeNs to_end) {
  const double scale = static_cast<double>(to_end - to_start) / static_cast<double>(from_end - from_start);
  const auto moved = to_start + static_cast<TimeNs>(std::llround(static_cast<double>(t - from_start) * scale));
  return std::clamp(moved, to_start, to_end);
}

} // namespace

std::vector<FilledRange> fill_probe_steps(const Trace& trace, FillCounts& counts) {
  std::vector<FilledRange> out;
  const std::optional<StringId> probe_name = trace.find_string(kProbeMark);
  const std::optional<StringId> tracer_domain = trace.find_string(kTracerDomain);
  if (!probe_name || !tracer_domain) return out;
  const AnnotationTable& ann = trace.annotations();
  for (TrackId track{0}; track < trace.tracks().size(); ++track) {
    if (trace.tracks()[track].kind != TrackKind::CpuThread) continue;
    const std::vector<Step> steps = thread_steps(trace, track);
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const Step& p = steps[i];
      if (p.counted <= 0) continue;
      ++counts.probe_steps;
      if (!p.inner.empty()) continue; // it recorded inner ranges of its own: which are missing is unknown
      const Step* from = nullptr;
      for (std::size_t d = 1; d <= kReach && !from; ++d) {
        if (i >= d && can_fill_from(ann, p, steps[i - d])) from = &steps[i - d];
        else if (i + d < steps.size() && can_fill_from(ann, p, steps[i + d])) from = &steps[i + d];
      }
      if (!from) continue;
      ++counts.filled;
      for (const Inner& in : from->inner) {
        const AnnotationIndex tp = from->phases[in.phase], pp = p.phases[in.phase];
        AnnotationRecord r = ann.row(in.row);
        r.track = track;
        r.start = stretch(ann.start[in.row], ann.start[tp], ann.end[tp], ann.start[pp], ann.end[pp]);
        r.end = stretch(ann.end[in.row], ann.start[tp], ann.end[tp], ann.start[pp], ann.end[pp]);
        // What was this call's own (a batch id, an operator's link to its CUDA calls) is not copied.
        if (r.end <= r.start) { // a range of a few ns in a phase that shrank: kept a range, not a mark
          if (r.start < ann.end[pp]) r.end = r.start + 1;
          else r.start = r.end - 1;
        }
        r.payload = kNoValue;
        r.external_id = kNoValue;
        r.filled_from = ann.start[from->row];
        out.push_back(FilledRange{in.row, r});
        ++counts.ranges;
      }
    }
  }
  return out;
}

} // namespace dreamscope::probe_step_fill
