#include "dreamscope/analyzers/run_json.h"

#include "dreamscope/analyzers/report.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace dreamscope::analyzers {

namespace {

using nlohmann::json;

std::string dumped(const json& j) { return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n"; }

std::string source_position(const whatif::SourcePosition& p) {
  return p.line > 0 ? p.file + ":" + std::to_string(p.line) : p.file;
}

json critical_path_shares(const std::vector<whatif::CriticalPathShare>& shares) {
  json a = json::array();
  for (const auto& c : shares) a.push_back({{"what", c.what}, {"ns", c.time}});
  return a;
}

} // namespace

std::vector<std::size_t> listed_replay_steps(const whatif::ReplayReport& r, const StepListing& listing, bool json) {
  std::vector<TimeNs> durations;
  durations.reserve(r.steps.size());
  for (const auto& s : r.steps) durations.push_back(s.measured());
  const std::size_t limit = std::max<std::size_t>(listing.max_steps, 1);
  return listed_steps(durations, listing.all_steps ? durations.size()
                                 : json           ? std::max(limit, kJsonStepRows)
                                                  : limit);
}

std::string replay_json(const Trace& trace, const whatif::ReplayReport& r, std::string_view label,
                        const StepListing& listing, std::string_view predicted_path) {
  json j;
  j["trace"] = std::string(label);
  j["source"] = std::string(to_string(trace.source()));
  j["overhead_corrected"] = r.correction.has_value();
  j["dropped_events"] = trace.dropped_events();
  j["tasks"] = r.tasks;
  j["edges"] = r.edges;
  j["sync_actions"] = r.sync_actions;
  j["unscheduled_tasks"] = r.unscheduled;
  j["build_seconds"] = r.build_seconds;
  j["simulate_seconds"] = r.simulate_seconds;
  j["measured_ns"] = r.measured_span();
  j["predicted_ns"] = r.predicted_span();
  j["error"] = r.error();
  const std::vector<std::size_t> rows = listed_replay_steps(r, listing, true);
  j["step_count"] = r.steps.size();
  j["steps_left_out"] = r.steps.size() - rows.size();
  j["steps"] = json::array();
  for (std::size_t i : rows) {
    const auto& s = r.steps[i];
    j["steps"].push_back({{"index", i},
                          {"name", s.name},
                          {"measured_ns", s.measured()},
                          {"predicted_ns", s.predicted()},
                          {"measured_start_ns", s.measured_start},
                          {"predicted_start_ns", s.predicted_start},
                          {"error", s.error()}});
  }
  if (r.correction) {
    const auto& c = *r.correction;
    j["overhead"] = {{"range_ns", c.costs.range_ns},     {"marker_ns", c.costs.marker_ns},
                     {"cuda_api_ns", c.costs.cuda_api_ns}, {"cuda_launch_ns", c.costs.cuda_launch_ns},
                     {"launches_charged", c.launches_charged}, {"charged_ns", c.charged_ns},
                     {"removed_ns", c.removed_ns},       {"hidden_by_waits_ns", c.unabsorbed_ns},
                     {"events_charged", c.events_charged}, {"overhead_records", c.overhead_records},
                     {"events_charged_in_run", c.events_charged_in_run}, {"in_run_range_ns", c.in_run_range_ns},
                     {"counted_calls", c.counted_calls},
                     {"probe_steps", c.probe_steps}, {"probe_steps_measured", c.probe_steps_measured},
                     {"threads_by_probe_steps", c.threads_by_probe_steps},
                     {"runqueue_removed_ns", c.runqueue_removed_ns},
                     {"writer_spells", c.writer_spells}, {"writer_spells_measured", c.writer_spells_measured},
                     {"writer_slowdown", c.writer_slowdown >= 0 ? json(c.writer_slowdown) : json(nullptr)},
                     {"writer_slowdown_charged_ns", c.writer_slowdown_charged_ns},
                     {"tracer_writer_cpu_ns",
                      trace.tracer_writer_cpu_ns() == kNoValue ? json(nullptr) : json(trace.tracer_writer_cpu_ns())}};
  }
  const auto& w = r.warnings;
  j["warnings"] = {{"gpu_op_before_launch", w.gpu_op_before_launch},
                   {"sync_target_after_return", w.sync_target_after_return},
                   {"unknown_sync_stream", w.unknown_sync_stream},
                   {"unresolved_event", w.unresolved_event},
                   {"gpu_ops_without_launch", w.gpu_ops_without_launch},
                   {"sync_ops_skipped", w.sync_ops_skipped}};
  if (!predicted_path.empty()) j["predicted_trace"] = std::string(predicted_path);
  return dumped(j);
}

bool matched_nothing(const whatif::Prediction& p) {
  return std::all_of(p.effects.begin(), p.effects.end(),
                     [](const whatif::TransformEffect& e) { return e.tasks == 0 && e.op != "set_policy"; });
}

std::string whatif_json(const whatif::WhatIfReport& r, std::string_view label, std::string_view predicted_path) {
  json j;
  j["trace"] = std::string(label);
  j["tasks"] = r.tasks;
  j["steps"] = r.step_count;
  j["measured_step_ns"] = r.measured_step_median;
  j["replayed_step_ns"] = r.replayed_step_median;
  j["measured_span_ns"] = r.measured_span;
  j["replayed_span_ns"] = r.replayed_span;
  if (r.correction) {
    j["overhead_correction"] = {{"removed_ns", r.correction->removed_ns},
                                {"charged_ns", r.correction->charged_ns},
                                {"events_charged", r.correction->events_charged}};
  }
  j["critical_path"] = critical_path_shares(r.baseline_critical_path);
  j["predictions"] = json::array();
  for (const auto& p : r.predictions) {
    json jp{{"label", p.label},          {"scenarios", p.scenarios}, {"parameters", p.parameters},
            {"predicted_step_ns", p.step_median}, {"speedup", p.speedup}, {"span_ns", p.span},
            {"unscheduled_tasks", p.unscheduled}, {"critical_path", critical_path_shares(p.critical_path)},
            {"matched_nothing", matched_nothing(p)}};
    jp["changes"] = json::array();
    for (const auto& e : p.effects) {
      jp["changes"].push_back({{"op", e.op},
                               {"where", source_position(e.where)},
                               {"tasks", e.tasks},
                               {"before_ns", e.time_before},
                               {"after_ns", e.time_after},
                               {"detail", e.detail}});
    }
    j["predictions"].push_back(std::move(jp));
  }
  if (r.data_stalls) {
    const auto& d = *r.data_stalls;
    j["data_stalls"] = {{"traced_step_ns", d.traced_step},     {"cached_step_ns", d.cached_step},
                        {"synthetic_step_ns", d.synthetic_step}, {"fetch_stall_ns", d.fetch_stall()},
                        {"prep_stall_ns", d.prep_stall()},     {"basis", d.basis_text()}};
  }
  if (!predicted_path.empty()) j["predicted_trace"] = std::string(predicted_path);
  return dumped(j);
}

} // namespace dreamscope::analyzers
