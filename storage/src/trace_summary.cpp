#include "dreamscope/trace_summary.h"

#include <algorithm>
#include <charconv>
#include <string_view>
#include <unordered_map>

namespace dreamscope {

TraceSummary summarize(const Trace& trace, std::size_t top_kernels) {
  TraceSummary s;
  s.source = trace.meta_value("source", std::string(to_string(trace.source())));
  s.command = trace.meta_value("command");
  s.host = trace.meta_value("host");
  s.cpu_cores = trace.meta_value("cpu_cores");
  s.tracer_writer_cpu_ns = trace.tracer_writer_cpu_ns();
  s.schema_version = trace.meta_value("schema_version");
  s.dreamscope_version = trace.meta_value("dreamscope_version");
  s.complete = trace.complete();
  s.dropped_events = trace.dropped_events();
  s.warnings = trace.meta_value("warnings");
  // An imported trace's issues, one line per kind in meta.import_warnings, summed up here.
  if (const std::string imported = trace.meta_value("import_warnings"); !imported.empty()) {
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
    s.processes.push_back(std::move(ps));
  }
  ProcessSummary unknown_process; // threads whose process the trace does not name
  for (TrackId t = 0; t < trace.tracks().size(); ++t) {
    const auto& tr = trace.tracks()[t];
    std::size_t events = trace.cuda_api_on(t).size() + trace.gpu_ops_on(t).size() + trace.annotations_on(t).size();
    if (tr.kind == TrackKind::CpuThread) {
      ThreadSummary ts{tr.tid, tr.name, events};
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
  if (!unknown_process.threads.empty()) {
    unknown_process.pid = kNoValue;
    unknown_process.name = "(unknown process)";
    s.processes.push_back(std::move(unknown_process));
  }
  s.devices = trace.devices();

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
  return s;
}

} // namespace dreamscope
