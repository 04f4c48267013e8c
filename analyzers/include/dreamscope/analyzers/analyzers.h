// analyzers: an umbrella header, the whole library at once. It only includes the headers below;
// code of this repository includes the one it uses instead, so that an include says what it uses.
//
// Where the time of a run went, across the stack, on any `Trace` (measured or predicted). Each
// analysis is a pure function of a `const Trace&` returning value structs:
//
// - pipeline.h:      cross_stack_breakdown (RL-Scope), data_stalls, top_kernels
// - hta.h:           Holistic Trace Analysis's numbers, with HTA's parsing rules, in µs
// - tensorboard.h:   the TensorBoard profiler plugin's views (steps, GPU, operators, kernels,
//                    distributed, modules, memory)
// - critical_path.h: the replayed run's critical path, split by what bound it
// - report.h:        all of one trace's analyses (analyze_trace) as text, Markdown, JSON or HTML
// - job_analysis.h:  a distributed job across its ranks, from small per-rank summaries
// - trace_diff.h:    what changed from one run to another
// - duration_text.h: a duration as the reports, the commands and the GUI print it ("12.346 ms")
// Not included: run_json.h (a replay's and a what-if's JSON), which needs dreamscope::whatif's
// headers, a library the analyzers link privately.
#pragma once

#include "dreamscope/analyzers/critical_path.h"
#include "dreamscope/analyzers/duration_text.h"
#include "dreamscope/analyzers/hta.h"
#include "dreamscope/analyzers/job_analysis.h"
#include "dreamscope/analyzers/pipeline.h"
#include "dreamscope/analyzers/report.h"
#include "dreamscope/analyzers/tensorboard.h"
#include "dreamscope/analyzers/trace_diff.h"
