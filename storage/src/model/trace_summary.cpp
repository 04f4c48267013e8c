#include "dreamscope/storage/trace_summary.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string_view>
#include <unordered_map>

namespace dreamscope {


std::vector<RecordingPause> recording_pauses(const Trace& trace) {
  // "pid start end; pid start end; ..." (the tracer's writer_thread.cpp)
  std::vector<RecordingPause> out;
  const std::string pauses = trace.meta_value("recording_paused");
  for (std::size_t at = 0; at < pauses.size();) {
    std::size_t next = pauses.find(';', at);
    if (next == std::string::npos) next = pauses.size();
    long long pid = 0, start = 0, end = 0;
    if (std::sscanf(pauses.substr(at, next - at).c_str(), "%lld %lld %lld", &pid, &start, &end) == 3 && end >= start) {
      out.push_back({pid, start, end});
    }
    at = next + 1;
  }
  return out;
}

TraceSummary summarize(const Trace& trace, std::size_t top_kernels) {
  TraceSummary s;
  s.source = trace.meta_value("source", std::string(to_string(trace.source())));
  s.command = trace.meta_value("command");
  s.host = trace.meta_value("host");
  if (const std::int64_t cores = trace.cpu_cores(); cores > 0) s.cpu_cores = std::to_string(cores);
  s.tracer_writer_cpu_ns = trace.tracer_writer_cpu_ns();
  for (const RecordingPause& p : recording_pauses(trace)) {
    ++s.recording_pauses;
    s.recording_paused_ns += p.end - p.start;
  }
  for (const CalibrationRecord& c : trace.calibration()) {
    if (c.event_kind == "nvtx_range") s.range_cost_ns = c.cost_ns;
    if (c.event_kind == "nvtx_range_timed") s.range_timed_at_start_ns = c.cost_ns;
    if (c.event_kind == "nvtx_range_in_work") s.range_in_work_at_start_ns = c.cost_ns;
    if (c.event_kind == "clock_read") s.clock_read_ns = c.cost_ns;
  }
  double timed = 0;
  std::int64_t timed_calls = 0;
  for (const ThreadLoadRecord& l : trace.thread_loads()) {
    if (l.range_cost_ns >= 0 && l.cost_samples > 0) {
      timed += l.range_cost_ns * static_cast<double>(l.cost_samples);
      timed_calls += l.cost_samples;
    }
    // The recording threads' windows: the state overhead correction works in. Threads that
    // recorded nothing have windows too (their CPU time), listed with their threads below.
    if (l.events > 0 && l.cpu_ns != kNoValue && l.runqueue_ns != kNoValue) {
      s.threads_cpu_ns = (s.threads_cpu_ns == kNoValue ? 0 : s.threads_cpu_ns) + l.cpu_ns;
      s.threads_runqueue_ns = (s.threads_runqueue_ns == kNoValue ? 0 : s.threads_runqueue_ns) + l.runqueue_ns;
    }
  }
  if (timed_calls > 0) s.range_timed_in_run_ns = timed / static_cast<double>(timed_calls);
  s.schema_version = trace.meta_value("schema_version");
  s.dreamscope_version = trace.meta_value("dreamscope_version");
  s.closed_cleanly = trace.complete();
  s.dropped_events = trace.dropped_events();
  {
    const std::string read = trace.meta_value("import_events_read");
    std::from_chars(read.data(), read.data() + read.size(), s.import_events_read);
  }
  s.import_issues = parse_import_issues(trace.meta_value("import_issues"));
  std::stable_sort(s.import_issues.begin(), s.import_issues.end(),
                   [](const auto& a, const auto& b) { return a.count > b.count; });
  for (const auto& issue : s.import_issues) {
    if (issue.effect == ImportEffect::Dropped) s.import_events_dropped += issue.count;
  }
  s.complete = s.closed_cleanly && s.import_events_dropped == 0;
  s.warnings = trace.meta_value("warnings");
  // An imported trace's issues, one line per kind in meta.import_warnings, summed up here.
  if (!s.import_issues.empty()) {
    std::int64_t warnings = 0, on_purpose = 0;
    for (const auto& issue : s.import_issues) {
      if (issue.severity == ImportSeverity::Warning) warnings += issue.count;
      else if (issue.effect == ImportEffect::Dropped) on_purpose += issue.count;
    }
    if (!s.warnings.empty()) s.warnings += "; ";
    s.warnings += "import: " + std::to_string(warnings) + " warnings, " + std::to_string(on_purpose) +
                  " events dropped as the peer tools do (meta import_warnings lists them)";
  } else if (const std::string imported = trace.meta_value("import_warnings"); !imported.empty()) {
    // Imported by a version without meta.import_issues: sum the prose lines.
    std::int64_t warnings = 0, notes = 0;
    std::size_t pos = 0;
    while (pos < imported.size()) {
      std::size_t eol = imported.find('\n', pos);
      if (eol == std::string::npos) eol = imported.size();
      const std::string_view line(imported.data() + pos, eol - pos);
      const bool warning = line.starts_with("warning: ");
      const std::string_view rest = line.substr(line.find(": ") + 2);
      std::int64_t n = 0;
      std::from_chars(rest.data(), rest.data() + rest.size(), n);
      (warning ? warnings : notes) += n;
      pos = eol + 1;
    }
    if (!s.warnings.empty()) s.warnings += "; ";
    s.warnings += "import: " + std::to_string(warnings) + " warnings, " + std::to_string(notes) +
                  " events dropped as the peer tools do (meta import_warnings lists them)";
  }
  s.begin = trace.begin_time();
  s.end = trace.end_time();

  for (const auto& p : trace.processes()) {
    ProcessSummary ps;
    ps.pid = p.pid;
    ps.name = p.name;
    ps.command = p.command;
    ps.exit_status = p.exit_status;
    ps.rank = p.rank;
    ps.local_rank = p.local_rank;
    ps.world_size = p.world_size;
    ps.host = p.host;
    ps.clock_offset = p.clock_offset;
    s.processes.push_back(std::move(ps));
  }
  s.job_notes = trace.meta_value("job_notes");
  {
    std::set<std::int64_t> ranks, aligned;
    std::set<std::string> hosts;
    for (const ProcessInfo& p : trace.processes()) {
      if (!p.is_rank()) continue;
      ranks.insert(p.rank);
      if (!p.host.empty()) hosts.insert(p.host);
      if (p.world_size != kNoValue) s.ranks.world_size = std::max(s.ranks.world_size, p.world_size);
      if (p.clock_offset != 0) {
        aligned.insert(p.rank);
        s.ranks.largest_clock_offset = std::max(s.ranks.largest_clock_offset, std::abs(p.clock_offset));
      }
    }
    s.ranks.ranks = ranks.size();
    s.ranks.hosts = hosts.size();
    s.ranks.clock_aligned = aligned.size();
  }
  std::vector<std::pair<std::int64_t, std::int64_t>> load(trace.tracks().size(), {kNoValue, kNoValue});
  for (const ThreadLoadRecord& l : trace.thread_loads()) {
    if (l.track >= load.size()) continue;
    auto add = [](std::int64_t& sum, std::int64_t v) {
      if (v != kNoValue) sum = (sum == kNoValue ? 0 : sum) + v;
    };
    add(load[l.track].first, l.cpu_ns);
    add(load[l.track].second, l.runqueue_ns);
  }
  ProcessSummary unknown_process; // threads whose process the trace does not name
  for (TrackId t{0}; t < trace.tracks().size(); ++t) {
    const auto& tr = trace.tracks()[t];
    std::size_t events = trace.cuda_api_on(t).size() + trace.gpu_ops_on(t).size() + trace.annotations_on(t).size();
    if (tr.kind == TrackKind::CpuThread) {
      ThreadSummary ts{tr.tid, tr.name, events, load[t].first, load[t].second};
      if (tr.process < s.processes.size()) {
        s.processes[tr.process].threads.push_back(std::move(ts));
      } else {
        unknown_process.threads.push_back(std::move(ts));
      }
    } else {
      StreamSummary ss;
      ss.device_ordinal = tr.device < trace.devices().size() ? trace.devices()[tr.device].ordinal : -1;
      ss.stream = tr.stream;
      ss.name = tr.name;
      ss.events = events;
      s.streams.push_back(std::move(ss));
    }
  }
  if (trace.source() == TraceSource::Kineto || trace.source() == TraceSource::Nsys) {
    // Nsight Systems exports name every process on the machine; most ran nothing traced.
    std::vector<ProcessSummary> busy;
    for (auto& p : s.processes) {
      std::size_t events = 0;
      for (const auto& t : p.threads) events += t.events;
      if (events > 0) busy.push_back(std::move(p));
      else ++s.processes_without_events;
    }
    s.processes = std::move(busy);
  }
  if (!unknown_process.threads.empty()) {
    unknown_process.pid = kNoValue;
    unknown_process.name = "(unknown process)";
    s.processes.push_back(std::move(unknown_process));
  }
  s.devices = trace.devices();
  // Kineto lists the GPUs the events ran on first; people read them in ordinal order.
  std::stable_sort(s.devices.begin(), s.devices.end(),
                   [](const DeviceInfo& a, const DeviceInfo& b) { return a.ordinal < b.ordinal; });

  const auto& api = trace.cuda_api();
  for (std::size_t i = 0; i < api.size(); ++i) {
    (api.kind[i] == ApiKind::Driver ? s.counts.driver_api : s.counts.runtime_api)++;
  }
  const auto& g = trace.gpu_ops();
  std::unordered_map<StringId, KernelTotal> kernels;
  for (std::size_t i = 0; i < g.size(); ++i) {
    switch (g.kind[i]) {
      case GpuOpKind::Kernel: {
        ++s.counts.kernels;
        auto& k = kernels[g.name[i]];
        ++k.count;
        k.total += g.end[i] - g.start[i];
        break;
      }
      case GpuOpKind::Memcpy: ++s.counts.memcpys; break;
      case GpuOpKind::Memset: ++s.counts.memsets; break;
      case GpuOpKind::Sync: ++s.counts.syncs; break;
    }
  }
  s.counts.annotations = trace.annotations().size();
  s.counts.flows = trace.flows().size();
  s.counts.overheads = trace.overheads().size();
  s.counts.thread_loads = trace.thread_loads().size();
  s.counts.memory_events = trace.memory_events().size();

  std::vector<std::pair<StringId, KernelTotal>> sorted(kernels.begin(), kernels.end());
  std::sort(sorted.begin(), sorted.end(), [&](const auto& a, const auto& b) {
    if (a.second.total != b.second.total) return a.second.total > b.second.total;
    return trace.str(a.first) < trace.str(b.first);
  });
  for (std::size_t i = 0; i < sorted.size() && i < top_kernels; ++i) {
    KernelTotal k = sorted[i].second;
    k.name = std::string(trace.str(sorted[i].first));
    s.top_kernels.push_back(std::move(k));
  }
  s.nothing_to_analyze = empty_trace_problem(trace);
  return s;
}

namespace {

// "1540 x kineto_bad_pid_tid, 3 x kineto_instant_event": the reasons events were dropped.
std::string drop_reasons(const std::vector<RecordedImportIssue>& issues) {
  std::string out;
  std::size_t shown = 0;
  for (const auto& issue : issues) {
    if (issue.effect != ImportEffect::Dropped && issue.effect != ImportEffect::Lost) continue;
    if (shown++ == 3) {
      out += ", ...";
      break;
    }
    if (!out.empty()) out += ", ";
    out += std::to_string(issue.count) + " x " + issue.id;
  }
  return out;
}

std::int64_t meta_int(const Trace& trace, const char* key) {
  const std::string v = trace.meta_value(key);
  std::int64_t n = -1;
  if (v.empty() || std::from_chars(v.data(), v.data() + v.size(), n).ec != std::errc()) return -1;
  return n;
}

} // namespace

std::string empty_import_problem(const Trace& trace) {
  const std::int64_t read = meta_int(trace, "import_events_read");
  if (read < 0) return {}; // not imported: a dreamscope recording says what it holds itself
  // Operators a rank summary's import counted without keeping (ImportDetail::WithoutOperators)
  // are of the CPU side.
  std::size_t cpu_kept = trace.cuda_api().size() + static_cast<std::size_t>(summarized_event_count(trace));
  std::size_t gpu_kept = trace.gpu_ops().size();
  const auto& a = trace.annotations();
  for (std::size_t i = 0; i < a.size(); ++i) {
    (trace.tracks()[a.track[i]].kind == TrackKind::GpuStream ? gpu_kept : cpu_kept)++;
  }
  std::vector<RecordedImportIssue> issues = parse_import_issues(trace.meta_value("import_issues"));
  std::stable_sort(issues.begin(), issues.end(), [](const auto& x, const auto& y) { return x.count > y.count; });
  const std::string why = drop_reasons(issues);
  const std::string because = why.empty() ? "" : " (" + why + ")";
  // A file of memory events alone (a PyTorch profiler run of memory profiling only) still has
  // its memory curve to show; the sides below are those of operators, calls and GPU work.
  if (cpu_kept + gpu_kept + trace.memory_events().size() == 0) {
    return "the import kept none of the " + std::to_string(read) + " events in the file" + because;
  }
  const std::int64_t cpu_in = meta_int(trace, "import_input_cpu_events");
  const std::int64_t gpu_in = meta_int(trace, "import_input_gpu_events");
  if (cpu_in > 0 && cpu_kept == 0) {
    return "the import kept none of the " + std::to_string(cpu_in) + " CPU-side events in the file" + because;
  }
  if (gpu_in > 0 && gpu_kept == 0) {
    return "the import kept none of the " + std::to_string(gpu_in) + " GPU-side events in the file" + because;
  }
  return {};
}

bool holds_no_events(const Trace& trace) {
  return trace.annotations().size() == 0 && trace.cuda_api().size() == 0 && trace.gpu_ops().size() == 0 &&
         trace.memory_events().size() == 0 && summarized_event_count(trace) == 0;
}

std::string empty_trace_problem(const Trace& trace) {
  if (meta_int(trace, "import_events_read") >= 0) return empty_import_problem(trace);
  if (!holds_no_events(trace)) return {};
  const std::string why = trace.meta_value("no_events");
  return std::string(kNoEventsText) + (why.empty() ? "" : ": " + why);
}

} // namespace dreamscope
