// The passes of the graph builder, in the order they run (docs/design-notes.md, "The graph
// builder's passes"). Each reads the Trace and the fields of GraphBuildState that the passes
// before it wrote; its file says which it reads and which it writes. A new inference rule
// is one more pass in kPasses, placed after the passes whose output it reads: a pass that
// delays a GPU task's start goes before the launch-latency pass, which reads
// Synchronization::stream_barrier to tell launch latency from waiting; one that gates a task's
// completion (the collectives of a multi-rank trace) goes before the blocking residuals.
#pragma once

#include "build_state.h"

#include <cstddef>
#include <string_view>

namespace dreamscope::graph_build {

void cut_tasks(GraphBuildState& s);              // tasks.cpp
void find_launches(GraphBuildState& s);          // launches.cpp
void add_cuda_synchronization(GraphBuildState& s); // cuda_sync.cpp
void set_launch_latencies(GraphBuildState& s);   // launch_latencies.cpp
void add_data_pipeline(GraphBuildState& s);      // data_pipeline.cpp
void add_inferred_waits(GraphBuildState& s);     // inferred_waits.cpp
void add_process_starts(GraphBuildState& s);     // process_starts.cpp
void add_collectives(GraphBuildState& s);        // collectives.cpp
void set_blocking_residuals(GraphBuildState& s); // blocking_residuals.cpp

// The inferred waits' handoffs between threads on their own (inferred_waits.cpp; the pass
// runs them after its queue waits), for tests that compare them with a plain reference.
void add_thread_handoffs(GraphBuildState& s);

struct GraphPass {
  std::string_view name;
  void (*run)(GraphBuildState&);
};

inline constexpr GraphPass kPasses[] = {
    {"tasks", cut_tasks},
    {"launches", find_launches},
    {"cuda_sync", add_cuda_synchronization},
    {"launch_latencies", set_launch_latencies},
    {"data_pipeline", add_data_pipeline},
    {"inferred_waits", add_inferred_waits},
    {"process_starts", add_process_starts},
    {"collectives", add_collectives},
    {"blocking_residuals", set_blocking_residuals},
};

// Runs the passes of kPasses up to and including `last` (all of them by default) on a fresh
// state: what build_dependency_graph does before it assembles the graph, and what the tests
// of one pass run to get the state that pass starts from.
GraphBuildState run_passes(const Trace& trace, std::string_view last = {});

} // namespace dreamscope::graph_build
