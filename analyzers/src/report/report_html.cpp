// The report as one self-contained HTML file: inline CSS and SVG, no scripts, no fonts or
// files from elsewhere, so that it reads the same offline, in a CI artifact or in a mail.
#include "report/report_tables.h"

#include "dreamscope/analyzers/duration_text.h"

#include <fmt/format.h>

#include <algorithm>

namespace dreamscope::analyzers {

namespace {

// The cross-stack cells' colours; the screenshot test looks for them.
constexpr const char* kFrameworkColour = "#4e79a7";
constexpr const char* kCudaApiColour = "#f28e2b";
constexpr const char* kGpuOnlyColour = "#59a14f";
constexpr const char* kOverlapColour = "#e15759";
constexpr const char* kKernelColour = "#76b7b2";
// Indexed by PathCategory: CPU work, GPU work, launch latency, sync wait, data-flow wait,
// collective wait, idle gap. Darker than the cross-stack colours so that no chart's colour appears in another.
constexpr const char* kPathColours[kPathCategories] = {"#2f4b7c", "#3a7d34", "#c46f14", "#a4262c",
                                                        "#7b4f8e", "#1f8a8a", "#8c8c8c"};
constexpr const char* kStepColours[kStepCategories] = {"#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                                                       "#f28e2b", "#9c755f", "#4e79a7", "#bab0ac"};

} // namespace

namespace detail {

std::string escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string clip(std::string_view s, std::size_t n) {
  if (s.size() <= n) return std::string(s);
  return std::string(s.substr(0, n - 1)) + "\u2026";
}

std::string legend(const std::vector<std::pair<std::string, const char*>>& items) {
  std::string out = "<div class=\"legend\">";
  for (const auto& [label, colour] : items) {
    out += fmt::format("<span><svg width=\"12\" height=\"12\"><rect width=\"12\" height=\"12\" fill=\"{}\"/></svg> {}</span>",
                       colour, escape(label));
  }
  return out + "</div>\n";
}

std::string stacked_bars(const std::vector<StackedRow>& rows, const std::vector<const char*>& colours,
                         const std::string& title) {
  if (rows.empty()) return "<p class=\"none\">(no data)</p>\n";
  double longest = 0;
  for (const auto& r : rows) {
    double sum = 0;
    for (double p : r.parts) sum += p;
    longest = std::max(longest, sum);
  }
  constexpr int kRow = 26;
  const int height = static_cast<int>(rows.size()) * kRow + 10;
  std::string out = fmt::format("<svg class=\"chart\" width=\"{}\" height=\"{}\" role=\"img\" aria-label=\"{}\">\n",
                                kChartWidth, height, escape(title));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const int y = static_cast<int>(i) * kRow + 5;
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", kLabelWidth - 8, y + 17,
                       escape(clip(rows[i].label, 42)));
    double x = kLabelWidth;
    for (std::size_t p = 0; p < rows[i].parts.size(); ++p) {
      const double w = longest > 0 ? rows[i].parts[p] / longest * kBarArea : 0;
      if (w <= 0) continue;
      out += fmt::format("<rect x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" height=\"20\" fill=\"{}\"><title>{}</title></rect>\n",
                         x, y + 2, w, colours[p], escape(rows[i].label));
      x += w;
    }
    out += fmt::format("<text x=\"{:.2f}\" y=\"{}\">{}</text>\n", x + 6, y + 17, escape(rows[i].total_text));
  }
  return out + "</svg>\n";
}

} // namespace detail

