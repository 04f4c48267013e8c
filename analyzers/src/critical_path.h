// The critical-path analysis with its way of walking the steps' paths chosen. The analysis
// sums each step's unclipped stretch from running totals (critical_path.cpp says why); walking
// every point of every step's path is the plain definition it must agree with, kept for the
// tests to compare the two on any trace.
#pragma once

#include "dreamscope/analyzers.h"

namespace dreamscope::analyzers::detail {

enum class StepPaths { SumStretches, WalkEveryPoint };
CriticalPathReport critical_path_analysis(const Trace& trace, std::size_t top_operations, StepPaths step_paths);

} // namespace dreamscope::analyzers::detail
