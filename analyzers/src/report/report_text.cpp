// The report as titled tables, and their terminal and Markdown renderings.
#include "report/report_tables.h"

#include "dreamscope/analyzers/duration_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace dreamscope::analyzers::detail {

std::string format_pct(double fraction) { return fmt::format("{:.2f} %", 100.0 * fraction); }

namespace {

std::string us(TimeUs v) { return fmt::format("{}", v); }

Table make_table(std::vector<std::string> header, std::vector<bool> numeric) {
  Table t;
  t.header = std::move(header);
  t.numeric = std::move(numeric);
  return t;
}

Section cross_stack_section(const CrossStackBreakdown& cs, std::size_t top) {
  Section s{ReportSection::CrossStack, "Cross-stack breakdown per operation (RL-Scope)", {}, {}};
  s.notes.push_back("Each instant in which the CPU or the GPU was busy, counted once: CPU only (in the operation's "
                    "own code, or in a CUDA API call), GPU only, or CPU and GPU at once.");
  Table t = make_table({"operation", "n", "CPU framework", "CPU CUDA API", "GPU only", "CPU+GPU", "total"},
                       {false, true, true, true, true, true, true});
  auto row = [](const OperationTime& o) {
    return std::vector<std::string>{o.name,
                                    std::to_string(o.instances),
                                    format_duration(o.cpu_framework),
                                    format_duration(o.cpu_cuda_api),
                                    format_duration(o.gpu_only),
                                    format_duration(o.cpu_gpu_overlap),
                                    format_duration(o.total())};
  };
  for (std::size_t i = 0; i < cs.operations.size() && i < top; ++i) t.rows.push_back(row(cs.operations[i]));
  if (cs.operations.size() > top) s.notes.push_back(fmt::format("{} more operations in the JSON report.", cs.operations.size() - top));
  t.rows.push_back(row(cs.all));
  s.tables.emplace_back("", std::move(t));
  return s;
}

Section hta_section(const HtaReport& h, std::size_t top) {
  Section s{ReportSection::Hta, "HTA-compatible analyses (µs, as Holistic Trace Analysis reports them)", {}, {}};
  s.notes.push_back(h.step_filter_applied
                        ? fmt::format("{} ProfilerSteps: events of the last one are left out, as HTA does.", h.profiler_steps)
                        : fmt::format("{} ProfilerStep(s): no step filter.", h.profiler_steps));
  const TemporalBreakdown& t = h.temporal;
  Table temporal = make_table({"idle", "compute", "non-compute", "kernel time", "idle %", "compute %", "non-compute %"},
                              std::vector<bool>(7, true));
  temporal.rows.push_back({us(t.idle), us(t.compute), us(t.non_compute), us(t.kernel_time),
                           fmt::format("{:.2f}", t.idle_pct), fmt::format("{:.2f}", t.compute_pct),
                           fmt::format("{:.2f}", t.non_compute_pct)});
  s.tables.emplace_back("Temporal breakdown", std::move(temporal));

  Table idle = make_table({"device", "stream", "host_wait", "kernel_wait", "other", "host_wait ratio",
                           "kernel_wait ratio", "other ratio"},
                          std::vector<bool>(8, true));
  for (const auto& i : h.idle_time) {
    idle.rows.push_back({std::to_string(i.device), std::to_string(i.stream), us(i.host_wait), us(i.kernel_wait),
                         us(i.other), fmt::format("{:.2f}", i.host_wait_ratio),
                         fmt::format("{:.2f}", i.kernel_wait_ratio), fmt::format("{:.2f}", i.other_ratio)});
  }
  s.tables.emplace_back("Idle time per stream", std::move(idle));

  Table types = make_table({"kernel type", "sum", "%"}, {false, true, true});
  for (const auto& k : h.kernels.by_type) types.rows.push_back({k.kernel_type, us(k.sum), fmt::format("{:.1f}", k.percentage)});
  s.tables.emplace_back("Kernel time by type (merged intervals)", std::move(types));

  Table names = make_table({"kernel type", "name", "count", "sum", "mean", "min", "max", "stddev"},
                           {false, false, true, true, true, true, true, true});
  std::vector<const KernelNameStats*> by_sum;
  for (const auto& k : h.kernels.by_name) by_sum.push_back(&k);
  std::stable_sort(by_sum.begin(), by_sum.end(), [](auto* a, auto* b) { return a->sum > b->sum; });
  for (std::size_t i = 0; i < by_sum.size() && i < top; ++i) {
    const auto& k = *by_sum[i];
    names.rows.push_back({std::string(to_string(k.type)), k.name, std::to_string(k.count), us(k.sum),
                          fmt::format("{:.1f}", k.mean), us(k.min), us(k.max), fmt::format("{:.1f}", k.stddev)});
  }
  s.tables.emplace_back(fmt::format("Kernels by name (top {} of {})", std::min(top, by_sum.size()), by_sum.size()),
                        std::move(names));

  s.notes.push_back(h.comm_comp_overlap_pct
                        ? fmt::format("Communication/computation overlap: {:.2f} % of communication time.",
                                      *h.comm_comp_overlap_pct)
                        : std::string("Communication/computation overlap: no communication kernels."));

  const LaunchSummary& ls = h.launch_summary;
  Table launch = make_table({"launches", "mean cpu duration", "mean gpu duration", "mean launch delay",
                             "max launch delay", "gpu shorter than cpu"},
                            std::vector<bool>(6, true));
  launch.rows.push_back({std::to_string(ls.count), fmt::format("{:.2f}", ls.mean_cpu_duration),
                         fmt::format("{:.2f}", ls.mean_gpu_duration), fmt::format("{:.2f}", ls.mean_launch_delay),
                         us(ls.max_launch_delay), std::to_string(ls.short_kernels)});
  s.tables.emplace_back("Kernel launches", std::move(launch));

  Table queue = make_table({"device", "stream", "max queue length", "mean queue length", "changes"},
                           std::vector<bool>(5, true));
  for (const auto& q : h.queue_length) {
    queue.rows.push_back({std::to_string(q.device), std::to_string(q.stream), std::to_string(q.max),
                          fmt::format("{:.2f}", q.mean), std::to_string(q.series.size())});
  }
  s.tables.emplace_back("Queue length per stream", std::move(queue));

  auto annotations = [&](const std::vector<AnnotationTotal>& v, const char* title) {
    Table a = make_table({"name", "count", "sum"}, {false, true, true});
    for (std::size_t i = 0; i < v.size() && i < top; ++i) a.rows.push_back({v[i].name, std::to_string(v[i].count), us(v[i].sum)});
    s.tables.emplace_back(fmt::format("{} (top {} of {})", title, std::min(top, v.size()), v.size()), std::move(a));
  };
  annotations(h.cpu_annotations, "CPU user annotations");
  annotations(h.gpu_annotations, "GPU user annotations");
  return s;
}

Section steps_section(const StepBreakdown& b, const ReportOptions& options) {
  Section s{ReportSection::Steps, "Step time breakdown (TensorBoard profiler)", {}, {}};
  s.notes.push_back("As the TensorBoard profiler plugin computes it: each step runs to the end of the GPU work "
                    "launched from inside it, and trailing steps that launched nothing are left out. Kernel > Memcpy "
                    "> Memset > Communication > Runtime > DataLoader > CPU Exec > Other: each category claims the "
                    "part of the step that no higher one claimed.");
  std::vector<std::string> header{"step", "duration"};
  for (std::size_t c = 0; c < kStepCategories; ++c) header.emplace_back(to_string(static_cast<StepCategory>(c)));
  Table t = make_table(header, std::vector<bool>(header.size(), true));
  t.numeric[0] = false;
  auto row = [](const std::string& name, TimeNs duration, const std::array<TimeNs, kStepCategories>& time) {
    std::vector<std::string> r{name, format_duration(duration)};
    for (TimeNs v : time) r.push_back(format_duration(v));
    return r;
  };
  std::vector<TimeNs> durations;
  for (const StepTime& st : b.steps) durations.push_back(st.duration());
  const std::vector<std::size_t> listed = step_rows(options, durations, false);
  for (std::size_t i : listed) t.rows.push_back(row(b.steps[i].name, b.steps[i].duration(), b.steps[i].time));
  if (listed.size() < b.steps.size()) s.notes.push_back(listed_steps_note(listed.size(), b.steps.size()));
  if (!b.steps.empty()) {
    t.rows.push_back(row("(average)", b.average_duration, b.average));
  }
  s.tables.emplace_back("", std::move(t));
  return s;
}

Section gpu_section(const std::vector<DeviceEfficiency>& gpus) {
  Section s{ReportSection::Gpu, "GPU utilization (TensorBoard profiler)", {}, {}};
  s.notes.push_back("As the TensorBoard profiler plugin computes them, from the first step's start to the last "
                    "step's end: GPU utilization = time with a kernel running; Est. SM efficiency = the running "
                    "kernels' blocks per SM, summed and capped at 1, over time; Est. achieved occupancy = Kineto's "
                    "per-kernel estimate (else ours from the launch) weighted by kernel time.");
  Table t = make_table({"device", "name", "steps time", "busy", "GPU utilization", "Est. SM efficiency",
                        "Est. achieved occupancy"},
                       {true, false, true, true, true, true, true});
  auto opt = [](const std::optional<double>& v) { return v ? format_pct(*v) : std::string("n/a"); };
  for (const auto& g : gpus) {
    t.rows.push_back({std::to_string(g.device), g.name, format_duration(g.steps_time), format_duration(g.busy),
                      format_pct(g.gpu_utilization), opt(g.sm_efficiency), opt(g.achieved_occupancy)});
  }
  s.tables.emplace_back("", std::move(t));
  return s;
}

Section data_section(const DataStalls& d, const ReportOptions& options) {
  Section s{ReportSection::DataStalls, "Data stalls per step", {}, {}};
  s.notes.push_back(fmt::format(
      "Source: {}. Total wait {} of {} ({}).", d.source, format_duration(d.total_wait), format_duration(d.total_time),
      format_pct(d.total_time > 0 ? static_cast<double>(d.total_wait) / static_cast<double>(d.total_time) : 0.0)));
  Table t = make_table({"step", "duration", "data wait", "stall", "fetch", "prep", "batches"},
                       {false, true, true, true, true, true, true});
  std::vector<TimeNs> durations;
  for (const StepDataStall& st : d.steps) durations.push_back(st.end - st.start);
  const std::vector<std::size_t> listed = step_rows(options, durations, false);
  if (listed.size() < d.steps.size()) s.notes.push_back(listed_steps_note(listed.size(), d.steps.size()));
  for (std::size_t i : listed) {
    const auto& st = d.steps[i];
    t.rows.push_back({st.step, format_duration(st.end - st.start), format_duration(st.data_wait),
                      format_pct(st.stall_fraction()), format_duration(st.fetch), format_duration(st.prep),
                      std::to_string(st.batches)});
  }
  s.tables.emplace_back("", std::move(t));
  return s;
}

Section kernels_section(const std::vector<KernelTotal>& kernels) {
  Section s{ReportSection::TopKernels, "Top kernels by total time", {}, {}};
  Table t = make_table({"kernel", "count", "total", "mean", "min", "max", "share"},
                       {false, true, true, true, true, true, true});
  for (const auto& k : kernels) {
    t.rows.push_back({k.name, std::to_string(k.count), format_duration(k.total),
                      format_duration(k.total / std::max<std::int64_t>(k.count, 1)), format_duration(k.min),
                      format_duration(k.max), format_pct(k.share)});
  }
  s.tables.emplace_back("", std::move(t));
  return s;
}

std::string part_label(const CriticalPathPart& p) {
  return p.resource.empty() ? std::string(to_string(p.category)) : fmt::format("{} on {}", to_string(p.category), p.resource);
}

Section critical_path_section(const CriticalPathReport& c, const ReportOptions& options) {
  const std::size_t top = std::max<std::size_t>(options.top, 1);
  Section s{ReportSection::CriticalPath, "Critical path (replay simulator)", {}, {}};
  if (!c.available) {
    s.notes.push_back(c.note);
    return s;
  }
  s.notes.push_back(
      fmt::format("The chain of tasks and waits that set the replayed run's length: replayed {} "
                  "(measured {}), {} tasks on the path, which ends with {}.",
                  format_duration(c.replayed_span), format_duration(c.measured_span), c.run.tasks, c.run.ends_with));
  s.notes.push_back("A sync's wait is on the path as the GPU work it waited for; its own row is the time from "
                    "that work's end to the wake-up (hops: how often the path crossed one).");
  if (!c.note.empty()) s.notes.push_back(c.note);
  Table split = make_table({"bound by", "time", "share", "hops"}, {false, true, true, true});
  for (const auto& p : c.run.split) {
    split.rows.push_back({part_label(p), format_duration(p.time), format_pct(p.share), std::to_string(p.hops)});
  }
  split.rows.push_back({"path", format_duration(c.run.length()), format_pct(c.run.length() > 0 ? 1.0 : 0.0), ""});
  s.tables.emplace_back("What bound the whole run", std::move(split));
  Table ops = make_table({"operation", "kind", "count", "time", "share"}, {false, false, true, true, true});
  for (std::size_t i = 0; i < c.run.operations.size() && i < top; ++i) {
    const auto& o = c.run.operations[i];
    ops.rows.push_back({o.name, o.kind, std::to_string(o.count), format_duration(o.time), format_pct(o.share)});
  }
  s.tables.emplace_back("Top operations on the path", std::move(ops));
  if (!c.step_lengths.empty()) {
    std::vector<std::string> header{"step", "length", "of run"};
    std::vector<bool> numeric{false, true, true};
    for (std::size_t i = 0; i < kPathCategories; ++i) {
      header.emplace_back(to_string(static_cast<PathCategory>(i)));
      numeric.push_back(true);
    }
    header.emplace_back("top operation");
    numeric.push_back(false);
    Table steps = make_table(std::move(header), std::move(numeric));
    const std::vector<std::size_t> listed = step_rows(options, c.step_lengths, false);
    for (std::size_t i : listed) {
      const CriticalPathSummary* path = step_path(c, i);
      if (!path) continue;
      const auto& st = *path;
      std::vector<std::string> row{st.name, format_duration(st.length()), format_pct(st.share_of_run)};
      for (TimeNs t : st.by_category) row.push_back(format_duration(t));
      row.push_back(st.operations.empty() ? std::string() : st.operations.front().name);
      steps.rows.push_back(std::move(row));
    }
    if (listed.size() < c.step_lengths.size()) s.notes.push_back(listed_steps_note(listed.size(), c.step_lengths.size()));
    s.tables.emplace_back("Per step", std::move(steps));
  }
  return s;
}

// Long kernel names make terminal tables unreadable; the JSON keeps them whole.
std::string clip_cell(const std::string& s, std::size_t width) {
  if (s.size() <= width) return s;
  return s.substr(0, width - 3) + "...";
}

} // namespace

