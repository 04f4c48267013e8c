// Reports: every analysis of one trace, rendered for a terminal, a CI job summary
// (Markdown), a script (JSON, schema in docs/analyze.md) or a browser (one self-contained
// HTML file with inline SVG charts). `dreamscope analyze` and the GUI both use these.
#pragma once

#include "dreamscope/analyzers/critical_path.h"
#include "dreamscope/analyzers/hta.h"
#include "dreamscope/analyzers/pipeline.h"
#include "dreamscope/analyzers/tensorboard.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dreamscope::analyzers {

enum class ReportSection : std::uint8_t { CrossStack, Hta, Steps, Gpu, DataStalls, TopKernels, CriticalPath };
inline constexpr ReportSection kAllSections[] = {ReportSection::CrossStack, ReportSection::Hta,
                                                 ReportSection::Steps,      ReportSection::Gpu,
                                                 ReportSection::DataStalls, ReportSection::TopKernels,
                                                 ReportSection::CriticalPath};
// "cross-stack", "hta", "steps", "gpu", "data-stalls", "top-kernels", "critical-path".
std::string_view to_string(ReportSection s);
std::optional<ReportSection> report_section_from_string(std::string_view s);
// Whether the section reads what a CPU operator's args say (its External id, input shapes):
// steps and gpu do, through the TensorBoard plugin's model of a trace. A trace for the
// others alone may be imported without them (importers.h, ImportDetail::WithoutOperatorArgs),
// and reports the same (ImportWithoutOperatorArgs tests in tests/analyzers).
bool reads_operator_args(ReportSection s);
// Whether a section reads CPU operators at all (cross-stack, steps, gpu, critical-path); a
// trace for the others alone may be imported without them (ImportDetail::WithoutOperators:
// steps, DataLoader iterations and collectives kept, the other operators counted), and
// reports the same (ImportWithoutOperators tests in tests/analyzers).
bool reads_operators(ReportSection s);

// Steps a per-step table of the JSON report lists at most, unless asked for all: far more
// than a real profile holds (a few to a few hundred), far fewer than a trace of 10^5 tiny
// steps, whose every step in three tables made a report ten times its input.
inline constexpr std::size_t kJsonStepRows = 1000;

struct ReportOptions {
  std::vector<ReportSection> sections{std::begin(kAllSections), std::end(kAllSections)};
  std::size_t top = 15;        // rows of the longest tables in text, Markdown and HTML
  std::size_t timeline_bins = 240;
  HtaOptions hta;
  // The per-step tables (steps, data stalls, critical path per step) list at most `top`
  // steps in text, Markdown and HTML, at most max(top, kJsonStepRows) in JSON (listed_steps
  // says which), and say how many they left out; with `all_steps`, every step.
  bool all_steps = false;
};

// The rows a per-step table of `durations.size()` steps lists, by index in ascending order:
// all of them when there are at most `limit`; else `limit` of them: the first third of
// `limit` steps (warm-up shows there), then the slowest third, then the rest nearest the
// median duration (what a step usually takes), each part taking only steps not yet taken.
std::vector<std::size_t> listed_steps(const std::vector<TimeNs>& durations, std::size_t limit);
// How a table that listed `listed` of `total` steps says so: "" when it listed them all,
// else "15 of 100000 steps listed: the first 5, the 5 slowest and 5 around the median
// duration; --all-steps lists every step."
std::string listed_steps_note(std::size_t listed, std::size_t total);

// How busy each track was over the run, in equal time bins: what the HTML timeline draws.
struct TimelineRow {
  std::string label;
  TrackKind kind = TrackKind::CpuThread;
  std::vector<float> busy; // fraction of each bin covered by the track's events
};

struct TimelineOverview {
  TimeNs begin = 0, end = 0;
  std::vector<TimelineRow> rows;
};

struct AnalysisReport {
  std::string trace_name;
  std::string source;
  TimeNs begin = 0, end = 0;
  std::size_t events = 0;
  ReportOptions options;

  std::optional<CrossStackBreakdown> cross_stack;
  std::optional<HtaReport> hta;
  std::optional<StepBreakdown> steps;
  std::optional<std::vector<DeviceEfficiency>> gpu;
  std::optional<DataStalls> data_stalls;
  std::optional<std::vector<KernelTotal>> top_kernels;
  std::optional<CriticalPathReport> critical_path;
  TimelineOverview timeline;

  bool has(ReportSection s) const;
};

AnalysisReport analyze_trace(const Trace& trace, std::string trace_name, const ReportOptions& options = {});

std::string render_text(const AnalysisReport& report);
std::string render_markdown(const AnalysisReport& report);
std::string render_json(const AnalysisReport& report);
std::string render_html(const AnalysisReport& report);

inline constexpr std::string_view kReportJsonSchema = "dreamscope-analyze/1";

} // namespace dreamscope::analyzers
