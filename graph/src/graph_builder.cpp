// build_dependency_graph: runs the builder's passes (passes/passes.h) on a fresh state and
// turns what they built into a DependencyGraph, with the edges in compressed-sparse-row form.
#include "passes/passes.h"

#include <stdexcept>
#include <string>

namespace dreamscope {

namespace graph_build {

GraphBuildState run_passes(const Trace& trace, std::string_view last) {
  GraphBuildState state(trace);
  bool found = last.empty();
  for (const GraphPass& pass : kPasses) {
    pass.run(state);
    if (pass.name == last) {
      found = true;
      break;
    }
  }
  if (!found) throw std::invalid_argument("no graph builder pass named " + std::string(last));
  return state;
}

} // namespace graph_build

// The one place that sees both the build state and the graph's private columns.
class DependencyGraphBuilder {
 public:
  static DependencyGraph assemble(graph_build::GraphBuildState&& s) {
    graph_build::TaskTable& tasks = s.tasks;
    DependencyGraph g;
    const std::size_t n = tasks.size();
    g.run_begin_ = s.trace.begin_time();
    g.run_end_ = s.trace.end_time();
    g.resource_begin_ = std::move(tasks.resource_begin);
    g.resource_is_stream_ = std::move(tasks.resource_is_stream);
    g.resource_ = std::move(tasks.resource);
    g.kind_ = std::move(tasks.kind);
    g.flags_ = std::move(tasks.flags);
    g.cpu_share_ = std::move(tasks.cpu_share);
    g.source_row_ = std::move(tasks.source_row);
    g.measured_start_ = std::move(tasks.measured_start);
    g.measured_end_ = std::move(tasks.measured_end);
    g.base_ = std::move(tasks.base);
    g.gap_ = std::move(tasks.gap);
    g.api_first_ = std::move(tasks.api_first);
    g.api_last_ = std::move(tasks.api_last);
    g.annotation_first_ = std::move(tasks.annotation_first);
    g.annotation_last_ = std::move(tasks.annotation_last);
    g.gpu_task_ = std::move(tasks.gpu_task);
    g.ratio_.assign(n, 1.0f);
    g.add_.assign(n, 0);
    g.sync_actions_ = std::move(s.sync.actions);
    g.stream_groups_ = std::move(s.sync.stream_groups);
    g.event_count_ = s.sync.event_count;
    g.collective_members_ = std::move(s.collective_members);
    g.collective_begin_ = std::move(s.collective_begin);
    g.collective_links_ = s.collective_links;
    g.ready_base_ = std::move(s.ready_base);
    g.warnings_ = s.warnings;
    g.start_in_.assign(n, 0);
    g.completion_in_.assign(n, 0);
    const auto& ends = s.edges.ends;
    const auto& info = s.edges.info;
    for (std::size_t k = 0; k < ends.size(); ++k) {
      (edge_gates_completion(info[k].kind) ? g.completion_in_ : g.start_in_)[ends[k].second]++;
    }
    g.edges_ = EdgeGraph(boost::edges_are_unsorted_multi_pass, ends.begin(), ends.end(), info.begin(),
                         static_cast<std::uint32_t>(n));
    return g;
  }
};

DependencyGraph build_dependency_graph(const Trace& trace) {
  return DependencyGraphBuilder::assemble(graph_build::run_passes(trace));
}

} // namespace dreamscope
