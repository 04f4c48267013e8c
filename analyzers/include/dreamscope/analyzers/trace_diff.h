// trace_diff: what changed from one run to another (two runs, two ranks, a run and its
// prediction). Steps are matched by number (by position when the numbers do not overlap);
// operations (CPU annotations), GPU work (kernels, copies, memsets) and CUDA API calls are
// compared by name, in time per step so that runs of different length compare, and each is
// faster, slower, appeared, vanished or unchanged, sorted by its impact on the step. For two
// jobs of as many ranks, each rank's step and the rank whose own work changed most, with
// its cause. HTA's TraceDiff (counts and total durations per name, iterations chosen by
// ProfilerStep number) is the total and count columns. docs/diff.md reads the result.
#pragma once

#include "dreamscope/storage/trace.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dreamscope::analyzers {

struct DiffOptions {
  // A row whose time per step moved by at most this share of A's is unchanged (percent).
  double threshold_pct = 5.0;
  // Only the steps of these numbers, in both traces (HTA's control/test iterations); empty: all.
  std::vector<std::int64_t> steps;
};

enum class DiffSubject : std::uint8_t { Operation, GpuWork, CudaApi };
std::string_view to_string(DiffSubject s); // "operation", "gpu", "cuda_api"

enum class DiffChange : std::uint8_t { Slower, Faster, Appeared, Vanished, Unchanged };
std::string_view to_string(DiffChange c); // "slower", "faster", ...

struct StepDiff {
  std::string label_a, label_b;     // "ProfilerStep#3", "step 3"; empty where a trace lacks the step
  std::int64_t number = kNoValue;   // the step number; kNoValue when matched by position
  TimeNs a = kNoValue, b = kNoValue; // durations; kNoValue: not in that trace
  bool matched() const { return a != kNoValue && b != kNoValue; }
};

// One name of one subject in both traces. Time per step is the trace's total over its
// compared steps divided by their count. The impact on the step is the change in the time
// per step of what the row owns: an operation's self time (what no nested annotation or
// CUDA call inside it accounts for, so that one change is named once, where it happened),
// the whole duration for GPU work and CUDA calls.
struct OperationDiff {
  DiffSubject subject = DiffSubject::Operation;
  std::string name;
  DiffChange change = DiffChange::Unchanged;
  std::int64_t count_a = 0, count_b = 0;
  TimeNs total_a = 0, total_b = 0; // summed durations (HTA's total_duration)
  TimeNs self_a = 0, self_b = 0;   // = total for GPU work and CUDA calls
  double per_step_a = 0, per_step_b = 0; // self time per step, ns
  bool communication = false; // a collective: NCCL & co. kernels, `collective` and nccl:* annotations
  bool sync_wait = false;     // a CUDA call that blocks until the GPU is done (*Synchronize)
  double impact() const { return per_step_b - per_step_a; } // ns per step; > 0: slower
  // HTA's counts_change_categories on counts per step: '+', '-' or '='.
  char count_change = '=';
};

// One rank of each job, paired in rank order.
struct RankDiff {
  std::int64_t rank_a = kNoValue, rank_b = kNoValue;
  TimeNs step_median_a = 0, step_median_b = 0;
  double communication_change = 0; // ns per step, summed over its collectives
  // Its own work's largest growth (not a collective, not a wait for the GPU): the cause when
  // this rank slowed the job. None when nothing of its own grew past the threshold.
  std::optional<OperationDiff> cause;
};

struct TraceDiff {
  std::string name_a, name_b;
  DiffOptions options;
  bool matched_by_number = true;
  std::size_t steps_a = 0, steps_b = 0; // compared steps (1 each for a trace without steps)
  bool whole_trace = false;             // neither trace had steps: each is one step
  TimeNs step_median_a = 0, step_median_b = 0;
  TimeNs slowest_step_a = 0, slowest_step_b = 0;
  double gpu_per_step_a = 0, gpu_per_step_b = 0; // GPU work, ns per step
  std::vector<StepDiff> steps;                   // matched in step order, then unmatched
  std::vector<OperationDiff> operations;         // by |impact|, largest first
  std::vector<RankDiff> ranks;                   // two jobs of as many ranks (>= 2)
  std::optional<std::size_t> most_changed_rank;  // index into ranks: the largest own growth
  std::string rank_note;                         // why there is no rank table, if there is none
};

TraceDiff diff_traces(const Trace& a, const Trace& b, const DiffOptions& options = {},
                      std::string name_a = "A", std::string name_b = "B");

// The values a `--fail-if` gate can name (docs/diff.md), by name.
std::map<std::string, double> diff_gate_values(const TraceDiff& diff);

// `top`: rows of the long tables in text, Markdown and HTML (JSON has every row).
std::string render_diff_text(const TraceDiff& diff, std::size_t top = 15);
std::string render_diff_markdown(const TraceDiff& diff, std::size_t top = 15);
std::string render_diff_json(const TraceDiff& diff);
std::string render_diff_html(const TraceDiff& diff, std::size_t top = 15);

inline constexpr std::string_view kDiffJsonSchema = "dreamscope-diff/1";

} // namespace dreamscope::analyzers
