// whatif: predictions from the dependency graph of a run (design.md).
//
// - simulator.h: `simulate(graph)`, the list-scheduling replay; per-task predicted times and
//   binding constraints; `critical_path`; pluggable tie-breaking (`TiePolicy`).
// - replay.h: `replay(trace)` (graph → simulate → per-step and overall comparison, what
//   `dreamscope replay` prints), `make_predicted_trace`, `step_times`.
// - overhead_correction.h: `correct_overhead(trace, graph)`, the prediction of the run
//   without the tracer, from the trace's calibration and overhead records.
// - cost_models.h, scenario.h: duration models and what-if scenarios.
// A what-if edits a DependencyGraph's knobs (ratio, add, removed, gap) and simulates it.
#pragma once

#include "dreamscope/whatif/overhead_correction.h"
#include "dreamscope/whatif/replay.h"
#include "dreamscope/whatif/simulator.h"