namespace {

using detail::clip;
using detail::escape;
using detail::html_table;
using detail::kChartWidth;
using detail::kLabelWidth;
using detail::legend;
using detail::StackedRow;
using detail::stacked_bars;

std::string cross_stack_chart(const CrossStackBreakdown& cs, std::size_t top) {
  std::vector<StackedRow> rows;
  for (std::size_t i = 0; i < cs.operations.size() && i < top; ++i) {
    const auto& o = cs.operations[i];
    rows.push_back({o.name,
                    {static_cast<double>(o.cpu_framework), static_cast<double>(o.cpu_cuda_api),
                     static_cast<double>(o.gpu_only), static_cast<double>(o.cpu_gpu_overlap)},
                    format_duration(o.total())});
  }
  return legend({{"CPU framework", kFrameworkColour},
                 {"CPU CUDA API", kCudaApiColour},
                 {"GPU only", kGpuOnlyColour},
                 {"CPU + GPU", kOverlapColour}}) +
         stacked_bars(rows, {kFrameworkColour, kCudaApiColour, kGpuOnlyColour, kOverlapColour},
                      "Cross-stack breakdown per operation");
}

std::string timeline_chart(const TimelineOverview& tl) {
  if (tl.rows.empty()) return "<p class=\"none\">(no events)</p>\n";
  constexpr std::size_t kMaxRows = 32;
  constexpr int kRow = 18;
  const std::size_t n = std::min(tl.rows.size(), kMaxRows);
  const std::size_t bins = tl.rows.front().busy.size();
  const double bin_width = static_cast<double>(kChartWidth - kLabelWidth) / static_cast<double>(std::max<std::size_t>(bins, 1));
  const int height = static_cast<int>(n) * kRow + 30;
  std::string out = fmt::format("<svg class=\"chart\" width=\"{}\" height=\"{}\" role=\"img\" aria-label=\"Timeline\">\n",
                                kChartWidth, height);
  for (std::size_t r = 0; r < n; ++r) {
    const TimelineRow& row = tl.rows[r];
    const int y = static_cast<int>(r) * kRow;
    const char* colour = row.kind == TrackKind::GpuStream ? kGpuOnlyColour : kFrameworkColour;
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", kLabelWidth - 8, y + 13,
                       escape(clip(row.label, 42)));
    out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#f3f3f3\"/>\n", kLabelWidth, y + 2,
                       kChartWidth - kLabelWidth, kRow - 4);
    // Runs of bins with the same shade become one rectangle: smaller files, no seams.
    for (std::size_t b = 0; b < row.busy.size();) {
      const int shade = static_cast<int>(row.busy[b] * 20.0f + 0.5f);
      std::size_t e = b + 1;
      while (e < row.busy.size() && static_cast<int>(row.busy[e] * 20.0f + 0.5f) == shade) ++e;
      if (row.busy[b] > 0.0f) {
        out += fmt::format("<rect x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\" fill-opacity=\"{:.2f}\"/>\n",
                           kLabelWidth + static_cast<double>(b) * bin_width, y + 2,
                           static_cast<double>(e - b) * bin_width, kRow - 4, colour, 0.15 + 0.85 * shade / 20.0);
      }
      b = e;
    }
  }
  const int axis = static_cast<int>(n) * kRow + 16;
  for (int tick = 0; tick <= 4; ++tick) {
    const double x = kLabelWidth + (kChartWidth - kLabelWidth) * tick / 4.0;
    const char* anchor = tick == 0 ? "start" : tick == 4 ? "end" : "middle";
    out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"{}\">{}</text>\n", x, axis, anchor,
                       format_duration((tl.end - tl.begin) * tick / 4));
  }
  out += "</svg>\n";
  if (tl.rows.size() > n) out += fmt::format("<p class=\"note\">{} more tracks not drawn.</p>\n", tl.rows.size() - n);
  return out;
}

std::string kernels_chart(const std::vector<KernelTotal>& kernels) {
  std::vector<StackedRow> rows;
  for (const auto& k : kernels)
    rows.push_back({k.name, {static_cast<double>(k.total)}, format_duration(k.total) + fmt::format(" ({}x)", k.count)});
  return stacked_bars(rows, {kKernelColour}, "Top kernels");
}

// A chart draws the steps a table lists by default, even with --all-steps: 10^5 bars say
// nothing the table does not.
std::vector<std::size_t> charted_steps(ReportOptions options, const std::vector<TimeNs>& durations) {
  options.all_steps = false;
  return detail::step_rows(options, durations, false);
}

std::string steps_chart(const StepBreakdown& b, const ReportOptions& options) {
  std::vector<StackedRow> rows;
  std::vector<TimeNs> durations;
  for (const StepTime& st : b.steps) durations.push_back(st.duration());
  for (std::size_t i : charted_steps(options, durations)) {
    StackedRow r{b.steps[i].name, {}, format_duration(b.steps[i].duration())};
    for (TimeNs t : b.steps[i].time) r.parts.push_back(static_cast<double>(t));
    rows.push_back(std::move(r));
  }
  std::vector<std::pair<std::string, const char*>> items;
  for (std::size_t c = 0; c < kStepCategories; ++c) items.emplace_back(to_string(static_cast<StepCategory>(c)), kStepColours[c]);
  return legend(items) + stacked_bars(rows, std::vector<const char*>(std::begin(kStepColours), std::end(kStepColours)),
                                      "Step time breakdown");
}

