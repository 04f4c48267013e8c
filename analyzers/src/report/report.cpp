// Runs the chosen analyses once and renders them as JSON.
#include "dreamscope/analyzers/report.h"

#include "dreamscope/analyzers/critical_path.h"
#include "dreamscope/analyzers/hta.h"
#include "dreamscope/analyzers/pipeline.h"
#include "dreamscope/analyzers/tensorboard.h"

#include "common/intervals.h"
#include "common/json_text.h"
#include "report/report_tables.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace dreamscope::analyzers {

std::string_view to_string(ReportSection s) {
  switch (s) {
    case ReportSection::CrossStack: return "cross-stack";
    case ReportSection::Hta: return "hta";
    case ReportSection::Steps: return "steps";
    case ReportSection::Gpu: return "gpu";
    case ReportSection::DataStalls: return "data-stalls";
    case ReportSection::TopKernels: return "top-kernels";
    case ReportSection::CriticalPath: return "critical-path";
  }
  return "unknown";
}

bool reads_operator_args(ReportSection s) { return s == ReportSection::Steps || s == ReportSection::Gpu; }

bool reads_operators(ReportSection s) {
  return reads_operator_args(s) || s == ReportSection::CrossStack || s == ReportSection::CriticalPath;
}

std::optional<ReportSection> report_section_from_string(std::string_view s) {
  for (ReportSection r : kAllSections) {
    if (to_string(r) == s) return r;
  }
  return std::nullopt;
}

namespace {

struct StepParts {
  std::size_t first, slowest, median;
};

StepParts step_parts(std::size_t limit) { return {(limit + 2) / 3, (limit + 1) / 3, limit / 3}; }

} // namespace

std::vector<std::size_t> listed_steps(const std::vector<TimeNs>& durations, std::size_t limit) {
  const std::size_t n = durations.size();
  std::vector<std::size_t> rows;
  if (n <= limit) {
    rows.resize(n);
    for (std::size_t i = 0; i < n; ++i) rows[i] = i;
    return rows;
  }
  const StepParts parts = step_parts(limit);
  std::vector<char> taken(n, 0);
  for (std::size_t i = 0; i < parts.first; ++i) taken[i] = 1;
  // Slowest first, the earlier step first among equals: the same trace lists the same steps.
  std::vector<std::size_t> by_duration(n);
  for (std::size_t i = 0; i < n; ++i) by_duration[i] = i;
  std::stable_sort(by_duration.begin(), by_duration.end(),
                   [&](std::size_t a, std::size_t b) { return durations[a] > durations[b]; });
  std::size_t want = 0;
  auto take = [&](std::size_t position) {
    if (want > 0 && !taken[by_duration[position]]) {
      taken[by_duration[position]] = 1;
      --want;
    }
  };
  want = parts.slowest;
  for (std::size_t k = 0; k < n && want > 0; ++k) take(k);
  // Outwards from the median, one below then one above, so that the part straddles it.
  want = parts.median;
  auto below = static_cast<std::ptrdiff_t>(n / 2), above = below + 1;
  const auto end = static_cast<std::ptrdiff_t>(n);
  while (want > 0 && (below >= 0 || above < end)) {
    if (below >= 0) take(static_cast<std::size_t>(below--));
    if (above < end) take(static_cast<std::size_t>(above++));
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (taken[i]) rows.push_back(i);
  }
  return rows;
}

std::string listed_steps_note(std::size_t listed, std::size_t total) {
  if (listed >= total) return {};
  const StepParts p = step_parts(listed);
  std::vector<std::string> parts;
  if (p.first > 0) parts.push_back("the first " + std::to_string(p.first));
  if (p.slowest > 0) parts.push_back("the " + std::to_string(p.slowest) + " slowest");
  if (p.median > 0) parts.push_back(std::to_string(p.median) + " around the median duration");
  std::string which;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    which += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  }
  return std::to_string(listed) + " of " + std::to_string(total) + " steps listed: " + which +
         "; --all-steps lists every step.";
}

bool AnalysisReport::has(ReportSection s) const {
  return std::find(options.sections.begin(), options.sections.end(), s) != options.sections.end();
}

