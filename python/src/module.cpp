// dreamscope._core: the C++ side of `import dreamscope` for notebooks (docs/python.md).
//
// Loading (anything the CLI opens), the tables as columns for pandas (columns.cpp), HTA's
// analyses, the analysis report, replay and what-ifs. Reports come back as the JSON text the
// CLI prints with --format json, which dreamscope/traces.py parses; the long per-row results
// (kernel launches, queue lengths) come back as columns. The GIL is released while C++ works.
#include "columns.h"

#include <dreamscope/analyzers/hta.h>
#include <dreamscope/analyzers/job_analysis.h>
#include <dreamscope/analyzers/report.h>
#include <dreamscope/analyzers/run_json.h>
#include <dreamscope/storage/importers.h>
#include <dreamscope/storage/job.h>
#include <dreamscope/whatif/whatif_engine.h>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace dreamscope::python {

namespace py = pybind11;
namespace fs = std::filesystem;

namespace {

using TracePtr = std::shared_ptr<Trace>;

// ---- Loading --------------------------------------------------------------------------

// What `dreamscope analyze` splits its inputs into: rank summaries and trace files.
std::pair<std::vector<std::string>, std::vector<std::string>> split_inputs(const std::vector<std::string>& inputs) {
  const analyzers::JobInputs in = analyzers::sort_job_inputs(inputs);
  std::vector<std::string> summaries, traces;
  for (const auto& f : in.summaries) summaries.push_back(f.string());
  for (const auto& f : in.traces) traces.push_back(f.string());
  return {summaries, traces};
}

// One trace, or a job's files as one Trace (storage's load_job), as `open_job` in the CLI.
TracePtr load(const std::vector<std::string>& inputs) {
  py::gil_scoped_release release;
  const std::vector<fs::path> files = job_files(inputs);
  if (files.size() == 1) return std::make_shared<Trace>(load_trace(files.front()));
  return std::make_shared<Trace>(load_job(files).trace);
}

// Each rank's trace on its own (HTA's view of a job: one trace per rank), by rank.
std::vector<std::pair<std::int64_t, TracePtr>> load_ranks(const std::vector<std::string>& inputs, std::size_t threads) {
  std::vector<std::pair<std::int64_t, TracePtr>> out;
  {
    py::gil_scoped_release release;
    std::mutex mutex;
    JobLoadOptions options;
    options.threads = threads;
    for_each_rank(job_files(inputs), options, [&](std::int64_t rank, Trace&& trace, const fs::path&) {
      auto p = std::make_shared<Trace>(std::move(trace));
      std::lock_guard lock(mutex);
      out.emplace_back(rank, std::move(p));
    });
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

// ---- HTA ------------------------------------------------------------------------------

analyzers::HtaOptions hta_options(bool step_filter, analyzers::TimeUs kernel_delay = 30, bool memory_kernels = true) {
  analyzers::HtaOptions o;
  o.profiler_step_filter = step_filter;
  o.consecutive_kernel_delay = kernel_delay;
  o.include_memory_kernels = memory_kernels;
  return o;
}

py::dict temporal(const Trace& trace, bool step_filter) {
  analyzers::TemporalBreakdown t;
  {
    py::gil_scoped_release release;
    t = analyzers::hta_temporal_breakdown(trace, hta_options(step_filter));
  }
  py::dict d;
  d["idle_time"] = t.idle;
  d["compute_time"] = t.compute;
  d["non_compute_time"] = t.non_compute;
  d["kernel_time"] = t.kernel_time;
  d["idle_time_pctg"] = t.idle_pct;
  d["compute_time_pctg"] = t.compute_pct;
  d["non_compute_time_pctg"] = t.non_compute_pct;
  return d;
}

template <class Out, class Get>
py::array_t<Out> array(std::size_t n, Get get) {
  py::array_t<Out> a(static_cast<py::ssize_t>(n));
  Out* p = a.mutable_data();
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<Out>(get(i));
  return a;
}

py::list idle_time(const Trace& trace, bool step_filter, analyzers::TimeUs kernel_delay, bool intervals) {
  std::vector<analyzers::StreamIdleTime> rows;
  {
    py::gil_scoped_release release;
    analyzers::HtaOptions options = hta_options(step_filter, kernel_delay);
    options.idle_intervals = intervals;
    rows = analyzers::hta_idle_time_breakdown(trace, options);
  }
  py::list out;
  for (const auto& r : rows) {
    py::dict d;
    d["device"] = r.device;
    d["stream"] = r.stream;
    d["host_wait"] = r.host_wait;
    d["kernel_wait"] = r.kernel_wait;
    d["other"] = r.other;
    d["host_wait_ratio"] = r.host_wait_ratio;
    d["kernel_wait_ratio"] = r.kernel_wait_ratio;
    d["other_ratio"] = r.other_ratio;
    if (intervals) {
      // Columns for pandas: the gap before each kernel but the first, and its IdleCategory.
      const auto& v = r.intervals;
      d["gap"] = array<std::int64_t>(v.size(), [&](std::size_t i) { return v[i].gap; });
      d["category"] = array<std::uint8_t>(v.size(), [&](std::size_t i) { return static_cast<std::uint8_t>(v[i].category); });
    }
    out.append(d);
  }
  return out;
}

py::tuple kernel_breakdown(const Trace& trace, bool step_filter, bool memory_kernels) {
  analyzers::KernelBreakdown k;
  {
    py::gil_scoped_release release;
    k = analyzers::hta_kernel_breakdown(trace, hta_options(step_filter, 30, memory_kernels));
  }
  py::dict types;
  py::list type_name, type_sum, type_pct;
  for (const auto& t : k.by_type) {
    type_name.append(t.kernel_type);
    type_sum.append(t.sum);
    type_pct.append(t.percentage);
  }
  types["kernel_type"] = type_name;
  types["sum"] = type_sum;
  types["percentage"] = type_pct;
  py::dict names;
  py::list name, type, count, sum, min, max, mean, stddev;
  for (const auto& s : k.by_name) {
    name.append(s.name);
    type.append(std::string(analyzers::to_string(s.type)));
    count.append(s.count);
    sum.append(s.sum);
    min.append(s.min);
    max.append(s.max);
    mean.append(s.mean);
    stddev.append(s.stddev);
  }
  names["name"] = name;
  names["kernel_type"] = type;
  names["count"] = count;
  names["sum"] = sum;
  names["max"] = max;
  names["min"] = min;
  names["mean"] = mean;
  names["std"] = stddev;
  return py::make_tuple(types, names);
}

py::object comm_comp_overlap(const Trace& trace, bool step_filter) {
  std::optional<double> v;
  {
    py::gil_scoped_release release;
    v = analyzers::hta_comm_comp_overlap(trace, hta_options(step_filter));
  }
  return v ? py::object(py::float_(*v)) : py::object(py::none());
}

py::dict kernel_launches(const Trace& trace, bool step_filter) {
  std::vector<analyzers::KernelLaunch> l;
  {
    py::gil_scoped_release release;
    l = analyzers::hta_kernel_launches(trace, hta_options(step_filter));
  }
  const std::size_t n = l.size();
  py::dict d;
  d["correlation"] = array<std::int64_t>(n, [&](std::size_t i) { return l[i].correlation; });
  d["cpu_duration"] = array<std::int64_t>(n, [&](std::size_t i) { return l[i].cpu_duration; });
  d["gpu_duration"] = array<std::int64_t>(n, [&](std::size_t i) { return l[i].gpu_duration; });
  d["launch_delay"] = array<std::int64_t>(n, [&](std::size_t i) { return l[i].launch_delay; });
  py::list runtime, kernel;
  for (const auto& x : l) {
    runtime.append(x.runtime_name);
    kernel.append(x.kernel_name);
  }
  d["runtime_name"] = runtime;
  d["kernel_name"] = kernel;
  return d;
}

py::list queue_length(const Trace& trace, bool step_filter) {
  std::vector<analyzers::StreamQueueLength> q;
  {
    py::gil_scoped_release release;
    q = analyzers::hta_queue_length(trace, hta_options(step_filter));
  }
  py::list out;
  for (const auto& s : q) {
    py::dict d;
    d["device"] = s.device;
    d["stream"] = s.stream;
    d["ts"] = array<std::int64_t>(s.series.size(), [&](std::size_t i) { return s.series[i].ts; });
    d["queue_length"] = array<std::int64_t>(s.series.size(), [&](std::size_t i) { return s.series[i].queue_length; });
    out.append(d);
  }
  return out;
}

py::dict annotation_totals(const Trace& trace, bool step_filter, bool gpu) {
  std::vector<analyzers::AnnotationTotal> a;
  {
    py::gil_scoped_release release;
    a = gpu ? analyzers::hta_gpu_annotations(trace, hta_options(step_filter))
            : analyzers::hta_cpu_annotations(trace, hta_options(step_filter));
  }
  py::list name, count, sum;
  for (const auto& x : a) {
    name.append(x.name);
    count.append(x.count);
    sum.append(x.sum);
  }
  py::dict d;
  d["name"] = name;
  d["count"] = count;
  d["sum"] = sum;
  return d;
}

// Each user annotation HTA groups (one side), as columns: pandas computes the statistics,
// the way HTA's groupby does.
py::dict annotation_durations(const Trace& trace, bool step_filter, bool gpu) {
  analyzers::AnnotationDurations a;
  {
    py::gil_scoped_release release;
    a = analyzers::hta_annotation_durations(trace, gpu, hta_options(step_filter));
  }
  py::dict d;
  d["names"] = a.names;
  d["name_index"] = array<std::int32_t>(a.name_index.size(), [&](std::size_t i) { return a.name_index[i]; });
  d["dur"] = array<std::int64_t>(a.dur.size(), [&](std::size_t i) { return a.dur[i]; });
  return d;
}

// What HTA's straggler analysis reads of one rank, as columns; pandas does the cross-rank
// part over every rank's columns (dreamscope/hta.py), as HTA's does over its frames.
py::dict straggler_events(const Trace& trace, bool step_filter) {
  analyzers::StragglerEvents e;
  {
    py::gil_scoped_release release;
    e = analyzers::hta_straggler_events(trace, hta_options(step_filter));
  }
  py::dict d;
  const auto& it = e.iterations;
  d["iteration"] = array<std::int64_t>(it.size(), [&](std::size_t i) { return it[i].iteration; });
  d["start"] = array<std::int64_t>(it.size(), [&](std::size_t i) { return it[i].start; });
  d["end"] = array<std::int64_t>(it.size(), [&](std::size_t i) { return it[i].end; });
  py::dict k;
  k["names"] = e.names;
  k["name_index"] = array<std::int32_t>(e.name_index.size(), [&](std::size_t i) { return e.name_index[i]; });
  k["stream"] = array<std::int64_t>(e.stream.size(), [&](std::size_t i) { return e.stream[i]; });
  k["iteration"] = array<std::int64_t>(e.iteration.size(), [&](std::size_t i) { return e.iteration[i]; });
  k["ts"] = array<std::int64_t>(e.ts.size(), [&](std::size_t i) { return e.ts[i]; });
  k["dur"] = array<std::int64_t>(e.dur.size(), [&](std::size_t i) { return e.dur[i]; });
  d["kernels"] = k;
  return d;
}

// HTA's kernels with their GPU user annotation, as columns (-1 where a value is missing, as
// in HTA's frame); None for a trace without GPU user annotations.
py::object kernels_with_annotations(const Trace& trace, bool step_filter) {
  analyzers::AnnotatedKernels k;
  {
    py::gil_scoped_release release;
    k = analyzers::hta_kernels_with_annotations(trace, hta_options(step_filter));
  }
  if (!k.has_gpu_annotations) return py::none();
  const std::size_t n = k.ts.size();
  auto or_minus_one = [](std::int64_t v) { return v == kNoValue ? std::int64_t{-1} : v; };
  py::dict d;
  d["names"] = k.names;
  d["name"] = array<std::int64_t>(n, [&](std::size_t i) { return k.name[i]; });
  d["user_annotation"] = array<std::int64_t>(n, [&](std::size_t i) { return k.annotation[i]; });
  d["kind"] = array<std::uint8_t>(n, [&](std::size_t i) { return static_cast<std::uint8_t>(k.kind[i]); });
  d["device"] = array<std::int64_t>(n, [&](std::size_t i) { return or_minus_one(k.device[i]); });
  d["stream"] = array<std::int64_t>(n, [&](std::size_t i) { return or_minus_one(k.stream[i]); });
  d["correlation"] = array<std::int64_t>(n, [&](std::size_t i) { return or_minus_one(k.correlation[i]); });
  d["external_id"] = array<std::int64_t>(n, [&](std::size_t i) { return or_minus_one(k.external_id[i]); });
  d["bytes"] = array<std::int64_t>(n, [&](std::size_t i) { return k.bytes[i]; });
  d["iteration"] = array<std::int64_t>(n, [&](std::size_t i) { return k.iteration[i]; });
  d["ts"] = array<std::int64_t>(n, [&](std::size_t i) { return k.ts[i]; });
  d["dur"] = array<std::int64_t>(n, [&](std::size_t i) { return k.dur[i]; });
  return d;
}

// ---- Reports --------------------------------------------------------------------------

std::string analyze_json(const Trace& trace, const std::string& name, const std::vector<std::string>& only,
                         std::size_t top, bool all_steps, bool step_filter) {
  analyzers::ReportOptions options;
  if (!only.empty()) {
    options.sections.clear();
    for (const auto& s : only) {
      const auto section = analyzers::report_section_from_string(s);
      if (!section) throw std::invalid_argument("unknown analysis '" + s + "'");
      options.sections.push_back(*section);
    }
  }
  options.top = top;
  options.all_steps = all_steps;
  options.hta.profiler_step_filter = step_filter;
  py::gil_scoped_release release;
  return analyzers::render_json(analyzers::analyze_trace(trace, name, options));
}

// The job report (`dreamscope analyze` of a job) from rank summary files, or from the ranks
// of a trace.
std::string job_json_from_summaries(const std::vector<std::string>& files, bool all_steps) {
  py::gil_scoped_release release;
  std::vector<analyzers::RankSummary> summaries;
  for (const auto& f : files) summaries.push_back(analyzers::read_rank_summary(f));
  analyzers::JobReportOptions o;
  o.all_steps = all_steps;
  return analyzers::render_job_json(analyzers::analyze_job(std::move(summaries), o));
}

std::string job_json_from_trace(const Trace& trace, const std::string& name, bool all_steps, bool step_filter) {
  py::gil_scoped_release release;
  std::vector<analyzers::RankSummary> summaries;
  for (const JobRank& r : job_ranks(trace)) {
    summaries.push_back(analyzers::summarize_rank(rank_subtrace(trace, r.rank), r.rank, name, hta_options(step_filter)));
  }
  analyzers::JobReportOptions o;
  o.all_steps = all_steps;
  return analyzers::render_job_json(analyzers::analyze_job(std::move(summaries), o));
}

py::tuple replay_trace(const Trace& trace, const std::string& name, bool correct_overhead, bool make_trace) {
  std::string text;
  std::optional<Trace> predicted;
  {
    py::gil_scoped_release release;
    whatif::ReplayOptions o;
    o.correct_overhead = correct_overhead;
    o.make_trace = make_trace;
    whatif::ReplayReport r = whatif::replay(trace, o);
    text = analyzers::replay_json(trace, r, name, {.max_steps = 50, .all_steps = true});
    predicted = std::move(r.predicted);
  }
  py::object p = predicted ? py::cast(std::make_shared<Trace>(std::move(*predicted))) : py::object(py::none());
  return py::make_tuple(text, p);
}

// The scenarios asked for, each with the parameters meant for it: "NAME=VALUE" goes to every
// scenario that declares NAME, "SCENARIO.NAME=VALUE" to every scenario of that name, as the
// CLI's -p given before any -s or with a scenario's name.
std::vector<whatif::ScenarioRequest> requests_from(const std::vector<std::string>& scenarios,
                                                   const std::map<std::string, std::string>& parameters,
                                                   std::optional<std::int64_t> rank) {
  std::vector<whatif::ScenarioRequest> requests;
  for (const auto& name : scenarios) requests.push_back({whatif::find_scenario(name), {}, rank});
  for (const auto& [given, value] : parameters) {
    std::string key = given, scenario;
    if (const auto dot = key.find('.'); dot != std::string::npos) {
      scenario = key.substr(0, dot);
      key = key.substr(dot + 1);
    }
    bool used = false;
    for (auto& r : requests) {
      const auto& params = r.scenario.parameters();
      const bool declares = std::any_of(params.begin(), params.end(), [&](const auto& q) { return q.name == key; });
      if (scenario.empty() ? declares : r.scenario.name() == scenario) {
        r.overrides[key] = value;
        used = true;
      }
    }
    if (!used) throw std::invalid_argument("no chosen scenario has a parameter '" + given + "'");
  }
  for (const auto& r : requests) (void)r.scenario.instantiate(r.overrides);
  return requests;
}

py::tuple whatif_trace(const Trace& trace, const std::string& name, const std::vector<std::string>& scenarios,
                       const std::map<std::string, std::string>& parameters, bool correct_overhead, bool data_stalls,
                       bool make_trace, std::optional<std::int64_t> rank) {
  std::string text;
  std::optional<Trace> predicted;
  std::vector<std::tuple<std::string, std::string, TimeNs, TimeNs, TimeNs, TimeNs>> steps;
  {
    py::gil_scoped_release release;
    const auto requests = requests_from(scenarios, parameters, rank);
    whatif::WhatIfOptions o;
    o.make_trace = make_trace;
    o.correct_overhead = correct_overhead;
    o.data_stalls = data_stalls;
    whatif::WhatIfReport r = whatif::run_whatif(trace, requests, o);
    text = analyzers::whatif_json(r, name);
    for (const auto& p : r.predictions) {
      for (const auto& s : p.steps) {
        steps.emplace_back(p.label, s.name, s.measured_start, s.measured(), s.predicted_start, s.predicted());
      }
    }
    if (!r.predictions.empty()) predicted = std::move(r.predictions.back().predicted);
  }
  py::dict cols;
  py::list label, step, measured_start, measured, predicted_start, predicted_ns;
  for (const auto& [l, s, ms, m, ps, p] : steps) {
    label.append(l);
    step.append(s);
    measured_start.append(ms);
    measured.append(m);
    predicted_start.append(ps);
    predicted_ns.append(p);
  }
  cols["label"] = label;
  cols["step"] = step;
  cols["measured_start_ns"] = measured_start;
  cols["measured_ns"] = measured;
  cols["predicted_start_ns"] = predicted_start;
  cols["predicted_ns"] = predicted_ns;
  py::object p = predicted ? py::cast(std::make_shared<Trace>(std::move(*predicted))) : py::object(py::none());
  return py::make_tuple(text, cols, p);
}

py::list scenario_list() {
  py::list out;
  for (const auto& b : whatif::builtin_scenarios()) {
    const auto s = whatif::find_scenario(std::string(b.name));
    py::dict d;
    d["name"] = s.name();
    d["description"] = s.description();
    py::dict params;
    for (const auto& p : s.parameters()) params[py::str(p.name)] = whatif::to_string(p.default_value);
    d["parameters"] = params;
    out.append(d);
  }
  return out;
}

} // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "dreamscope's C++ core for Python: traces, analyses and what-ifs (see docs/python.md)";
  py::register_exception<TraceError>(m, "TraceError", PyExc_RuntimeError);
  py::register_exception<whatif::ScenarioError>(m, "ScenarioError", PyExc_ValueError);

  py::class_<Trace, std::shared_ptr<Trace>>(m, "Trace")
      .def_property_readonly("source", [](const Trace& t) { return std::string(to_string(t.source())); })
      .def_property_readonly("begin_time", &Trace::begin_time)
      .def_property_readonly("end_time", &Trace::end_time)
      .def_property_readonly("event_count", &Trace::event_count)
      .def_property_readonly("memory_bytes", &Trace::memory_bytes)
      .def_property_readonly("complete", &Trace::complete)
      .def_property_readonly("dropped_events", &Trace::dropped_events)
      .def_property_readonly("meta", [](const Trace& t) { return t.meta(); })
      .def("table", &table_columns, py::arg("name"))
      .def("rank_subtrace", [](const Trace& t, std::int64_t rank) {
        py::gil_scoped_release release;
        return std::make_shared<Trace>(rank_subtrace(t, rank));
      })
      .def("hta_temporal", &temporal, py::arg("step_filter"))
      .def("hta_idle_time", &idle_time, py::arg("step_filter"), py::arg("consecutive_kernel_delay"),
           py::arg("intervals") = false)
      .def("hta_kernels", &kernel_breakdown, py::arg("step_filter"), py::arg("include_memory_kernels"))
      .def("hta_comm_comp_overlap", &comm_comp_overlap, py::arg("step_filter"))
      .def("hta_kernel_launches", &kernel_launches, py::arg("step_filter"))
      .def("hta_queue_length", &queue_length, py::arg("step_filter"))
      .def("hta_annotations", &annotation_totals, py::arg("step_filter"), py::arg("gpu"))
      .def("hta_annotation_durations", &annotation_durations, py::arg("step_filter"), py::arg("gpu"))
      .def("hta_straggler_events", &straggler_events, py::arg("step_filter"))
      .def("hta_kernels_with_annotations", &kernels_with_annotations, py::arg("step_filter"))
      .def("hta_trace_start", [](const Trace& t) { return analyzers::hta_trace_start(t); })
      .def("analyze_json", &analyze_json, py::arg("name"), py::arg("only"), py::arg("top"), py::arg("all_steps"),
           py::arg("step_filter"))
      .def("job_json", &job_json_from_trace, py::arg("name"), py::arg("all_steps"), py::arg("step_filter"))
      .def("replay", &replay_trace, py::arg("name"), py::arg("correct_overhead"), py::arg("make_trace"))
      .def("whatif", &whatif_trace, py::arg("name"), py::arg("scenarios"), py::arg("parameters"),
           py::arg("correct_overhead"), py::arg("data_stalls"), py::arg("make_trace"), py::arg("rank"));

  m.def("load", &load, py::arg("inputs"));
  m.def("load_ranks", &load_ranks, py::arg("inputs"), py::arg("threads") = 0);
  m.def("split_inputs", &split_inputs, py::arg("inputs"));
  m.def("job_json_from_summaries", &job_json_from_summaries, py::arg("files"), py::arg("all_steps"));
  m.def("scenarios", &scenario_list);
  m.def("tables", [] {
    std::vector<std::string> names;
    for (const char* const* t = table_names(); *t; ++t) names.emplace_back(*t);
    return names;
  });
}

} // namespace dreamscope::python
