// RL-Scope's cross-stack breakdown: one sweep over the sorted endpoints of every annotation,
// CUDA API call and GPU operation, attributing each elementary time segment to one
// operation and one cell (CPU framework, CUDA API, GPU only, CPU+GPU).
#include "dreamscope/analyzers/pipeline.h"
#include "dreamscope/storage/steps.h"

#include <algorithm>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_map>

namespace dreamscope::analyzers {

namespace {

constexpr std::string_view kNoOperation = "(no operation)";

enum class Source : std::uint8_t { Annotation, Api, Gpu };

struct Endpoint {
  TimeNs time;
  bool begin;
  Source source;
  std::uint32_t row; // of the table `source` says
};

// ProfilerStep#1, #2, ... are one operation, not one per step; and so is every call of an
// operator whose range PyTorch's emit_nvtx named with its call's details
// ("aten::addmm, seq = 8, op_id = 42, sizes = [[64], [64, 16384]]"): torch's getNvtxStr
// appends each of these after the operator's name.
std::string_view operation_name(std::string_view name) {
  if (name.starts_with(kProfilerStepPrefix)) return name.substr(0, kProfilerStepPrefix.size() - 1);
  std::size_t cut = name.size();
  for (std::string_view detail : {", seq = ", ", op_id = ", ", sizes = ", ", input_op_ids = "}) {
    cut = std::min(cut, name.find(detail));
  }
  return name.substr(0, cut);
}

} // namespace

CrossStackBreakdown cross_stack_breakdown(const Trace& trace) {
  const auto& tracks = trace.tracks();
  const auto& ann = trace.annotations();
  const auto& api = trace.cuda_api();
  const auto& gpu = trace.gpu_ops();

  std::vector<Endpoint> points;
  points.reserve(2 * (ann.size() + api.size() + gpu.size()));
  for (AnnotationIndex i{0}; i < ann.size(); ++i) {
    if (tracks[ann.track[i]].kind != TrackKind::CpuThread || ann.end[i] <= ann.start[i]) continue;
    points.push_back({ann.start[i], true, Source::Annotation, i});
    points.push_back({ann.end[i], false, Source::Annotation, i});
  }
  for (CudaApiIndex i{0}; i < api.size(); ++i) {
    if (api.end[i] <= api.start[i]) continue;
    points.push_back({api.start[i], true, Source::Api, i});
    points.push_back({api.end[i], false, Source::Api, i});
  }
  for (GpuOpIndex i{0}; i < gpu.size(); ++i) {
    if (gpu.kind[i] == GpuOpKind::Sync || gpu.end[i] <= gpu.start[i]) continue;
    points.push_back({gpu.start[i], true, Source::Gpu, i});
    points.push_back({gpu.end[i], false, Source::Gpu, i});
  }
  // Ends before begins at one instant, so that a segment never sees an event twice.
  std::sort(points.begin(), points.end(), [](const Endpoint& a, const Endpoint& b) {
    return std::tie(a.time, a.begin) < std::tie(b.time, b.begin);
  });

  // Operation rows, keyed by the (normalized) name.
  std::vector<OperationTime> rows;
  std::unordered_map<std::string_view, std::size_t> row_of;
  auto row_for = [&](std::string_view name) -> std::size_t {
    auto [it, inserted] = row_of.emplace(name, rows.size());
    if (inserted) rows.push_back(OperationTime{.name = std::string(name)});
    return it->second;
  };
  const std::size_t no_operation = row_for(kNoOperation);
  std::vector<std::size_t> annotation_row(ann.size(), no_operation);
  for (AnnotationIndex i{0}; i < ann.size(); ++i) annotation_row[i] = row_for(operation_name(trace.str(ann.name[i])));

  // GPU time with no CPU activity goes to the operation that launched the work.
  auto launching_row = [&](GpuOpIndex g) -> std::size_t {
    if (gpu.correlation[g] == kNoValue) return no_operation;
    auto call = trace.cuda_api_with_correlation(gpu.correlation[g]);
    if (!call) return no_operation;
    auto op = trace.innermost_annotation_at(api.track[*call], api.start[*call]);
    return op ? annotation_row[*op] : no_operation;
  };

  // Active annotations ordered so that the last is the most recently started, innermost
  // first on ties: the operation the process is in.
  std::set<std::tuple<TimeNs, TimeNs, AnnotationIndex>> active_annotations;
  std::set<std::pair<TimeNs, GpuOpIndex>> active_gpu;
  std::int64_t active_api = 0;
  std::vector<bool> attributed(ann.size(), false);

  TimeNs previous = points.empty() ? 0 : points.front().time;
  for (const Endpoint& p : points) {
    const TimeNs span = p.time - previous;
    if (span > 0) {
      const bool cpu = active_api > 0 || !active_annotations.empty();
      const bool gpu_busy = !active_gpu.empty();
      if (cpu || gpu_busy) {
        std::size_t row = no_operation;
        if (!active_annotations.empty()) {
          const AnnotationIndex a = std::get<2>(*active_annotations.rbegin());
          row = annotation_row[a];
          attributed[a] = true;
        } else if (!cpu) {
          row = launching_row(active_gpu.begin()->second);
        }
        OperationTime& r = rows[row];
        if (cpu && gpu_busy) r.cpu_gpu_overlap += span;
        else if (gpu_busy) r.gpu_only += span;
        else if (active_api > 0) r.cpu_cuda_api += span;
        else r.cpu_framework += span;
      }
    }
    previous = p.time;
    switch (p.source) {
      case Source::Annotation: {
        auto key = std::make_tuple(ann.start[p.row], -ann.end[p.row], AnnotationIndex{p.row});
        if (p.begin) active_annotations.insert(key); else active_annotations.erase(key);
        break;
      }
      case Source::Api: active_api += p.begin ? 1 : -1; break;
      case Source::Gpu: {
        auto key = std::make_pair(gpu.start[p.row], GpuOpIndex{p.row});
        if (p.begin) active_gpu.insert(key); else active_gpu.erase(key);
        break;
      }
    }
  }

  for (AnnotationIndex i{0}; i < ann.size(); ++i) {
    if (attributed[i]) ++rows[annotation_row[i]].instances;
  }

  CrossStackBreakdown out;
  out.all.name = "(all)";
  for (OperationTime& r : rows) {
    if (r.total() == 0) continue;
    out.all.instances += r.instances;
    out.all.cpu_framework += r.cpu_framework;
    out.all.cpu_cuda_api += r.cpu_cuda_api;
    out.all.gpu_only += r.gpu_only;
    out.all.cpu_gpu_overlap += r.cpu_gpu_overlap;
    out.operations.push_back(std::move(r));
  }
  std::sort(out.operations.begin(), out.operations.end(), [](const OperationTime& a, const OperationTime& b) {
    if (a.total() != b.total()) return a.total() > b.total();
    return a.name < b.name;
  });
  return out;
}

} // namespace dreamscope::analyzers
