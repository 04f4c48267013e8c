// The critical-path analysis with its way of walking the steps' paths chosen. Where steps
// overlap, the analysis sums each step's unclipped stretch from running totals
// (critical_path.cpp says why), else it walks every point of every step's path: the plain
// definition, which the sums must agree with. The tests choose either on any trace.
#pragma once

#include "dreamscope/analyzers/critical_path.h"

namespace dreamscope::analyzers::detail {

enum class StepPaths { Fastest, SumStretches, WalkEveryPoint };
CriticalPathReport critical_path_analysis(const Trace& trace, std::size_t top_operations, std::size_t step_limit,
                                          StepPaths step_paths);

} // namespace dreamscope::analyzers::detail
