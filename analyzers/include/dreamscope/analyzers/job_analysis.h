// analyzers: a distributed job analysed across its ranks (docs/multi-rank.md, "Analysing a job").
//
// - summarize_rank: one rank's trace reduced, where the trace is, to a small RankSummary:
//   who the rank is, HTA's per-rank numbers, its steps, its data-loader waits and its
//   collective calls. No per-event data: a summary is kilobytes whatever the trace's size.
// - write_rank_summary / read_rank_summary: a summary as a small SQLite file
//   (*.summary.db), so that each rank of a job of many machines is summarised where its
//   trace was written and only summaries travel.
// - analyze_job: the job report from the summaries alone (never from all traces at once):
//   HTA's numbers per rank and across ranks, the collectives matched across ranks and put
//   on one clock, each rank's collective wait against transfer, and the straggler of every
//   step with what made it late. render_job_* print it as text, Markdown, JSON or HTML.
#pragma once

#include "dreamscope/analyzers/hta.h"
#include "dreamscope/analyzers/pipeline.h"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dreamscope::analyzers {

// ---- One rank's summary -------------------------------------------------------------------

struct RankStep {
  std::int64_t number = kNoValue; // ProfilerStep#N's N or a dreamscope step's payload;
                                  // kNoValue for "(whole trace)" of a trace with no steps
  std::string name;
  TimeNs start = 0, end = 0;
  TimeNs data_wait = 0; // data_stalls' wait in this step
  bool operator==(const RankStep&) const = default;
};

// One collective call of the rank (collectives.h), without its trace row.
struct RankCollectiveCall {
  std::string communicator;
  std::int64_t sequence = 0;
  bool pytorch_sequence = false;
  std::int64_t step = kNoValue;
  std::string op;
  std::int64_t bytes = kNoValue;
  TimeNs start = 0, end = 0;
  bool operator==(const RankCollectiveCall&) const = default;
};

// HTA's per-rank numbers (µs), as hta_analyze gives them, less the per-event tables.
struct RankHta {
  TemporalBreakdown temporal;
  std::optional<double> comm_comp_overlap_pct;
  std::vector<KernelTypeTime> kernel_types;
  std::vector<KernelNameStats> kernels;
  std::vector<StreamIdleTime> idle_time;
  LaunchSummary launches;
  std::int64_t profiler_steps = 0;
  bool step_filter_applied = false;
};

struct RankSummary {
  std::int64_t rank = kNoValue;
  std::int64_t local_rank = kNoValue;
  std::int64_t world_size = kNoValue;
  std::string host;          // "" when the trace does not say; ranks of one host share a clock
  std::string trace_name;    // the file it was computed from, without its folder
  std::string source;        // tracer, kineto, nsys
  TimeNs begin = 0, end = 0; // on the rank's own clock
  std::int64_t events = 0;
  RankHta hta;
  std::string data_source;          // data_stalls' source: "dreamscope annotations", "DataLoader operators", "none"
  std::vector<RankStep> steps;      // in time order
  std::vector<TimeSpan> data_waits; // the training loop waiting for its batches, in time order
  std::vector<RankCollectiveCall> collectives; // in time order
};

// The summary of one rank's trace (a file of one rank, or rank_subtrace of a job). `rank`
// is the rank for_each_rank gave it, used when the trace's processes name none.
RankSummary summarize_rank(const Trace& trace, std::int64_t rank, std::string trace_name, const HtaOptions& hta = {});

// The summary file: SQLite, schema in docs/multi-rank.md ("The summary file").
inline constexpr std::string_view kRankSummaryFormat = "dreamscope-rank-summary";
inline constexpr int kRankSummaryVersion = 1;

// Writes `summary` to `path`, replacing a file there. Throws TraceError naming the path.
void write_rank_summary(const RankSummary& summary, const std::filesystem::path& path);
// Throws TraceError with one line naming the file for anything that is not a summary this
// version reads (not SQLite, another kind of SQLite file, another version, bad rows).
RankSummary read_rank_summary(const std::filesystem::path& path);
// Whether the file is a rank summary by its content (SQLite with the summary's own table);
// does not say whether it is a valid one.
bool is_rank_summary_file(const std::filesystem::path& path);

// What `dreamscope analyze` and dreamscope.load() make of their inputs: rank summaries and
// trace files. A folder holding summaries gives them; any other folder, glob or file goes
// through job_files, and a file named *.summary.db is read as a summary (so that a bad one is
// refused as a summary, not as a trace).
struct JobInputs {
  std::vector<std::filesystem::path> summaries;
  std::vector<std::filesystem::path> traces;
};
JobInputs sort_job_inputs(const std::vector<std::string>& inputs);

// ---- The job across ranks -------------------------------------------------------------------

