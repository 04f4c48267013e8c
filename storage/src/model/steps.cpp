#include "dreamscope/storage/steps.h"

#include "dreamscope/storage/tracer_environment.h"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <optional>

namespace dreamscope {

std::int64_t profiler_step_number(std::string_view name) {
  if (!name.starts_with(kProfilerStepPrefix)) return kNoValue;
  std::int64_t n = 0;
  const auto digits = name.substr(kProfilerStepPrefix.size());
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  return ec == std::errc() ? n : kNoValue;
}

bool is_step(const Trace& trace, AnnotationIndex row) {
  const auto& ann = trace.annotations();
  if (trace.tracks()[ann.track[row]].kind != TrackKind::CpuThread) return false;
  return trace.str(ann.category[row]) == annotation_category::kStep ||
         trace.str(ann.name[row]).starts_with(kProfilerStepPrefix);
}

std::string step_label(const Trace& trace, AnnotationIndex row) {
  const auto& ann = trace.annotations();
  std::string label(trace.str(ann.name[row]));
  if (trace.str(ann.category[row]) == annotation_category::kStep && ann.payload[row] != kNoValue &&
      label.find_first_of("0123456789") == std::string::npos) {
    // Appended piecewise: `" " + std::to_string(...)` trips GCC 12's -Wrestrict at -O3.
    label += ' ';
    label += std::to_string(ann.payload[row]);
  }
  return label;
}

std::int64_t step_number(const Trace& trace, AnnotationIndex row) {
  const auto& ann = trace.annotations();
  const std::int64_t profiler = profiler_step_number(trace.str(ann.name[row]));
  if (profiler != kNoValue) return profiler;
  if (trace.str(ann.category[row]) == annotation_category::kStep) return ann.payload[row];
  return kNoValue;
}

std::vector<AnnotationIndex> find_steps(const Trace& trace) {
  const auto& ann = trace.annotations();
  std::vector<AnnotationIndex> steps;
  for (AnnotationIndex row{0}; row < ann.size(); ++row) {
    if (is_step(trace, row)) steps.push_back(row);
  }
  std::stable_sort(steps.begin(), steps.end(),
                   [&](AnnotationIndex a, AnnotationIndex b) { return ann.start[a] < ann.start[b]; });
  return steps;
}

std::vector<std::int64_t> probe_step_counts(const Trace& trace, TrackId track, std::span<const AnnotationIndex> outermost) {
  std::vector<std::int64_t> counted(outermost.size(), -1);
  const std::optional<StringId> mark = trace.find_string(tracer_environment::kProbeStepMark);
  const std::optional<StringId> domain = trace.find_string(tracer_environment::kTracerDomain);
  if (!mark || !domain || outermost.empty()) return counted;
  const AnnotationTable& ann = trace.annotations();
  const AnnotationRange rows = trace.annotations_on(track);
  for (AnnotationIndex r = rows.begin; r < rows.end; ++r) {
    if (ann.end[r] > ann.start[r] || ann.name[r] != *mark || ann.domain[r] != *domain || ann.payload[r] == kNoValue) continue;
    const TimeNs t = ann.start[r];
    // The last step that starts at or before t, if t is inside it, its end included.
    auto it = std::upper_bound(outermost.begin(), outermost.end(), t,
                               [&](TimeNs v, AnnotationIndex s) { return v < ann.start[s]; });
    if (it == outermost.begin()) continue;
    --it;
    if (ann.start[*it] == t && it != outermost.begin() && ann.end[*std::prev(it)] >= t) --it;
    if (t <= ann.end[*it]) counted[static_cast<std::size_t>(it - outermost.begin())] = ann.payload[r];
  }
  return counted;
}

} // namespace dreamscope
