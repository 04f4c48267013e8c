// The report's content as titled tables, shared by the text, Markdown and HTML renderers
// so that the three always say the same thing (internal).
#pragma once

#include "dreamscope/analyzers/report.h"

#include <string>
#include <string_view>
#include <vector>

namespace dreamscope::analyzers::detail {

struct Table {
  std::vector<std::string> header;
  std::vector<bool> numeric; // right-aligned columns
  std::vector<std::vector<std::string>> rows;
};

struct Section {
  ReportSection kind;
  std::string title;
  std::vector<std::string> notes; // one line each, above the tables
  std::vector<std::pair<std::string, Table>> tables; // subtitle (may be empty), table
};

std::vector<Section> report_sections(const AnalysisReport& report);

// A table for a terminal (columns aligned, long cells clipped), for Markdown, for HTML: the
// analysis report's, the job report's (job_report_render.cpp) and the diff's
// (trace_diff_render.cpp).
std::string text_table(const Table& t);
std::string markdown_table(const Table& t);
std::string html_table(const Table& t);

// ---- HTML pieces shared by the reports (report_html.cpp)
std::string escape(std::string_view s); // text and attribute values
std::string clip(std::string_view s, std::size_t n); // to n characters, with an ellipsis
const char* html_style();               // the reports' CSS

inline constexpr int kChartWidth = 1180;
inline constexpr int kLabelWidth = 330;
inline constexpr int kBarArea = kChartWidth - kLabelWidth - 110;

struct StackedRow {
  std::string label;
  std::vector<double> parts;
  std::string total_text;
};
// Horizontal stacked bars as inline SVG, one per row, scaled to the longest row.
std::string stacked_bars(const std::vector<StackedRow>& rows, const std::vector<const char*>& colours,
                         const std::string& title);
std::string legend(const std::vector<std::pair<std::string, const char*>>& items);

// The steps a per-step table of the report lists (listed_steps), by the report's options and
// format: JSON's bound or the others' `top`, or all of them.
std::vector<std::size_t> step_rows(const ReportOptions& options, const std::vector<TimeNs>& durations, bool json);
// The most rows a per-step table lists: JSON's bound, the others' `top`, or no bound.
std::size_t step_limit(const ReportOptions& options, bool json);
// The critical path of the step at `index` among all steps; null if it was not summarized.
const CriticalPathSummary* step_path(const CriticalPathReport& c, std::size_t index);

// "12.345 ms", "830 ns": three decimals in the largest fitting unit.
std::string format_pct(double fraction); // 0.4239 -> "42.39 %"
// "GPU 0 stream 7", "thread 42 MainThread": how every section names a track.
std::string track_label(const Trace& trace, TrackId t);

// A titled part of a report (its title, its notes, then its tables under their subtitles)
// for a terminal and as Markdown: the analysis report's sections, the job report's and the
// diff's render alike. `Part` has `title`, `notes` and `tables` as Section does.
template <class Part>
std::string text_part(const Part& p) {
  std::string out = "\n== " + p.title + " ==\n";
  for (const auto& n : p.notes) out += n + "\n";
  for (const auto& [subtitle, table] : p.tables) {
    if (!subtitle.empty()) out += "\n-- " + subtitle + " --\n";
    out += text_table(table);
  }
  return out;
}
template <class Part>
std::string markdown_part(const Part& p) {
  std::string out = "\n## " + p.title + "\n\n";
  for (const auto& n : p.notes) out += n + "\n\n";
  for (const auto& [subtitle, table] : p.tables) {
    if (!subtitle.empty()) out += "### " + subtitle + "\n\n";
    out += markdown_table(table) + "\n";
  }
  return out;
}

} // namespace dreamscope::analyzers::detail