namespace detail {

std::size_t step_limit(const ReportOptions& options, bool json) {
  const std::size_t top = std::max<std::size_t>(options.top, 1);
  return options.all_steps ? static_cast<std::size_t>(-1) : json ? std::max(top, kJsonStepRows) : top;
}

std::vector<std::size_t> step_rows(const ReportOptions& options, const std::vector<TimeNs>& durations, bool json) {
  return listed_steps(durations, step_limit(options, json));
}

const CriticalPathSummary* step_path(const CriticalPathReport& c, std::size_t index) {
  const auto it = std::lower_bound(c.steps.begin(), c.steps.end(), index,
                                   [](const CriticalPathSummary& s, std::size_t i) { return s.index < i; });
  return it != c.steps.end() && it->index == index ? &*it : nullptr;
}

std::string track_label(const Trace& trace, TrackId t) {
  const TrackInfo& info = trace.tracks()[t];
  if (info.kind == TrackKind::GpuStream) {
    const std::int64_t ordinal = info.device < trace.devices().size() ? trace.devices()[info.device].ordinal : 0;
    // Ops whose source named no stream (some MTIA DMA requests) share one row.
    if (info.stream == kNoValue) return "GPU " + std::to_string(ordinal) + " (no stream)";
    return "GPU " + std::to_string(ordinal) + " stream " + std::to_string(info.stream);
  }
  const std::string tid = info.tid == kNoValue ? std::string("?") : std::to_string(info.tid);
  // Importers often name a thread after its id already ("thread 42 (main)").
  if (!info.name.empty() && info.name.find(tid) != std::string::npos) return info.name;
  return "thread " + tid + (info.name.empty() ? "" : " " + info.name);
}

} // namespace detail

namespace {


TimelineOverview timeline_overview(const Trace& trace, std::size_t bins) {
  TimelineOverview tl;
  tl.begin = trace.begin_time();
  tl.end = trace.end_time();
  if (tl.end <= tl.begin || bins == 0) return tl;
  const double bin_ns = static_cast<double>(tl.end - tl.begin) / static_cast<double>(bins);
  const auto& ann = trace.annotations();
  const auto& api = trace.cuda_api();
  const auto& gpu = trace.gpu_ops();
  // GPU streams first, then threads; each row is the union of the track's events.
  std::vector<TrackId> order(trace.tracks().size());
  for (TrackId t{0}; t < order.size(); ++t) order[t] = t;
  std::stable_sort(order.begin(), order.end(), [&](TrackId a, TrackId b) {
    return trace.tracks()[a].kind == TrackKind::GpuStream && trace.tracks()[b].kind != TrackKind::GpuStream;
  });
  for (TrackId t : order) {
    std::vector<detail::Interval> spans;
    for (EventRange r = trace.gpu_ops_on(t); r.begin < r.end; ++r.begin) {
      if (gpu.kind[r.begin] != GpuOpKind::Sync) spans.push_back({gpu.start[r.begin], gpu.end[r.begin]});
    }
    for (EventRange r = trace.cuda_api_on(t); r.begin < r.end; ++r.begin) spans.push_back({api.start[r.begin], api.end[r.begin]});
    if (trace.tracks()[t].kind == TrackKind::CpuThread) {
      for (EventRange r = trace.annotations_on(t); r.begin < r.end; ++r.begin) {
        if (ann.depth[r.begin] == 0) spans.push_back({ann.start[r.begin], ann.end[r.begin]});
      }
    }
    if (spans.empty()) continue;
    TimelineRow row{detail::track_label(trace, t), trace.tracks()[t].kind, std::vector<float>(bins, 0.0f)};
    for (const detail::Interval& s : detail::merge_intervals(std::move(spans))) {
      const double a = static_cast<double>(s.start - tl.begin) / bin_ns;
      const double b = static_cast<double>(s.end - tl.begin) / bin_ns;
      for (auto i = static_cast<std::size_t>(a); i < bins && static_cast<double>(i) < b; ++i) {
        const double lo = std::max(a, static_cast<double>(i));
        const double hi = std::min(b, static_cast<double>(i + 1));
        row.busy[i] += static_cast<float>(hi - lo);
      }
    }
    for (float& f : row.busy) f = std::min(f, 1.0f);
    tl.rows.push_back(std::move(row));
  }
  return tl;
}

} // namespace