// The whole run's path, then each step's, as one bar split by what bound it.
std::string critical_path_chart(const CriticalPathReport& c, const ReportOptions& options) {
  if (!c.available) return "<p class=\"none\">(no tasks to replay)</p>\n";
  std::vector<StackedRow> rows;
  auto row = [](const CriticalPathSummary& s) {
    StackedRow r{s.name, {}, format_duration(s.length())};
    for (TimeNs t : s.by_category) r.parts.push_back(static_cast<double>(t));
    return r;
  };
  rows.push_back(row(c.run));
  for (std::size_t i : charted_steps(options, c.step_lengths)) {
    if (const CriticalPathSummary* path = detail::step_path(c, i)) rows.push_back(row(*path));
  }
  std::vector<std::pair<std::string, const char*>> items;
  for (std::size_t i = 0; i < kPathCategories; ++i) items.emplace_back(to_string(static_cast<PathCategory>(i)), kPathColours[i]);
  return legend(items) + stacked_bars(rows, std::vector<const char*>(std::begin(kPathColours), std::end(kPathColours)),
                                      "Critical path by what bound it");
}

} // namespace

namespace detail {

std::string html_table(const detail::Table& t) {
  if (t.rows.empty()) return "<p class=\"none\">(none)</p>\n";
  std::string out = "<table><thead><tr>";
  for (std::size_t c = 0; c < t.header.size(); ++c) {
    out += fmt::format("<th{}>{}</th>", t.numeric[c] ? " class=\"n\"" : "", escape(t.header[c]));
  }
  out += "</tr></thead><tbody>\n";
  for (const auto& r : t.rows) {
    out += "<tr>";
    for (std::size_t c = 0; c < r.size(); ++c) {
      out += fmt::format("<td{}>{}</td>", c < t.numeric.size() && t.numeric[c] ? " class=\"n\"" : "", escape(r[c]));
    }
    out += "</tr>\n";
  }
  return out + "</tbody></table>\n";
}

constexpr const char* kStyle = R"(
body { font: 14px/1.45 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: #222; margin: 24px; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 28px 0 6px; border-bottom: 1px solid #ddd; padding-bottom: 3px; }
h3 { font-size: 15px; margin: 16px 0 4px; }
.meta, .note, .none { color: #666; }
svg.chart text { font-size: 12px; fill: #333; }
.legend span { margin-right: 16px; white-space: nowrap; }
.legend svg { vertical-align: -1px; }
table { border-collapse: collapse; margin: 4px 0 10px; }
th, td { padding: 3px 10px; border-bottom: 1px solid #eee; text-align: left; max-width: 520px; overflow-wrap: anywhere; }
th { background: #f6f6f6; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
)";

const char* html_style() { return kStyle; }

} // namespace detail

std::string render_html(const AnalysisReport& r) {
  const std::size_t top = std::max<std::size_t>(r.options.top, 1);
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  out += fmt::format("<title>dreamscope analyze: {}</title>\n<style>{}</style></head><body>\n", escape(r.trace_name), detail::html_style());
  out += fmt::format(
      "<h1>dreamscope analyze</h1>\n<p class=\"meta\">{} &middot; source {} &middot; {} events &middot; span {}</p>\n",
      escape(r.trace_name), escape(r.source), r.events, format_duration(r.end - r.begin));

  if (r.cross_stack) {
    out += "<h2 id=\"chart-cross-stack\">Where the time went, per operation</h2>\n";
    out += cross_stack_chart(*r.cross_stack, top);
  }
  out += "<h2 id=\"chart-timeline\">Timeline overview</h2>\n<p class=\"note\">How busy each GPU stream and CPU "
         "thread was, in equal slices of the run (darker is busier).</p>\n";
  out += timeline_chart(r.timeline);
  if (r.top_kernels) {
    out += "<h2 id=\"chart-kernels\">Top kernels</h2>\n";
    out += kernels_chart(*r.top_kernels);
  }
  if (r.steps) {
    out += "<h2 id=\"chart-steps\">Step time breakdown</h2>\n";
    out += steps_chart(*r.steps, r.options);
  }

  if (r.critical_path) {
    out += "<h2 id=\"chart-critical-path\">Critical path</h2>\n<p class=\"note\">The replayed run's critical path, "
           "whole run first, then per step, split by what bound it.</p>\n";
    out += critical_path_chart(*r.critical_path, r.options);
  }

  for (const auto& s : detail::report_sections(r)) {
    out += fmt::format("<h2 id=\"{}\">{}</h2>\n", to_string(s.kind), escape(s.title));
    for (const auto& n : s.notes) out += fmt::format("<p class=\"note\">{}</p>\n", escape(n));
    for (const auto& [subtitle, table] : s.tables) {
      if (!subtitle.empty()) out += fmt::format("<h3>{}</h3>\n", escape(subtitle));
      out += html_table(table);
    }
  }
  out += "</body></html>\n";
  return out;
}

} // namespace dreamscope::analyzers
