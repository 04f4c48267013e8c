// graph: the task dependency graph of a run, built from any `Trace` (design.md).
//
// - dependency_graph.h: `DependencyGraph` (tasks on CPU threads and GPU streams, launch /
//   sync / flow edges, symbolic GPU synchronization) and `build_dependency_graph(trace)`.
//   The simulator that replays it, and the what-if transforms that edit it, are in whatif/.
#pragma once

#include "dreamscope/graph/dependency_graph.h"