AnalysisReport analyze_trace(const Trace& trace, std::string trace_name, const ReportOptions& options) {
  AnalysisReport r;
  r.trace_name = std::move(trace_name);
  r.source = std::string(to_string(trace.source()));
  r.begin = trace.begin_time();
  r.end = trace.end_time();
  r.events = trace.event_count() + static_cast<std::size_t>(summarized_event_count(trace));
  r.options = options;
  if (r.has(ReportSection::CrossStack)) r.cross_stack = cross_stack_breakdown(trace);
  if (r.has(ReportSection::Hta)) r.hta = hta_analyze(trace, options.hta);
  if (r.has(ReportSection::Steps)) r.steps = step_breakdown(trace);
  if (r.has(ReportSection::Gpu)) r.gpu = gpu_efficiency(trace);
  if (r.has(ReportSection::DataStalls)) r.data_stalls = data_stalls(trace);
  if (r.has(ReportSection::TopKernels)) r.top_kernels = top_kernels(trace, std::max<std::size_t>(options.top, 1));
  // The JSON's steps: every other format lists some of them (listed_steps picks the fewer
  // rows of a table among the more of another).
  if (r.has(ReportSection::CriticalPath)) {
    r.critical_path = critical_path_analysis(trace, std::max<std::size_t>(options.top, 1), detail::step_limit(options, true));
  }
  r.timeline = timeline_overview(trace, options.timeline_bins);
  return r;
}

