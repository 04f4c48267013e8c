// The job report as text, Markdown, JSON and HTML, with the single-trace report's tables and
// charts (report_tables.h), so that both read alike.
#include "dreamscope/analyzers/job_analysis.h"

#include "dreamscope/analyzers/duration_text.h"

#include "report/report_tables.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>

namespace dreamscope::analyzers {

namespace {

using detail::Table;

struct JobSection {
  std::string id;
  std::string title;
  std::vector<std::string> notes;
  std::vector<std::pair<std::string, Table>> tables;
};

Table make_table(std::vector<std::string> header, std::vector<bool> numeric) {
  Table t;
  t.header = std::move(header);
  t.numeric = std::move(numeric);
  return t;
}

std::string us(TimeUs v) { return fmt::format("{}", v); }
std::string two(double v) { return fmt::format("{:.2f}", v); }
std::string share(TimeNs part, TimeNs whole) {
  return detail::format_pct(whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0);
}
std::string maybe_rank(std::int64_t r) { return r == kNoValue ? std::string("-") : std::to_string(r); }
std::string excess(TimeNs v) { return v > 0 ? "+" + format_duration(v) : format_duration(v); }

std::string cause_text(const StepStraggler& s) {
  if (!s.cause) return "-";
  std::string text(to_string(*s.cause));
  if (*s.cause == StragglerCause::OtherRank && s.held_by != kNoValue) text += fmt::format(" (rank {})", s.held_by);
  return text;
}

// The rows of a job's per-step table of steps lasting `durations`: ReportOptions' rule.
std::vector<std::size_t> job_step_rows(const JobReportOptions& o, const std::vector<TimeNs>& durations, bool json) {
  ReportOptions ro;
  ro.top = o.top;
  ro.all_steps = o.all_steps;
  return detail::step_rows(ro, durations, json);
}

// A step of the job lasts as long as its longest rank's.
std::vector<TimeNs> job_step_durations(const JobReport& r) {
  std::vector<TimeNs> out;
  out.reserve(r.steps.size());
  for (const StepStraggler& st : r.steps) {
    TimeNs longest = 0;
    for (const RankStepSplit& s : st.ranks) longest = std::max(longest, s.duration);
    out.push_back(longest);
  }
  return out;
}

// Each rank's steps added up.
std::vector<RankStepSplit> totals_per_rank(const JobReport& r, std::map<std::int64_t, std::int64_t>* steps = nullptr) {
  std::map<std::int64_t, RankStepSplit> by_rank;
  for (const StepStraggler& st : r.steps) {
    for (const RankStepSplit& s : st.ranks) {
      RankStepSplit& t = by_rank[s.rank];
      t.rank = s.rank;
      t.duration += s.duration;
      t.own_work += s.own_work;
      t.data_wait += s.data_wait;
      t.collective_wait += s.collective_wait;
      t.transfer += s.transfer;
      if (steps) ++(*steps)[s.rank];
    }
  }
  std::vector<RankStepSplit> out;
  for (auto& [rank, s] : by_rank) out.push_back(s);
  return out;
}

std::string hosts_text(const JobReport& r) {
  std::set<std::string> hosts;
  for (const RankSummary& s : r.ranks) {
    if (!s.host.empty()) hosts.insert(s.host);
  }
  if (hosts.empty()) return "hosts not recorded";
  return fmt::format("{} host{}", hosts.size(), hosts.size() > 1 ? "s" : "");
}

std::int64_t events_of(const JobReport& r) {
  std::int64_t n = 0;
  for (const RankSummary& s : r.ranks) n += s.events;
  return n;
}

JobSection hta_section(const JobReport& r) {
  const std::size_t top = std::max<std::size_t>(r.options.top, 1);
  JobSection s{"job-hta", "HTA per rank (µs, as Holistic Trace Analysis reports them)", {}, {}};
  s.notes.push_back(
      "Each rank as HTA's temporal breakdown, comm/comp overlap, idle time and launch statistics give "
      "it; kernel time by type summed over the ranks, as its multi-rank kernel breakdown.");
  Table temporal = make_table({"rank", "host", "idle", "compute", "non-compute", "kernel time", "idle %", "compute %",
                               "non-compute %", "comm/comp overlap %"},
                              {true, false, true, true, true, true, true, true, true, true});
  for (const RankSummary& k : r.ranks) {
    const TemporalBreakdown& t = k.hta.temporal;
    temporal.rows.push_back({std::to_string(k.rank), k.host.empty() ? "-" : k.host, us(t.idle), us(t.compute),
                             us(t.non_compute), us(t.kernel_time), two(t.idle_pct), two(t.compute_pct),
                             two(t.non_compute_pct),
                             k.hta.comm_comp_overlap_pct ? two(*k.hta.comm_comp_overlap_pct) : std::string("-")});
  }
  s.tables.emplace_back("Temporal breakdown and comm/comp overlap per rank", std::move(temporal));

  Table types = make_table({"kernel type", "sum", "%"}, {false, true, true});
  for (const JobKernelType& k : r.kernel_types) {
    types.rows.push_back({k.kernel_type, us(k.sum), fmt::format("{:.1f}", k.percentage)});
  }
  s.tables.emplace_back("Kernel time by type, all ranks", std::move(types));

  Table kernels = make_table({"kernel type", "name", "ranks", "count", "sum", "least (rank)", "most (rank)"},
                             {false, false, true, true, true, true, true});
  for (std::size_t i = 0; i < r.kernels.size() && i < top; ++i) {
    const JobKernel& k = r.kernels[i];
    kernels.rows.push_back({std::string(to_string(k.type)), k.name, std::to_string(k.ranks), std::to_string(k.count),
                            us(k.sum), fmt::format("{} ({})", k.min_rank_sum, k.min_rank),
                            fmt::format("{} ({})", k.max_rank_sum, k.max_rank)});
  }
  s.tables.emplace_back(
      fmt::format("Kernels across ranks (top {} of {})", std::min(top, r.kernels.size()), r.kernels.size()),
      std::move(kernels));

  Table idle = make_table({"rank", "device", "stream", "host_wait", "kernel_wait", "other", "host_wait ratio",
                           "kernel_wait ratio", "other ratio"},
                          std::vector<bool>(9, true));
  for (const RankSummary& k : r.ranks) {
    for (const StreamIdleTime& i : k.hta.idle_time) {
      idle.rows.push_back({std::to_string(k.rank), maybe_rank(i.device), maybe_rank(i.stream), us(i.host_wait),
                           us(i.kernel_wait), us(i.other), two(i.host_wait_ratio), two(i.kernel_wait_ratio),
                           two(i.other_ratio)});
    }
  }
  s.tables.emplace_back("Idle time per rank and stream", std::move(idle));

  Table launches = make_table({"rank", "launches", "mean cpu duration", "mean gpu duration", "mean launch delay",
                               "max launch delay", "gpu shorter than cpu"},
                              std::vector<bool>(7, true));
  for (const RankSummary& k : r.ranks) {
    const LaunchSummary& l = k.hta.launches;
    launches.rows.push_back({std::to_string(k.rank), std::to_string(l.count), two(l.mean_cpu_duration),
                             two(l.mean_gpu_duration), two(l.mean_launch_delay), us(l.max_launch_delay),
                             std::to_string(l.short_kernels)});
  }
  s.tables.emplace_back("Kernel launches per rank", std::move(launches));
  return s;
}

JobSection collectives_section(const JobReport& r) {
  const std::size_t top = std::max<std::size_t>(r.options.top, 1);
  JobSection s{"job-collectives", "Collectives across ranks", {}, {}};
  s.notes.push_back(fmt::format("{} collective(s) matched across the ranks from {} call(s).", r.instances, r.calls));
  s.notes.push_back(
      "Wait: time inside a collective before its last rank arrived (the rank waited for the others); "
      "transfer: the rest of the time inside it. Per rank over the union of its calls; per operation "
      "summed over the calls.");
  Table ranks = make_table({"rank", "calls", "in collectives", "wait", "transfer", "wait share", "arrived last",
                            "others' wait caused", "clock shift"},
                           std::vector<bool>(9, true));
  for (const RankCollectiveTime& c : r.collective_ranks) {
    ranks.rows.push_back({std::to_string(c.rank), std::to_string(c.calls), format_duration(c.in_collectives),
                          format_duration(c.wait), format_duration(c.transfer), share(c.wait, c.in_collectives),
                          std::to_string(c.last_arrivals), format_duration(c.caused_wait),
                          format_duration(c.clock_shift)});
  }
  s.tables.emplace_back("Collective wait against transfer, per rank", std::move(ranks));

  Table ops = make_table(
      {"communicator", "operation", "collectives", "calls", "bytes", "time", "wait", "transfer", "wait share"},
      {false, false, true, true, true, true, true, true, true});
  for (std::size_t i = 0; i < r.collective_ops.size() && i < top; ++i) {
    const CollectiveOpTime& o = r.collective_ops[i];
    ops.rows.push_back({o.communicator.empty() ? "(default)" : o.communicator, o.op, std::to_string(o.instances),
                        std::to_string(o.calls), std::to_string(o.bytes), format_duration(o.time),
                        format_duration(o.wait), format_duration(o.transfer), share(o.wait, o.time)});
  }
  s.tables.emplace_back("Per communicator and operation", std::move(ops));
  return s;
}

JobSection straggler_section(const JobReport& r) {
  JobSection s{"job-stragglers", "The straggler of every step", {}, {}};
  s.notes.push_back(
      "Straggler: the rank the others waited for, the last to arrive at the step's collectives weighted "
      "by the others' wait it caused (its cost to the job). Why: its time since the ranks were last "
      "together against the median of the others': own compute, data-loader wait (input pipeline), "
      "waiting in an earlier collective for another rank, its own transfers (docs/multi-rank.md).");
  std::map<std::int64_t, std::pair<std::int64_t, TimeNs>> by_straggler; // rank -> (steps, cost)
  std::int64_t with_straggler = 0;
  for (const StepStraggler& st : r.steps) {
    if (st.straggler == kNoValue) continue;
    ++with_straggler;
    auto& [n, cost] = by_straggler[st.straggler];
    ++n;
    cost += st.caused_wait;
  }
  if (!by_straggler.empty()) {
    const auto worst = std::max_element(by_straggler.begin(), by_straggler.end(),
                                        [](const auto& a, const auto& b) { return a.second.second < b.second.second; });
    s.notes.push_back(
        fmt::format("Most costly straggler: rank {}, the straggler of {} of {} step(s), which cost the "
                    "others {} of waiting.",
                    worst->first, worst->second.first, with_straggler, format_duration(worst->second.second)));
  }
  Table steps = make_table({"step", "straggler", "others' wait caused", "arrived last", "late by", "why", "compute",
                            "input", "held", "transfer", "all ranks' wait"},
                           {false, true, true, true, true, false, true, true, true, true, true});
  const std::vector<std::size_t> listed = job_step_rows(r.options, job_step_durations(r), false);
  for (std::size_t i : listed) {
    const StepStraggler& st = r.steps[i];
    if (st.straggler == kNoValue) {
      steps.rows.push_back(
          {st.name, "-", "0 ns", "0", "-", "no rank waited", "-", "-", "-", "-", format_duration(st.job_wait)});
      continue;
    }
    steps.rows.push_back({st.name, std::to_string(st.straggler), format_duration(st.caused_wait),
                          std::to_string(st.late_arrivals), format_duration(st.late_by), cause_text(st),
                          excess(st.excess_compute), excess(st.excess_input), excess(st.excess_held),
                          excess(st.excess_transfer), format_duration(st.job_wait)});
  }
  if (listed.size() < r.steps.size()) s.notes.push_back(listed_steps_note(listed.size(), r.steps.size()));
  s.tables.emplace_back("Per step (compute, input, held, transfer: the straggler's beyond the others' median)",
                        std::move(steps));

  std::map<std::int64_t, std::int64_t> count;
  Table ranks = make_table({"rank", "steps", "time", "own work", "data wait", "collective wait", "transfer"},
                           std::vector<bool>(7, true));
  for (const RankStepSplit& t : totals_per_rank(r, &count)) {
    ranks.rows.push_back({std::to_string(t.rank), std::to_string(count[t.rank]), format_duration(t.duration),
                          format_duration(t.own_work), format_duration(t.data_wait), format_duration(t.collective_wait),
                          format_duration(t.transfer)});
  }
  s.tables.emplace_back("Each rank's steps, split", std::move(ranks));
  return s;
}

std::vector<JobSection> job_sections(const JobReport& r) {
  std::vector<JobSection> out;
  if (r.options.hta) out.push_back(hta_section(r));
  if (r.options.collectives) out.push_back(collectives_section(r));
  if (r.options.stragglers) out.push_back(straggler_section(r));
  return out;
}

std::string headline(const JobReport& r) {
  return fmt::format("job of {} rank{} (world size {}), {}; span {}, {} events", r.ranks.size(),
                     r.ranks.size() > 1 ? "s" : "", r.world_size(), hosts_text(r), format_duration(r.end - r.begin),
                     events_of(r));
}

// Colours of the split of a rank's steps: own work, data wait, collective wait, transfer.
constexpr const char* kSplitColours[] = {"#4e79a7", "#9c755f", "#e15759", "#76b7b2"};

std::string rank_split_chart(const JobReport& r) {
  std::vector<detail::StackedRow> rows;
  for (const RankStepSplit& t : totals_per_rank(r)) {
    rows.push_back({fmt::format("rank {}", t.rank),
                    {static_cast<double>(t.own_work), static_cast<double>(t.data_wait),
                     static_cast<double>(t.collective_wait), static_cast<double>(t.transfer)},
                    format_duration(t.duration)});
  }
  return detail::legend({{"own work", kSplitColours[0]},
                         {"data wait", kSplitColours[1]},
                         {"collective wait", kSplitColours[2]},
                         {"transfer", kSplitColours[3]}}) +
         detail::stacked_bars(rows, std::vector<const char*>(std::begin(kSplitColours), std::end(kSplitColours)),
                              "Each rank's steps, split");
}

} // namespace

std::string render_job_text(const JobReport& r) {
  std::string out = "dreamscope analyze: " + headline(r) + "\n";
  for (const auto& n : r.notes) out += n + "\n";
  for (const JobSection& s : job_sections(r)) out += detail::text_part(s);
  return out;
}

std::string render_job_markdown(const JobReport& r) {
  std::string out = "# dreamscope analyze: " + headline(r) + "\n\n";
  for (const auto& n : r.notes) out += n + "\n\n";
  for (const JobSection& s : job_sections(r)) out += detail::markdown_part(s);
  return out;
}

std::string render_job_html(const JobReport& r) {
  using detail::escape;
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  out += fmt::format("<title>dreamscope analyze: {}</title>\n<style>{}</style></head><body>\n", escape(headline(r)),
                     detail::html_style());
  out += fmt::format("<h1>dreamscope analyze</h1>\n<p class=\"meta\">{}</p>\n", escape(headline(r)));
  for (const auto& n : r.notes) out += fmt::format("<p class=\"note\">{}</p>\n", escape(n));
  if (r.options.stragglers) {
    out +=
        "<h2 id=\"chart-job-ranks\">Each rank's steps</h2>\n<p class=\"note\">Every rank's steps added up: its own "
        "work, its data-loader wait, its wait in collectives for the last rank, and the collectives' "
        "transfers.</p>\n";
    out += rank_split_chart(r);
  }
  for (const JobSection& s : job_sections(r)) {
    out += fmt::format("<h2 id=\"{}\">{}</h2>\n", s.id, escape(s.title));
    for (const auto& n : s.notes) out += fmt::format("<p class=\"note\">{}</p>\n", escape(n));
    for (const auto& [subtitle, table] : s.tables) {
      if (!subtitle.empty()) out += fmt::format("<h3>{}</h3>\n", escape(subtitle));
      out += detail::html_table(table);
    }
  }
  out += "</body></html>\n";
  return out;
}

std::string render_job_json(const JobReport& r) {
  using nlohmann::json;
  auto maybe = [](std::int64_t v) { return v == kNoValue ? json(nullptr) : json(v); };
  json j;
  j["schema"] = kJobReportJsonSchema;
  j["job"] = {{"ranks", r.ranks.size()}, {"world_size", r.world_size()},   {"begin_ns", r.begin},
              {"end_ns", r.end},         {"duration_ns", r.end - r.begin}, {"events", events_of(r)},
              {"notes", r.notes}};
  json sections = json::array();
  if (r.options.hta) sections.push_back("hta");
  if (r.options.collectives) sections.push_back("collectives");
  if (r.options.stragglers) sections.push_back("stragglers");
  j["sections"] = sections;

  json ranks = json::array();
  for (std::size_t i = 0; i < r.ranks.size(); ++i) {
    const RankSummary& s = r.ranks[i];
    json rank = {{"rank", s.rank},
                 {"local_rank", maybe(s.local_rank)},
                 {"world_size", maybe(s.world_size)},
                 {"host", s.host},
                 {"trace", s.trace_name},
                 {"source", s.source},
                 {"begin_ns", s.begin},
                 {"end_ns", s.end},
                 {"events", s.events},
                 {"collective_calls", s.collectives.size()},
                 {"data_source", s.data_source}};
    if (r.options.hta) {
      const TemporalBreakdown& t = s.hta.temporal;
      json h;
      h["unit"] = "us";
      h["profiler_steps"] = s.hta.profiler_steps;
      h["step_filter_applied"] = s.hta.step_filter_applied;
      h["temporal"] = {{"idle_us", t.idle},
                       {"compute_us", t.compute},
                       {"non_compute_us", t.non_compute},
                       {"kernel_time_us", t.kernel_time},
                       {"idle_pct", t.idle_pct},
                       {"compute_pct", t.compute_pct},
                       {"non_compute_pct", t.non_compute_pct}};
      h["comm_comp_overlap_pct"] = s.hta.comm_comp_overlap_pct ? json(*s.hta.comm_comp_overlap_pct) : json(nullptr);
      h["kernel_types"] = json::array();
      for (const auto& k : s.hta.kernel_types) {
        h["kernel_types"].push_back({{"kernel_type", k.kernel_type}, {"sum_us", k.sum}, {"percentage", k.percentage}});
      }
      h["kernels"] = json::array();
      for (const auto& k : s.hta.kernels) {
        h["kernels"].push_back({{"name", k.name},
                                {"kernel_type", to_string(k.type)},
                                {"count", k.count},
                                {"sum_us", k.sum},
                                {"min_us", k.min},
                                {"max_us", k.max},
                                {"mean_us", k.mean},
                                {"stddev_us", k.stddev}});
      }
      h["idle_time"] = json::array();
      for (const auto& x : s.hta.idle_time) {
        h["idle_time"].push_back({{"device", maybe(x.device)},
                                  {"stream", maybe(x.stream)},
                                  {"host_wait_us", x.host_wait},
                                  {"kernel_wait_us", x.kernel_wait},
                                  {"other_us", x.other},
                                  {"host_wait_ratio", x.host_wait_ratio},
                                  {"kernel_wait_ratio", x.kernel_wait_ratio},
                                  {"other_ratio", x.other_ratio}});
      }
      const LaunchSummary& l = s.hta.launches;
      h["launch_summary"] = {{"count", l.count},
                             {"mean_cpu_duration_us", l.mean_cpu_duration},
                             {"mean_gpu_duration_us", l.mean_gpu_duration},
                             {"mean_launch_delay_us", l.mean_launch_delay},
                             {"max_launch_delay_us", l.max_launch_delay},
                             {"short_kernels", l.short_kernels}};
      rank["hta"] = h;
    }
    std::vector<TimeNs> durations;
    for (const RankStep& st : s.steps) durations.push_back(st.end - st.start);
    const std::vector<std::size_t> rows = job_step_rows(r.options, durations, true);
    json steps = json::array();
    for (std::size_t k : rows) {
      const RankStep& st = s.steps[k];
      steps.push_back({{"index", k},
                       {"number", maybe(st.number)},
                       {"name", st.name},
                       {"start_ns", st.start},
                       {"end_ns", st.end},
                       {"data_wait_ns", st.data_wait}});
    }
    rank["step_count"] = s.steps.size();
    rank["steps_left_out"] = s.steps.size() - rows.size();
    rank["steps"] = steps;
    ranks.push_back(rank);
  }
  j["ranks"] = ranks;

  if (r.options.hta) {
    json types = json::array();
    for (const auto& k : r.kernel_types) {
      types.push_back({{"kernel_type", k.kernel_type}, {"sum_us", k.sum}, {"percentage", k.percentage}});
    }
    json kernels = json::array();
    for (const auto& k : r.kernels) {
      kernels.push_back({{"name", k.name},
                         {"kernel_type", to_string(k.type)},
                         {"ranks", k.ranks},
                         {"count", k.count},
                         {"sum_us", k.sum},
                         {"min_rank_sum_us", k.min_rank_sum},
                         {"min_rank", k.min_rank},
                         {"max_rank_sum_us", k.max_rank_sum},
                         {"max_rank", k.max_rank}});
    }
    j["hta"] = {{"unit", "us"}, {"kernel_types", types}, {"kernels", kernels}};
  }

  if (r.options.collectives) {
    json per_rank = json::array();
    for (const auto& c : r.collective_ranks) {
      per_rank.push_back({{"rank", c.rank},
                          {"calls", c.calls},
                          {"in_collectives_ns", c.in_collectives},
                          {"wait_ns", c.wait},
                          {"transfer_ns", c.transfer},
                          {"last_arrivals", c.last_arrivals},
                          {"caused_wait_ns", c.caused_wait},
                          {"clock_shift_ns", c.clock_shift}});
    }
    json ops = json::array();
    for (const auto& o : r.collective_ops) {
      ops.push_back({{"communicator", o.communicator},
                     {"op", o.op},
                     {"instances", o.instances},
                     {"calls", o.calls},
                     {"bytes", o.bytes},
                     {"time_ns", o.time},
                     {"wait_ns", o.wait},
                     {"transfer_ns", o.transfer}});
    }
    j["collectives"] = {
        {"instances", r.instances},           {"calls", r.calls},  {"unmatched_calls", r.unmatched_calls},
        {"mismatched_ops", r.mismatched_ops}, {"ranks", per_rank}, {"operations", ops}};
  }

  if (r.options.stragglers) {
    auto split = [&](const RankStepSplit& s) {
      return json{{"rank", s.rank},
                  {"duration_ns", s.duration},
                  {"own_work_ns", s.own_work},
                  {"data_wait_ns", s.data_wait},
                  {"collective_wait_ns", s.collective_wait},
                  {"transfer_ns", s.transfer}};
    };
    const std::vector<std::size_t> rows = job_step_rows(r.options, job_step_durations(r), true);
    json steps = json::array();
    for (std::size_t k : rows) {
      const StepStraggler& st = r.steps[k];
      json ranks_split = json::array();
      for (const auto& s : st.ranks) ranks_split.push_back(split(s));
      steps.push_back({{"index", k},
                       {"step", maybe(st.step)},
                       {"name", st.name},
                       {"straggler", maybe(st.straggler)},
                       {"caused_wait_ns", st.caused_wait},
                       {"late_arrivals", st.late_arrivals},
                       {"late_by_ns", st.late_by},
                       {"cause", st.cause ? json(to_string(*st.cause)) : json(nullptr)},
                       {"excess_compute_ns", st.excess_compute},
                       {"excess_input_ns", st.excess_input},
                       {"excess_held_ns", st.excess_held},
                       {"excess_transfer_ns", st.excess_transfer},
                       {"held_by", maybe(st.held_by)},
                       {"job_wait_ns", st.job_wait},
                       {"ranks", ranks_split}});
    }
    json totals = json::array();
    for (const RankStepSplit& t : totals_per_rank(r)) totals.push_back(split(t));
    j["stragglers"] = {{"step_count", r.steps.size()},
                       {"steps_left_out", r.steps.size() - rows.size()},
                       {"steps", steps},
                       {"ranks", totals}};
  }
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

} // namespace dreamscope::analyzers