std::string text_table(const Table& t) {
  constexpr std::size_t kMaxColumn = 60;
  std::vector<std::size_t> width(t.header.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (std::size_t c = 0; c < row.size() && c < width.size(); ++c) width[c] = std::max(width[c], std::min(row[c].size(), kMaxColumn));
  };
  measure(t.header);
  for (const auto& r : t.rows) measure(r);
  std::string out;
  auto line = [&](const std::vector<std::string>& row) {
    out += " ";
    for (std::size_t c = 0; c < row.size() && c < width.size(); ++c) {
      const std::string cell = clip_cell(row[c], kMaxColumn);
      out += t.numeric[c] ? fmt::format(" {:>{}}", cell, width[c]) : fmt::format(" {:<{}}", cell, width[c]);
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += "\n";
  };
  line(t.header);
  std::vector<std::string> rule;
  for (std::size_t w : width) rule.push_back(std::string(w, '-'));
  line(rule);
  for (const auto& r : t.rows) line(r);
  if (t.rows.empty()) out += "  (none)\n";
  return out;
}

namespace {

std::string markdown_cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n') out += ' ';
    else out += c;
  }
  return out;
}

} // namespace

std::string markdown_table(const Table& t) {
  if (t.rows.empty()) return "_(none)_\n";
  std::string out = "|";
  for (const auto& h : t.header) out += " " + markdown_cell(h) + " |";
  out += "\n|";
  for (bool n : t.numeric) out += n ? " ---: |" : " --- |";
  out += "\n";
  for (const auto& r : t.rows) {
    out += "|";
    for (const auto& c : r) out += " " + markdown_cell(c) + " |";
    out += "\n";
  }
  return out;
}

