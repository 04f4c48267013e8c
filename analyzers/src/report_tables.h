// The report's content as titled tables, shared by the text, Markdown and HTML renderers
// so that the three always say the same thing (internal).
#pragma once

#include "dreamscope/report.h"

#include <string>
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

// "12.345 ms", "830 ns": three decimals in the largest fitting unit.
std::string format_ns(TimeNs ns);
std::string format_pct(double fraction); // 0.4239 -> "42.39 %"
// "GPU 0 stream 7", "thread 42 MainThread": how every section names a track.
std::string track_label(const Trace& trace, TrackId t);

// A table as aligned terminal columns, as Markdown, as an HTML <table> (also used by the
// diff's renderers: analyzers/src/trace_diff_render.cpp).
std::string text_table(const Table& t);
std::string markdown_table(const Table& t);
std::string html_table(const Table& t);
std::string html_escape(std::string_view s);
// The reports' CSS, for a <style> element.
extern const char* const kHtmlStyle;

} // namespace dreamscope::analyzers::detail
