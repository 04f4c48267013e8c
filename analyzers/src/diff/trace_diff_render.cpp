// The diff as text, Markdown, JSON (schema in docs/diff.md) and one self-contained HTML file,
// built from the same tables as `analyze`'s reports (report_tables.h).
#include "dreamscope/analyzers/trace_diff.h"

#include "dreamscope/analyzers/duration_text.h"
#include "report/report_tables.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

namespace dreamscope::analyzers {

namespace {

using detail::Table;

TimeNs rounded(double ns) { return static_cast<TimeNs>(std::llround(ns)); }

std::string signed_ns(double ns) {
  const TimeNs v = rounded(ns);
  return v > 0 ? "+" + format_duration(v) : format_duration(v);
}

std::optional<double> percent_change_or_new(double a, double b) {
  if (a > 0) return (b / a - 1.0) * 100.0;
  if (b > 0) return std::nullopt; // from nothing
  return 0.0;
}

std::string pct_text(double a, double b) {
  const auto p = percent_change_or_new(a, b);
  return p ? fmt::format("{:+.1f} %", *p) : std::string("new");
}

std::string ms_pair(TimeNs a, TimeNs b) {
  return fmt::format("A {}, B {} ({})", format_duration(a), format_duration(b),
                     pct_text(static_cast<double>(a), static_cast<double>(b)));
}

std::string row_name(const OperationDiff& o) { return fmt::format("{} {}", to_string(o.subject), o.name); }

std::string cause_text(const OperationDiff& c) {
  return fmt::format("{} '{}' {} per step ({}, {})", to_string(c.subject), c.name, signed_ns(c.impact()),
                     to_string(c.change), pct_text(c.per_step_a, c.per_step_b));
}

struct Part {
  std::string title;
  std::vector<std::string> notes;
  std::vector<std::pair<std::string, Table>> tables;
};

std::string matched_by(const TraceDiff& d) {
  if (d.whole_trace) return "each trace compared whole (one of them has no steps)";
  std::size_t matched = 0;
  for (const auto& s : d.steps) matched += s.matched() ? 1 : 0;
  return fmt::format("steps matched by {}: {} in A, {} in B, {} matched", d.matched_by_number ? "number" : "position",
                     d.steps_a, d.steps_b, matched);
}

std::vector<std::string> summary_lines(const TraceDiff& d) {
  std::vector<std::string> out;
  out.push_back(fmt::format("A: {}", d.name_a));
  out.push_back(fmt::format("B: {}", d.name_b));
  out.push_back(matched_by(d) + fmt::format("; threshold {} %", d.options.threshold_pct));
  out.push_back("median step: " + ms_pair(d.step_median_a, d.step_median_b));
  out.push_back("slowest step: " + ms_pair(d.slowest_step_a, d.slowest_step_b));
  out.push_back(fmt::format("GPU work per step: {}",
                            ms_pair(rounded(d.gpu_per_step_a), rounded(d.gpu_per_step_b))));
  std::size_t n[5] = {0, 0, 0, 0, 0};
  for (const auto& o : d.operations) ++n[static_cast<int>(o.change)];
  out.push_back(fmt::format("{} names: {} slower, {} faster, {} appeared, {} vanished, {} unchanged",
                            d.operations.size(), n[0], n[1], n[2], n[3], n[4]));
  if (d.most_changed_rank) {
    const RankDiff& r = d.ranks[*d.most_changed_rank];
    out.push_back(fmt::format("rank that changed most: rank {}{}: {}", r.rank_a,
                              r.rank_b == r.rank_a ? std::string() : fmt::format(" (B: rank {})", r.rank_b),
                              cause_text(*r.cause)));
  }
  return out;
}

Part changes_part(const TraceDiff& d, std::size_t top) {
  Part p{"What changed, by impact on the step", {}, {}};
  p.notes.push_back("Per step: each trace's total over its compared steps divided by their count. Impact: the "
                    "change of an operation's self time (what no nested operation or CUDA call accounts for), "
                    "of a kernel's or a CUDA call's whole time. Totals are HTA's total_duration.");
  Table t{{"change", "subject", "name", "impact / step", "%", "A / step", "B / step", "count A", "count B",
           "total A", "total B"},
          {false, false, false, true, true, true, true, true, true, true, true},
          {}};
  std::size_t changed = 0;
  for (const auto& o : d.operations) {
    if (o.change == DiffChange::Unchanged) continue;
    if (++changed > top) continue;
    t.rows.push_back({std::string(to_string(o.change)), std::string(to_string(o.subject)), o.name,
                      signed_ns(o.impact()), pct_text(o.per_step_a, o.per_step_b),
                      format_duration(rounded(o.per_step_a)), format_duration(rounded(o.per_step_b)),
                      std::to_string(o.count_a), std::to_string(o.count_b), format_duration(o.total_a),
                      format_duration(o.total_b)});
  }
  if (changed == 0) p.notes.push_back(fmt::format("Nothing changed by more than {} %.", d.options.threshold_pct));
  if (changed > top) p.notes.push_back(fmt::format("{} more changes in the JSON report.", changed - top));
  p.tables.emplace_back("", std::move(t));
  return p;
}

Part steps_part(const TraceDiff& d, std::size_t top) {
  Part p{"Steps", {}, {}};
  std::vector<const StepDiff*> shown;
  for (const auto& s : d.steps) shown.push_back(&s);
  if (shown.size() > top) {
    // The steps that moved most, kept in step order.
    auto moved = [](const StepDiff* s) {
      return s->matched() ? std::abs(static_cast<double>(s->b - s->a)) : std::numeric_limits<double>::infinity();
    };
    std::vector<const StepDiff*> by_move = shown;
    std::stable_sort(by_move.begin(), by_move.end(), [&](auto* x, auto* y) { return moved(x) > moved(y); });
    by_move.resize(top);
    std::vector<const StepDiff*> kept;
    for (auto* s : shown) {
      if (std::find(by_move.begin(), by_move.end(), s) != by_move.end()) kept.push_back(s);
    }
    p.notes.push_back(fmt::format("The {} of {} steps that moved most; every step in the JSON report.", top,
                                  shown.size()));
    shown = std::move(kept);
  }
  Table t{{"step A", "step B", "A", "B", "change", "%"}, {false, false, true, true, true, true}, {}};
  for (const StepDiff* s : shown) {
    const std::string a = s->a == kNoValue ? "-" : format_duration(s->a),
                      b = s->b == kNoValue ? "-" : format_duration(s->b);
    const std::string change = s->matched() ? signed_ns(static_cast<double>(s->b - s->a)) : "-";
    const std::string pct =
        s->matched() ? pct_text(static_cast<double>(s->a), static_cast<double>(s->b)) : s->a == kNoValue ? "only in B" : "only in A";
    t.rows.push_back({s->label_a.empty() ? "-" : s->label_a, s->label_b.empty() ? "-" : s->label_b, a, b, change, pct});
  }
  p.tables.emplace_back("", std::move(t));
  return p;
}

Part ranks_part(const TraceDiff& d) {
  Part p{"Ranks", {}, {}};
  p.notes.push_back("In a synchronous job every rank's step grows when one rank slows: the others wait for it in "
                    "their collectives. The rank named is the one whose own work (not a collective, not a wait "
                    "for the GPU) grew most; its largest growth is the cause.");
  Table t{{"rank A", "rank B", "step A", "step B", "%", "collectives / step", "cause", "its growth / step", "%",
           "changed most"},
          {true, true, true, true, true, true, false, true, true, false},
          {}};
  for (std::size_t i = 0; i < d.ranks.size(); ++i) {
    const RankDiff& r = d.ranks[i];
    std::vector<std::string> row{std::to_string(r.rank_a),
                                 std::to_string(r.rank_b),
                                 format_duration(r.step_median_a),
                                 format_duration(r.step_median_b),
                                 pct_text(static_cast<double>(r.step_median_a), static_cast<double>(r.step_median_b)),
                                 signed_ns(r.communication_change)};
    if (r.cause) {
      row.push_back(row_name(*r.cause));
      row.push_back(signed_ns(r.cause->impact()));
      row.push_back(pct_text(r.cause->per_step_a, r.cause->per_step_b));
    } else {
      row.insert(row.end(), {"-", "", ""});
    }
    row.push_back(d.most_changed_rank == i ? "yes" : "");
    t.rows.push_back(std::move(row));
  }
  p.tables.emplace_back("", std::move(t));
  return p;
}

std::vector<Part> parts(const TraceDiff& d, std::size_t top) {
  top = std::max<std::size_t>(top, 1);
  std::vector<Part> out{changes_part(d, top), steps_part(d, top)};
  if (!d.ranks.empty()) out.push_back(ranks_part(d));
  if (!d.rank_note.empty()) {
    out.push_back(Part{"Ranks", {d.rank_note}, {}});
  }
  return out;
}

nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

nlohmann::json pct_json(double a, double b) {
  const auto p = percent_change_or_new(a, b);
  return p ? nlohmann::json(*p) : nlohmann::json(nullptr);
}

nlohmann::json operation_json(const OperationDiff& o) {
  return {{"subject", to_string(o.subject)},
          {"name", o.name},
          {"change", to_string(o.change)},
          {"impact_ns", number(o.impact())},
          {"change_pct", pct_json(o.per_step_a, o.per_step_b)},
          {"per_step_a_ns", number(o.per_step_a)},
          {"per_step_b_ns", number(o.per_step_b)},
          {"count_a", o.count_a},
          {"count_b", o.count_b},
          {"count_change", std::string(1, o.count_change)},
          {"total_a_ns", o.total_a},
          {"total_b_ns", o.total_b},
          {"self_a_ns", o.self_a},
          {"self_b_ns", o.self_b},
          {"communication", o.communication},
          {"sync_wait", o.sync_wait}};
}

// Horizontal bars from a middle line: growth to the right in red, shrinkage to the left in green.
constexpr const char* kSlowerColour = "#e15759";
constexpr const char* kFasterColour = "#59a14f";

std::string diverging_bars(const std::vector<std::pair<std::string, double>>& rows, const std::string& title) {
  if (rows.empty()) return "<p class=\"none\">(no change)</p>\n";
  constexpr int kWidth = 1180, kLabel = 420, kRow = 24, kValue = 110;
  constexpr int kHalf = (kWidth - kLabel - 2 * kValue) / 2;
  constexpr int kMiddle = kLabel + kValue + kHalf;
  double largest = 0;
  for (const auto& [label, v] : rows) largest = std::max(largest, std::abs(v));
  const int height = static_cast<int>(rows.size()) * kRow + 10;
  std::string out = fmt::format("<svg class=\"chart\" width=\"{}\" height=\"{}\" role=\"img\" aria-label=\"{}\">\n",
                                kWidth, height, detail::escape(title));
  out += fmt::format("<line x1=\"{}\" y1=\"0\" x2=\"{}\" y2=\"{}\" stroke=\"#999\"/>\n", kMiddle, kMiddle, height);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& [label, v] = rows[i];
    const int y = static_cast<int>(i) * kRow + 5;
    const std::string shown = label.size() > 60 ? label.substr(0, 57) + "..." : label;
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", kLabel - 8, y + 15,
                       detail::escape(shown));
    const double w = largest > 0 ? std::abs(v) / largest * kHalf : 0;
    const double x = v >= 0 ? kMiddle : kMiddle - w;
    out += fmt::format("<rect x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" height=\"18\" fill=\"{}\"><title>{}</title></rect>\n",
                       x, y + 1, w, v >= 0 ? kSlowerColour : kFasterColour, detail::escape(label));
    const double tx = v >= 0 ? kMiddle + w + 6 : kMiddle - w - 6;
    out += fmt::format("<text x=\"{:.2f}\" y=\"{}\" text-anchor=\"{}\">{}</text>\n", tx, y + 15,
                       v >= 0 ? "start" : "end", signed_ns(v));
  }
  return out + "</svg>\n";
}

} // namespace

