// The vocabulary of a training loop, decided in one place for every module: what a step is,
// its number and label, and the annotation categories of dreamscope's data pipeline.
//
// A step is an annotation on a CPU thread that is either dreamscope's (category "step", the
// step number in its payload) or the PyTorch profiler's ("ProfilerStep#N"). The HTA-compatible
// analyses count only PyTorch's, as HTA does; everything else asks is_step().
#pragma once

#include "dreamscope/storage/trace.h"

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dreamscope {

// Categories of dreamscope's annotations (annotations/, docs/annotations.md).
namespace annotation_category {
inline constexpr std::string_view kStep = "step";
inline constexpr std::string_view kOperation = "operation";
inline constexpr std::string_view kFetch = "fetch"; // reading a batch from storage
inline constexpr std::string_view kPrep = "prep";   // preprocessing it on the CPU
inline constexpr std::string_view kWait = "wait";   // the training loop waiting for it
inline constexpr std::string_view kCpu = "cpu";     // CPU work that shares the machine's cores
// A collective across the job's ranks (all-reduce, broadcast, ...), from entry to return:
// the name is the operation, the payload the bytes each rank contributes (docs/multi-rank.md).
inline constexpr std::string_view kCollective = "collective";
} // namespace annotation_category

inline constexpr std::string_view kProfilerStepPrefix = "ProfilerStep#";
// PyTorch's range around each DataLoader iteration: the data stall of a trace without
// dreamscope's own annotations (analyzers' data_stalls).
inline constexpr std::string_view kDataLoaderRangePrefix = "enumerate(DataLoader)";

// N of "ProfilerStep#N", or kNoValue for any other name.
std::int64_t profiler_step_number(std::string_view name);

// Whether annotation `row` is a step (see above).
bool is_step(const Trace& trace, AnnotationIndex row);

// "ProfilerStep#3", or "step 3" for dreamscope's steps (all named "step", numbered by payload).
std::string step_label(const Trace& trace, AnnotationIndex row);

// The number of step `row`: N of ProfilerStep#N, a dreamscope step's payload; kNoValue when
// it has none.
std::int64_t step_number(const Trace& trace, AnnotationIndex row);

// The step annotations in time order.
std::vector<AnnotationIndex> find_steps(const Trace& trace);

// What the tracer's probe steps counted (tracer_environment.h, kProbeStepMark): for each of
// `outermost`, a thread's ranges at depth 0 in start order, the payload of the `cost probe
// step` mark that ends it, or -1 where none does. The mark comes with the step's last pop, at
// its end; where the next step starts at that very time, it is the step that ends there's. One
// rule for the merge's fill and for overhead correction.
std::vector<std::int64_t> probe_step_counts(const Trace& trace, TrackId track, std::span<const AnnotationIndex> outermost);

} // namespace dreamscope