// Each section is a document of its short members; its long arrays (one row per operation,
// kernel, launch, annotation name or step) are written a row at a time (json_text.h). The
// text is what dump(2) of the whole report as one document would be.
std::string render_json(const AnalysisReport& r) {
  using nlohmann::json;
  using detail::json_at;
  using detail::json_members;
  using detail::json_object;
  using detail::json_rows;
  auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  detail::JsonMembers doc; // the report's members, nested one deep
  doc["schema"] = json_at(kReportJsonSchema, 1);
  doc["trace"] = json_at({{"name", r.trace_name}, {"source", r.source},      {"begin_ns", r.begin},
                          {"end_ns", r.end},      {"duration_ns", r.end - r.begin}, {"events", r.events}},
                         1);
  json sections = json::array();
  for (ReportSection s : r.options.sections) sections.push_back(to_string(s));
  doc["sections"] = json_at(sections, 1);

  if (r.cross_stack) {
    auto op = [](const OperationTime& o) {
      return json{{"name", o.name},
                  {"instances", o.instances},
                  {"cpu_framework_ns", o.cpu_framework},
                  {"cpu_cuda_api_ns", o.cpu_cuda_api},
                  {"gpu_only_ns", o.gpu_only},
                  {"cpu_gpu_overlap_ns", o.cpu_gpu_overlap},
                  {"total_ns", o.total()}};
    };
    const auto& ops = r.cross_stack->operations;
    detail::JsonMembers cs;
    cs["operations"] = json_rows(ops.size(), 2, [&](std::size_t i) { return op(ops[i]); });
    cs["all"] = json_at(op(r.cross_stack->all), 2);
    doc["cross_stack"] = json_object(std::move(cs), 1);
  }

  if (r.hta) {
    const HtaReport& h = *r.hta;
    json hj;
    hj["unit"] = "us";
    hj["profiler_steps"] = h.profiler_steps;
    hj["step_filter_applied"] = h.step_filter_applied;
    const TemporalBreakdown& t = h.temporal;
    hj["temporal"] = {{"idle_us", t.idle},          {"compute_us", t.compute},
                      {"non_compute_us", t.non_compute}, {"kernel_time_us", t.kernel_time},
                      {"idle_pct", t.idle_pct},     {"compute_pct", t.compute_pct},
                      {"non_compute_pct", t.non_compute_pct}};
    hj["idle_time"] = json::array();
    for (const auto& s : h.idle_time) {
      hj["idle_time"].push_back({{"device", s.device},
                                 {"stream", s.stream},
                                 {"host_wait_us", s.host_wait},
                                 {"kernel_wait_us", s.kernel_wait},
                                 {"other_us", s.other},
                                 {"host_wait_ratio", s.host_wait_ratio},
                                 {"kernel_wait_ratio", s.kernel_wait_ratio},
                                 {"other_ratio", s.other_ratio}});
    }
    hj["kernel_types"] = json::array();
    for (const auto& k : h.kernels.by_type) {
      hj["kernel_types"].push_back({{"kernel_type", k.kernel_type}, {"sum_us", k.sum}, {"percentage", k.percentage}});
    }
    hj["comm_comp_overlap_pct"] = opt(h.comm_comp_overlap_pct);
    const LaunchSummary& ls = h.launch_summary;
    hj["launch_summary"] = {{"count", ls.count},
                            {"mean_cpu_duration_us", ls.mean_cpu_duration},
                            {"mean_gpu_duration_us", ls.mean_gpu_duration},
                            {"mean_launch_delay_us", ls.mean_launch_delay},
                            {"max_launch_delay_us", ls.max_launch_delay},
                            {"short_kernels", ls.short_kernels}};
    // Rows as arrays: a large trace has one per launch.
    hj["launch_columns"] = {"correlation", "runtime_name", "kernel_name", "cpu_duration_us", "gpu_duration_us",
                            "launch_delay_us"};
    detail::JsonMembers hm = json_members(hj, 1);
    const auto& kernels = h.kernels.by_name;
    hm["kernels"] = json_rows(kernels.size(), 2, [&](std::size_t i) {
      const KernelNameStats& k = kernels[i];
      return json{{"name", k.name},   {"kernel_type", to_string(k.type)}, {"count", k.count},
                  {"sum_us", k.sum},  {"min_us", k.min},                   {"max_us", k.max},
                  {"mean_us", k.mean}, {"stddev_us", k.stddev}};
    });
    hm["launches"] = json_rows(h.launches.size(), 2, [&](std::size_t i) {
      const auto& l = h.launches[i];
      return json::array({l.correlation, l.runtime_name, l.kernel_name, l.cpu_duration, l.gpu_duration, l.launch_delay});
    });
    hm["queue_length"] = detail::json_texts(h.queue_length.size(), 2, [&](std::size_t i) {
      const auto& q = h.queue_length[i];
      // A stream's points are one per change of its queue length: written a point at a time too.
      detail::JsonMembers qm =
          json_members(json{{"device", q.device}, {"stream", q.stream}, {"max", q.max}, {"mean", q.mean}}, 3);
      qm["points"] = json_rows(q.series.size(), 4, [&](std::size_t p) {
        return json::array({q.series[p].ts, q.series[p].queue_length});
      });
      return json_object(std::move(qm), 3);
    });
    auto annotations = [&](const std::vector<AnnotationTotal>& v) {
      return json_rows(v.size(), 2, [&](std::size_t i) {
        return json{{"name", v[i].name}, {"count", v[i].count}, {"sum_us", v[i].sum}};
      });
    };
    hm["cpu_annotations"] = annotations(h.cpu_annotations);
    hm["gpu_annotations"] = annotations(h.gpu_annotations);
    doc["hta"] = json_object(std::move(hm), 1);
  }

  if (r.steps) {
    json cats = json::array();
    for (std::size_t c = 0; c < kStepCategories; ++c) cats.push_back(to_string(static_cast<StepCategory>(c)));
    auto times = [](const std::array<TimeNs, kStepCategories>& a) {
      json o = json::object();
      for (std::size_t c = 0; c < kStepCategories; ++c) o[std::string(to_string(static_cast<StepCategory>(c)))] = a[c];
      return o;
    };
    std::vector<TimeNs> durations;
    for (const auto& s : r.steps->steps) durations.push_back(s.duration());
    const std::vector<std::size_t> rows = detail::step_rows(r.options, durations, true);
    detail::JsonMembers sm = json_members({{"categories", cats},
                                           {"step_count", durations.size()},
                                           {"steps_left_out", durations.size() - rows.size()},
                                           {"average_ns", times(r.steps->average)},
                                           {"average_duration_ns", r.steps->average_duration}},
                                          1);
    sm["steps"] = json_rows(rows.size(), 2, [&](std::size_t k) {
      const StepTime& s = r.steps->steps[rows[k]];
      return json{{"index", rows[k]},
                  {"name", s.name},
                  {"start_ns", s.start},
                  {"end_ns", s.end},
                  {"host_start_ns", s.host_start},
                  {"host_end_ns", s.host_end},
                  {"device_ops", s.device_ops},
                  {"time_ns", times(s.time)}};
    });
    doc["steps"] = json_object(std::move(sm), 1);
  }

  if (r.gpu) {
    json gpu = json::array();
    for (const auto& g : *r.gpu) {
      gpu.push_back({{"device", g.device},
                     {"name", g.name},
                     {"steps_time_ns", g.steps_time},
                     {"busy_ns", g.busy},
                     {"gpu_utilization", g.gpu_utilization},
                     {"sm_efficiency", opt(g.sm_efficiency)},
                     {"achieved_occupancy", opt(g.achieved_occupancy)}});
    }
    doc["gpu"] = json_at(gpu, 1);
  }

  if (r.data_stalls) {
    std::vector<TimeNs> durations;
    for (const auto& s : r.data_stalls->steps) durations.push_back(s.end - s.start);
    const std::vector<std::size_t> rows = detail::step_rows(r.options, durations, true);
    detail::JsonMembers dm = json_members({{"source", r.data_stalls->source},
                                           {"total_wait_ns", r.data_stalls->total_wait},
                                           {"total_time_ns", r.data_stalls->total_time},
                                           {"step_count", durations.size()},
                                           {"steps_left_out", durations.size() - rows.size()}},
                                          1);
    dm["steps"] = json_rows(rows.size(), 2, [&](std::size_t k) {
      const StepDataStall& s = r.data_stalls->steps[rows[k]];
      return json{{"index", rows[k]},          {"step", s.step},       {"start_ns", s.start},
                  {"end_ns", s.end},           {"data_wait_ns", s.data_wait},
                  {"fetch_ns", s.fetch},       {"prep_ns", s.prep},
                  {"batches", s.batches},      {"stall_fraction", s.stall_fraction()}};
    });
    doc["data_stalls"] = json_object(std::move(dm), 1);
  }

  if (r.top_kernels) {
    json kernels = json::array();
    for (const auto& k : *r.top_kernels) {
      kernels.push_back({{"name", k.name}, {"count", k.count}, {"total_ns", k.total},
                         {"min_ns", k.min}, {"max_ns", k.max},   {"share", k.share}});
    }
    doc["top_kernels"] = json_at(kernels, 1);
  }
  if (r.critical_path) {
    const CriticalPathReport& c = *r.critical_path;
    auto summary = [](const CriticalPathSummary& s) {
      json by_category = json::object();
      for (std::size_t i = 0; i < kPathCategories; ++i) {
        by_category[std::string(to_string(static_cast<PathCategory>(i)))] = s.by_category[i];
      }
      json split = json::array();
      for (const auto& p : s.split) {
        split.push_back({{"category", to_string(p.category)}, {"resource", p.resource}, {"time_ns", p.time},
                         {"hops", p.hops}, {"share", p.share}});
      }
      json ops = json::array();
      for (const auto& o : s.operations) {
        ops.push_back({{"name", o.name}, {"kind", o.kind}, {"count", o.count}, {"time_ns", o.time}, {"share", o.share}});
      }
      return json{{"name", s.name},         {"begin_ns", s.begin}, {"end_ns", s.end},
                  {"length_ns", s.length()}, {"tasks", s.tasks},    {"ends_with", s.ends_with}, {"share_of_run", s.share_of_run},
                  {"by_category_ns", by_category}, {"split", split}, {"operations", ops}};
    };
    const std::vector<TimeNs>& durations = c.step_lengths;
    std::vector<const CriticalPathSummary*> rows;
    for (std::size_t i : detail::step_rows(r.options, durations, true)) {
      if (const CriticalPathSummary* s = detail::step_path(c, i)) rows.push_back(s);
    }
    detail::JsonMembers cm = json_members({{"available", c.available},
                                           {"note", c.note},
                                           {"measured_span_ns", c.measured_span},
                                           {"replayed_span_ns", c.replayed_span},
                                           {"unscheduled", c.unscheduled},
                                           {"run", summary(c.run)},
                                           {"step_count", durations.size()},
                                           {"steps_left_out", durations.size() - rows.size()}},
                                          1);
    cm["steps"] = json_rows(rows.size(), 2, [&](std::size_t k) {
      json s = summary(*rows[k]);
      s["index"] = rows[k]->index;
      return s;
    });
    doc["critical_path"] = json_object(std::move(cm), 1);
  }
  std::string out = json_object(std::move(doc), 0);
  out += '\n';
  return out;
}

} // namespace dreamscope::analyzers