std::string render_diff_text(const TraceDiff& d, std::size_t top) {
  std::string out = "dreamscope diff\n";
  for (const auto& line : summary_lines(d)) out += line + "\n";
  for (const auto& p : parts(d, top)) out += detail::text_part(p);
  return out;
}

std::string render_diff_markdown(const TraceDiff& d, std::size_t top) {
  std::string out = fmt::format("# dreamscope diff: `{}` → `{}`\n\n", d.name_a, d.name_b);
  for (const auto& line : summary_lines(d)) out += "- " + line + "\n";
  for (const auto& p : parts(d, top)) out += detail::markdown_part(p);
  return out;
}

std::string render_diff_json(const TraceDiff& d) {
  using nlohmann::json;
  json j;
  j["schema"] = kDiffJsonSchema;
  auto side = [](const std::string& name, std::size_t steps, TimeNs median, TimeNs slowest, double gpu) {
    return json{{"name", name},
                {"steps", steps},
                {"step_median_ns", median},
                {"slowest_step_ns", slowest},
                {"gpu_per_step_ns", number(gpu)}};
  };
  j["a"] = side(d.name_a, d.steps_a, d.step_median_a, d.slowest_step_a, d.gpu_per_step_a);
  j["b"] = side(d.name_b, d.steps_b, d.step_median_b, d.slowest_step_b, d.gpu_per_step_b);
  j["matched_by"] = d.whole_trace ? "whole trace" : d.matched_by_number ? "number" : "position";
  j["threshold_pct"] = d.options.threshold_pct;
  j["steps"] = json::array();
  for (const auto& s : d.steps) {
    json js{{"number", s.number == kNoValue ? json(nullptr) : json(s.number)},
            {"label_a", s.label_a},
            {"label_b", s.label_b},
            {"a_ns", s.a == kNoValue ? json(nullptr) : json(s.a)},
            {"b_ns", s.b == kNoValue ? json(nullptr) : json(s.b)}};
    js["change_ns"] = s.matched() ? json(s.b - s.a) : json(nullptr);
    js["change_pct"] = s.matched() ? pct_json(static_cast<double>(s.a), static_cast<double>(s.b)) : json(nullptr);
    j["steps"].push_back(std::move(js));
  }
  j["operations"] = json::array();
  for (const auto& o : d.operations) j["operations"].push_back(operation_json(o));
  j["ranks"] = json::array();
  for (const auto& r : d.ranks) {
    j["ranks"].push_back({{"rank_a", r.rank_a},
                          {"rank_b", r.rank_b},
                          {"step_median_a_ns", r.step_median_a},
                          {"step_median_b_ns", r.step_median_b},
                          {"change_pct", pct_json(static_cast<double>(r.step_median_a), static_cast<double>(r.step_median_b))},
                          {"communication_change_ns", number(r.communication_change)},
                          {"cause", r.cause ? operation_json(*r.cause) : json(nullptr)}});
  }
  j["most_changed_rank"] = d.most_changed_rank ? json(d.ranks[*d.most_changed_rank].rank_a) : json(nullptr);
  if (!d.rank_note.empty()) j["rank_note"] = d.rank_note;
  json gates = json::object();
  for (const auto& [name, value] : diff_gate_values(d)) gates[name] = number(value);
  j["gates"] = std::move(gates);
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string render_diff_html(const TraceDiff& d, std::size_t top) {
  top = std::max<std::size_t>(top, 1);
  using detail::escape;
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  out += fmt::format("<title>dreamscope diff: {} → {}</title>\n<style>{}</style></head><body>\n",
                     escape(d.name_a), escape(d.name_b), detail::html_style());
  out += "<h1>dreamscope diff</h1>\n";
  out += "<p class=\"meta\">";
  for (const auto& line : summary_lines(d)) out += escape(line) + "<br>\n";
  out += "</p>\n";

  std::vector<std::pair<std::string, double>> impacts;
  for (const auto& o : d.operations) {
    if (o.change != DiffChange::Unchanged && impacts.size() < top) impacts.emplace_back(row_name(o), o.impact());
  }
  out += "<h2 id=\"chart-changes\">Impact on the step</h2>\n<p class=\"note\">Change in time per step of each "
         "operation, GPU work and CUDA call that changed, largest first: slower in red, faster in green.</p>\n";
  out += diverging_bars(impacts, "Impact on the step");
  std::vector<std::pair<std::string, double>> steps;
  for (const auto& s : d.steps) {
    if (s.matched() && steps.size() < top) steps.emplace_back(s.label_a, static_cast<double>(s.b - s.a));
  }
  out += "<h2 id=\"chart-steps\">Step duration, B against A</h2>\n";
  out += diverging_bars(steps, "Step duration change");

  for (const auto& p : parts(d, top)) {
    out += fmt::format("<h2>{}</h2>\n", escape(p.title));
    for (const auto& n : p.notes) out += fmt::format("<p class=\"note\">{}</p>\n", escape(n));
    for (const auto& [subtitle, table] : p.tables) {
      if (!subtitle.empty()) out += fmt::format("<h3>{}</h3>\n", escape(subtitle));
      out += detail::html_table(table);
    }
  }
  out += "</body></html>\n";
  return out;
}

} // namespace dreamscope::analyzers