std::vector<Section> report_sections(const AnalysisReport& r) {
  std::vector<Section> out;
  const std::size_t top = std::max<std::size_t>(r.options.top, 1);
  for (ReportSection kind : r.options.sections) {
    switch (kind) {
      case ReportSection::CrossStack: if (r.cross_stack) out.push_back(cross_stack_section(*r.cross_stack, top)); break;
      case ReportSection::Hta: if (r.hta) out.push_back(hta_section(*r.hta, top)); break;
      case ReportSection::Steps: if (r.steps) out.push_back(steps_section(*r.steps, r.options)); break;
      case ReportSection::Gpu: if (r.gpu) out.push_back(gpu_section(*r.gpu)); break;
      case ReportSection::DataStalls: if (r.data_stalls) out.push_back(data_section(*r.data_stalls, r.options)); break;
      case ReportSection::TopKernels: if (r.top_kernels) out.push_back(kernels_section(*r.top_kernels)); break;
      case ReportSection::CriticalPath: if (r.critical_path) out.push_back(critical_path_section(*r.critical_path, r.options)); break;
    }
  }
  return out;
}

} // namespace dreamscope::analyzers::detail

namespace dreamscope::analyzers {

std::string render_text(const AnalysisReport& r) {
  std::string out = fmt::format("dreamscope analyze: {}\nsource {}, {} events, span {}\n", r.trace_name, r.source,
                                r.events, format_duration(r.end - r.begin));
  for (const auto& s : detail::report_sections(r)) out += detail::text_part(s);
  return out;
}

std::string render_markdown(const AnalysisReport& r) {
  std::string out = fmt::format("# dreamscope analyze: `{}`\n\nSource {}, {} events, span {}.\n", r.trace_name,
                                r.source, r.events, format_duration(r.end - r.begin));
  for (const auto& s : detail::report_sections(r)) out += detail::markdown_part(s);
  return out;
}

} // namespace dreamscope::analyzers