// Why the straggler of a step arrived late (docs/multi-rank.md, "The straggler of a step").
enum class StragglerCause : std::uint8_t {
  Compute,       // its own work beyond the other ranks' median
  InputPipeline, // its data-loader wait beyond theirs
  OtherRank,     // it was itself held in an earlier collective by another rank
  Communication, // its own earlier collectives' transfers took longer than theirs
  Unexplained,   // none of the above exceeds the others': it began the step late
};
std::string_view to_string(StragglerCause c);

// A rank's time in one step, split. own_work: the step's time outside data waits and
// collectives; collective_wait: inside a collective before its last rank arrived;
// transfer: the rest of the time inside collectives.
struct RankStepSplit {
  std::int64_t rank = kNoValue;
  TimeNs duration = 0, own_work = 0, data_wait = 0, collective_wait = 0, transfer = 0;
};

struct StepStraggler {
  std::int64_t step = kNoValue;
  std::string name;
  TimeNs job_wait = 0;               // every rank's collective wait in the step
  std::int64_t straggler = kNoValue; // kNoValue: no rank waited for another in this step
  TimeNs caused_wait = 0;            // the others' wait at the collectives it arrived at last
  std::int64_t late_arrivals = 0;    // those collectives
  TimeNs late_by = 0;                // its arrivals after the others' median arrival, summed
  std::optional<StragglerCause> cause;
  // Its time since the ranks were last together, beyond the others' median, summed over the
  // collectives it arrived at last (negative: less than theirs).
  TimeNs excess_compute = 0, excess_input = 0, excess_held = 0, excess_transfer = 0;
  std::int64_t held_by = kNoValue;  // the rank it waited for most before arriving, if it did
  std::vector<RankStepSplit> ranks; // by rank
};

// Per rank, over the whole trace: time inside its collective calls (their union), of it
// waiting for the last rank, the rest transfer.
struct RankCollectiveTime {
  std::int64_t rank = kNoValue;
  std::int64_t calls = 0;
  TimeNs in_collectives = 0, wait = 0, transfer = 0;
  std::int64_t last_arrivals = 0; // instances at which it was the last to arrive
  TimeNs caused_wait = 0;         // the others' wait at those
  TimeNs clock_shift = 0;         // added to its times to put it on the job's clock
};

// Per communicator and operation, over every rank's calls (sums, not unions).
struct CollectiveOpTime {
  std::string communicator;
  std::string op;
  std::int64_t instances = 0, calls = 0;
  std::int64_t bytes = 0; // summed over the calls that say theirs
  TimeNs time = 0, wait = 0, transfer = 0;
};

// HTA's multi-rank kernel breakdown: each type's time summed over the ranks.
struct JobKernelType {
  std::string kernel_type;
  TimeUs sum = 0;
  double percentage = 0; // rounded to 1 decimal, as HTA
};

// One kernel across the ranks that ran it.
struct JobKernel {
  std::string name;
  KernelType type = KernelType::Other;
  std::int64_t ranks = 0, count = 0;
  TimeUs sum = 0;
  TimeUs min_rank_sum = 0, max_rank_sum = 0;
  std::int64_t min_rank = kNoValue, max_rank = kNoValue;
};

struct JobReportOptions {
  std::size_t top = 15; // rows of the longest tables in text, Markdown and HTML; JSON has all
  bool hta = true, collectives = true, stragglers = true;
  // The per-step tables (each step's straggler, each rank's steps) list what report.h's
  // ReportOptions::all_steps says of a trace's: at most `top` steps (JSON: max(top,
  // kJsonStepRows)) picked by listed_steps, or every step.
  bool all_steps = false;
};

struct JobReport {
  JobReportOptions options;
  std::vector<RankSummary> ranks; // by rank, on their own clocks
  std::vector<std::string> notes; // what the analysis decided: clocks shifted, calls unmatched
  std::vector<JobKernelType> kernel_types;
  std::vector<JobKernel> kernels; // by sum over the ranks, largest first
  std::size_t instances = 0, calls = 0, unmatched_calls = 0, mismatched_ops = 0;
  std::vector<RankCollectiveTime> collective_ranks;
  std::vector<CollectiveOpTime> collective_ops;
  std::vector<StepStraggler> steps; // in step order
  TimeNs begin = 0, end = 0;        // the job's span on its one clock

  std::int64_t world_size() const;
};

// The report of the job whose ranks `summaries` are (any order; one per rank). Throws
// TraceError when two summaries are of one rank or one has no rank.
JobReport analyze_job(std::vector<RankSummary> summaries, const JobReportOptions& options = {});

inline constexpr std::string_view kJobReportJsonSchema = "dreamscope-analyze-job/1";

std::string render_job_text(const JobReport& report);
std::string render_job_markdown(const JobReport& report);
std::string render_job_json(const JobReport& report);
std::string render_job_html(const JobReport& report);

} // namespace dreamscope::analyzers
