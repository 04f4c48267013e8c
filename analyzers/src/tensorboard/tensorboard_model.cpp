// The events the TensorBoard plugin reads, picked out of a Trace with the plugin's rules
// (its trace.py and event_parser.py at its last revision), and the roles they play in the
// step breakdown.
#include "tensorboard/tensorboard_model.h"

#include "hta/kineto_time.h"

#include "dreamscope/storage/kernel_classes.h"
#include "dreamscope/storage/steps.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>
#include <unordered_map>
#include <unordered_set>

namespace dreamscope::analyzers::tb {

namespace {

// Our tracer's data-pipeline annotations, which a Kineto file never has.
bool is_dreamscope_data_category(std::string_view category) {
  return category == annotation_category::kFetch || category == annotation_category::kPrep ||
         category == annotation_category::kWait;
}

// The role a host event plays in the step breakdown, or kRoles for none (steps and modules).
std::size_t role_of(const Model& m, const HostEvent& e) {
  const Trace& trace = *m.trace;
  const std::string_view category = trace.str(trace.annotations().category[e.row]);
  switch (e.kind) {
    case HostKind::ProfilerStep:
    case HostKind::Module: return kRoles;
    case HostKind::Operator:
    case HostKind::UserAnnotation:
      if (is_data_loader_name(e.name) || (!m.kineto && is_dreamscope_data_category(category))) {
        return static_cast<std::size_t>(StepCategory::DataLoader);
      }
      [[fallthrough]];
    case HostKind::Python:
      if (is_collective_operator(e.name) || (!m.kineto && category == annotation_category::kCollective)) {
        return static_cast<std::size_t>(StepCategory::Communication);
      }
      return static_cast<std::size_t>(StepCategory::CpuExec);
  }
  return kRoles;
}

// Whether an arg is there and not JSON null, which the plugin reads as Python's None.
bool has_value(const Trace& trace, AnnotationIndex row, std::string_view key) {
  const EventArg* a = trace.find_arg(row, key);
  return a && !(a->type == ArgType::Json && trace.str(a->text) == "null");
}

// Reads one host event the way the plugin's create_trace_event does; false: the plugin has
// no event for it (a category it does not know, a Python function that is not a module).
bool read_kineto_host_event(const Trace& trace, AnnotationIndex row, HostEvent& e) {
  const auto& ann = trace.annotations();
  const std::string category = lower(trace.str(ann.category[row]));
  const bool step_name = e.name.starts_with(kProfilerStepPrefix);
  if (category == "cpu_op" || category == "operator") {
    e.kind = step_name ? HostKind::ProfilerStep : HostKind::Operator;
  } else if (category == "user_annotation" || category == "gpu_user_annotation") {
    // PyTorch 2 draws each ProfilerStep#N on the GPU streams too; counting those as steps of
    // their own (as the plugin, which predates them, would) would overlap every step.
    if (step_name && e.on_gpu_track) return false;
    e.kind = step_name ? HostKind::ProfilerStep : HostKind::UserAnnotation;
  } else if (category == "python") {
    e.kind = HostKind::Python;
  } else if (category == "python_function" && has_value(trace, row, "Python module id")) {
    e.kind = HostKind::Module;
    e.external_id = kNoValue; // the plugin drops a module's external id: it launches nothing itself
  } else {
    return false;
  }
  return true;
}

// The plugin reads Kineto's µs into float64 and takes end = ts + dur there. At epoch
// timestamps (~1.7e15 µs) doubles are 0.25 µs apart, so its times, and with them which
// operators nest and how long everything is, are rounded that coarsely; the same rounding is
// applied here so that the numbers match. Integer-µs and small timestamps are unchanged.
struct Span {
  TimeNs start, end;
};
Span as_plugin_reads(bool kineto, TimeNs start, TimeNs end) {
  if (!kineto) return {start, end};
  const double ts = detail::us_as_parsed(start);
  return {detail::ns_of_us(ts), detail::ns_of_us(ts + detail::us_as_parsed(end - start))};
}

template <class T>
void sort_by_time(std::vector<T>& v, const std::vector<TrackId>& track_of_row) {
  std::stable_sort(v.begin(), v.end(), [&](const T& a, const T& b) {
    if (a.start != b.start) return a.start < b.start;
    if (track_of_row[a.row] != track_of_row[b.row]) return track_of_row[a.row] < track_of_row[b.row];
    return a.row < b.row;
  });
}

void write_python_repr(std::string_view json, std::size_t& i, std::string& out);

void skip_space(std::string_view json, std::size_t& i) {
  while (i < json.size() && std::isspace(static_cast<unsigned char>(json[i]))) ++i;
}

void write_python_repr(std::string_view json, std::size_t& i, std::string& out) {
  skip_space(json, i);
  if (i >= json.size()) return;
  const char c = json[i];
  if (c == '[' || c == '{') {
    const char close = c == '[' ? ']' : '}';
    out += c;
    ++i;
    bool first = true;
    for (;;) {
      skip_space(json, i);
      if (i >= json.size()) return;
      if (json[i] == close) {
        ++i;
        break;
      }
      if (json[i] == ',') {
        ++i;
        continue;
      }
      if (!first) out += ", ";
      first = false;
      write_python_repr(json, i, out);
      if (close == '}') {
        skip_space(json, i);
        if (i < json.size() && json[i] == ':') {
          ++i;
          out += ": ";
          write_python_repr(json, i, out);
        }
      }
    }
    out += close;
  } else if (c == '"') {
    std::string text;
    for (++i; i < json.size() && json[i] != '"'; ++i) {
      if (json[i] == '\\' && i + 1 < json.size()) ++i;
      text += json[i];
    }
    ++i;
    const char quote = text.find('\'') != std::string::npos && text.find('"') == std::string::npos ? '"' : '\'';
    out += quote;
    for (char ch : text) {
      if (ch == quote || ch == '\\') out += '\\';
      out += ch;
    }
    out += quote;
  } else {
    const std::size_t start = i;
    while (i < json.size() && json[i] != ',' && json[i] != ']' && json[i] != '}' &&
           !std::isspace(static_cast<unsigned char>(json[i]))) {
      ++i;
    }
    const std::string_view token = json.substr(start, i - start);
    if (token == "true") out += "True";
    else if (token == "false") out += "False";
    else if (token == "null") out += "None";
    else out += token;
  }
}

} // namespace

namespace {

std::optional<double> number_arg(const Trace& trace, GpuOpIndex row, std::string_view key) {
  const EventArg* a = trace.find_arg(row, key);
  if (!a) return std::nullopt;
  if (a->type == ArgType::Int) return static_cast<double>(a->int_value);
  if (a->type == ArgType::Double) return a->double_value;
  return std::nullopt;
}

const DeviceInfo* device_of(const Trace& trace, GpuOpIndex row) {
  const TrackInfo& track = trace.tracks()[trace.gpu_ops().track[row]];
  return track.device < trace.devices().size() ? &trace.devices()[track.device] : nullptr;
}

} // namespace

std::optional<double> blocks_per_sm(const Model& m, const DeviceOp& kernel) {
  const Trace& trace = *m.trace;
  if (auto v = number_arg(trace, kernel.row, "blocks per SM")) return v;
  const std::uint32_t launch = trace.gpu_ops().launch[kernel.row];
  const DeviceInfo* device = device_of(trace, kernel.row);
  if (m.kineto || launch == 0 || !device || device->sm_count <= 0) return std::nullopt;
  const LaunchConfig& l = trace.launch_configs()[launch];
  const double blocks = static_cast<double>(l.grid[0]) * std::max(l.grid[1], 1) * std::max(l.grid[2], 1);
  return blocks / static_cast<double>(device->sm_count);
}

std::optional<double> occupancy_pct(const Model& m, const DeviceOp& kernel) {
  const Trace& trace = *m.trace;
  if (auto v = number_arg(trace, kernel.row, "est. achieved occupancy %")) return v;
  const std::uint32_t launch = trace.gpu_ops().launch[kernel.row];
  const DeviceInfo* device = device_of(trace, kernel.row);
  if (m.kineto || launch == 0 || !device || device->sm_count <= 0) return std::nullopt;
  return 100.0 * estimated_achieved_occupancy(trace.launch_configs()[launch], *device);
}

bool uses_tensor_cores(std::string_view kernel_name) {
  static constexpr std::string_view kPatterns[] = {"h884",
                                                   "s884",
                                                   "h1688",
                                                   "s1688",
                                                   "hmma",
                                                   "i8816",
                                                   "16816",
                                                   "dgrad_1x1_stride_2x2",
                                                   "first_layer_wgrad_kernel",
                                                   "conv1x1",
                                                   "conv2d_c1_k1",
                                                   "direct_group",
                                                   "xmma_implicit_gemm",
                                                   "xmma_sparse_conv",
                                                   "xmma_warp_specialized_implicit_gemm",
                                                   "xmma_gemm",
                                                   "xmma_sparse_gemm",
                                                   "c1688"};
  for (std::string_view p : kPatterns) {
    if (kernel_name.find(p) != std::string_view::npos) return true;
  }
  return false;
}

bool is_tensor_core_operator(std::string_view name) {
  static constexpr std::string_view kOperators[] = {
      "aten::_convolution", "aten::_convolution_nogroup", "aten::conv1d", "aten::conv2d", "aten::conv3d",
      "aten::conv_tbc", "aten::conv_transpose1d", "aten::conv_transpose2d", "aten::conv_transpose3d",
      "aten::convolution", "aten::cudnn_convolution", "aten::cudnn_convolution_transpose", "aten::prelu", "aten::addmm",
      "aten::addmv", "aten::addr", "aten::matmul", "aten::mm", "aten::mv", "aten::linear", "aten::addbmm",
      "aten::baddbmm", "aten::bmm", "aten::chain_matmul", "aten::linalg_multi_dot", "aten::_thnn_fused_lstm_cell",
      "aten::_thnn_fused_gru_cell", "aten::lstm_cell", "aten::gru_cell", "aten::rnn_tanh_cell", "aten::rnn_relu_cell",
      // Backward operators seen to launch tensor-core kernels.
      "CudnnConvolutionBackward", "BmmBackward0", "aten::cudnn_convolution_transpose_backward",
      "CudnnConvolutionTransposeBackward", "MmBackward", "aten::cudnn_convolution_backward_weight", "aten::addmm_",
      "AddmvBackward", "MvBackward", "aten::cudnn_convolution_transpose_backward_weight",
      "aten::cudnn_convolution_transpose_backward_input", "AddmmBackward", "aten::cudnn_convolution_backward_input",
      "AddbmmBackward", "aten::cudnn_convolution_backward"};
  return std::find(std::begin(kOperators), std::end(kOperators), name) != std::end(kOperators);
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_data_loader_name(std::string_view name) {
  return (name.starts_with("enumerate(DataLoader)#") && name.ends_with(".__next__")) ||
         name.starts_with("enumerate(DataPipe)#");
}

bool is_collective_operator(std::string_view name) {
  static constexpr std::string_view kLibraries[] = {"nccl:", "gloo:"};
  static constexpr std::string_view kCollectives[] = {"broadcast", "reduce", "all_reduce", "all_gather",
                                                      "reduce_scatter"};
  for (std::string_view lib : kLibraries) {
    if (!name.starts_with(lib)) continue;
    const std::string_view op = name.substr(lib.size());
    return std::find(std::begin(kCollectives), std::end(kCollectives), op) != std::end(kCollectives);
  }
  return false;
}

std::string python_repr(std::string_view json) {
  std::string out;
  std::size_t i = 0;
  write_python_repr(json, i, out);
  return out;
}

Model build_model(const Trace& trace) {
  Model m;
  m.trace = &trace;
  m.kineto = trace.source() == TraceSource::Kineto;
  const auto& tracks = trace.tracks();
  const auto& ann = trace.annotations();
  const auto& api = trace.cuda_api();
  const auto& gpu = trace.gpu_ops();

  TimeNs global_min = std::numeric_limits<TimeNs>::max(), global_max = std::numeric_limits<TimeNs>::min();
  TimeNs cpu_min = global_min, cpu_max = global_max;
  auto seen = [&](TimeNs start, TimeNs end) {
    global_min = std::min(global_min, start);
    global_max = std::max(global_max, end);
  };

  for (AnnotationIndex i{0}; i < ann.size(); ++i) {
    const TrackInfo& track = tracks[ann.track[i]];
    const Span span = as_plugin_reads(m.kineto, ann.start[i], ann.end[i]);
    HostEvent e{.row = i, .start = span.start, .end = span.end, .name = trace.str(ann.name[i])};
    e.external_id = ann.external_id[i];
    e.on_gpu_track = track.kind == TrackKind::GpuStream;
    e.thread = e.on_gpu_track ? track.stream : track.tid;
    if (m.kineto) {
      if (!read_kineto_host_event(trace, i, e)) {
        // A Python function that is not a module is still an event: it widens the timeline,
        // and it links the modules it calls to the module that called it.
        if (lower(trace.str(ann.category[i])) == "python_function") {
          seen(e.start, e.end);
          m.python_functions.push_back({.row = i, .start = e.start});
        }
        continue;
      }
      if (e.kind == HostKind::Module) m.python_functions.push_back({.row = i, .start = e.start, .module = true});
    } else {
      if (e.on_gpu_track) continue;
      e.kind = is_step(trace, i) ? HostKind::ProfilerStep : HostKind::Operator;
    }
    m.host.push_back(e);
  }
  sort_by_time(m.host, ann.track);
  sort_by_time(m.python_functions, ann.track);

  for (CudaApiIndex i{0}; i < api.size(); ++i) {
    // The plugin knows runtime calls only (cuda_driver is not among its categories).
    if (m.kineto && api.kind[i] != ApiKind::Runtime) continue;
    const Span span = as_plugin_reads(m.kineto, api.start[i], api.end[i]);
    m.runtimes.push_back(RuntimeCall{.row = i,
                                     .start = span.start,
                                     .end = span.end,
                                     .external_id = api.external_id[i],
                                     .thread = tracks[api.track[i]].tid});
  }
  sort_by_time(m.runtimes, api.track);

  std::unordered_set<std::int64_t> collective_ids;
  for (const HostEvent& e : m.host) {
    if (e.kind != HostKind::Module && is_collective_operator(e.name) && e.external_id != kNoValue) {
      collective_ids.insert(e.external_id);
    }
  }
  for (GpuOpIndex i{0}; i < gpu.size(); ++i) {
    if (gpu.kind[i] == GpuOpKind::Sync) continue;
    const TrackInfo& track = tracks[gpu.track[i]];
    const Span span = as_plugin_reads(m.kineto, gpu.start[i], gpu.end[i]);
    DeviceOp d{.row = i, .start = span.start, .end = span.end, .kind = gpu.kind[i]};
    if (track.device < trace.devices().size()) d.device = trace.devices()[track.device].ordinal;
    if (d.kind == GpuOpKind::Kernel) {
      if (m.kineto) {
        // A collective's kernels carry its operator's external id.
        const auto id = trace.arg_int(i, "external id");
        d.communication = id && collective_ids.contains(*id);
      } else {
        d.communication = is_communication_kernel(trace.str(gpu.name[i]));
      }
    }
    m.device_ops.push_back(d);
  }
  sort_by_time(m.device_ops, gpu.track);

  // Launches: a GPU op belongs to the runtime call of its correlation id seen last before
  // it, or, if it came first, to the next one; ops no call claims are parked. The plugin does
  // this in one pass in time order, so it is done so here (calls first at equal times).
  {
    std::unordered_map<std::int64_t, std::uint32_t> runtime_of_correlation;
    std::unordered_map<std::int64_t, std::vector<std::uint32_t>> parked;
    std::vector<std::int64_t> parked_order;
    std::size_t r = 0, d = 0;
    while (r < m.runtimes.size() || d < m.device_ops.size()) {
      if (r < m.runtimes.size() && (d == m.device_ops.size() || m.runtimes[r].start <= m.device_ops[d].start)) {
        const std::int64_t corr = api.correlation[m.runtimes[r].row];
        if (corr != kNoValue) {
          runtime_of_correlation[corr] = static_cast<std::uint32_t>(r);
          if (auto it = parked.find(corr); it != parked.end()) {
            for (std::uint32_t op : it->second) m.runtimes[r].device_ops.push_back(op);
            parked.erase(it);
          }
        }
        ++r;
      } else {
        const std::int64_t corr = gpu.correlation[m.device_ops[d].row];
        if (auto it = runtime_of_correlation.find(corr); it != runtime_of_correlation.end()) {
          m.runtimes[it->second].device_ops.push_back(static_cast<std::uint32_t>(d));
        } else if (corr != kNoValue) {
          auto [slot, inserted] = parked.try_emplace(corr);
          if (inserted) parked_order.push_back(corr);
          slot->second.push_back(static_cast<std::uint32_t>(d));
        } else if (m.device_ops[d].kind == GpuOpKind::Kernel) {
          m.orphan_kernels.push_back(static_cast<std::uint32_t>(d));
        }
        ++d;
      }
    }
    for (std::int64_t corr : parked_order) {
      auto it = parked.find(corr);
      if (it == parked.end()) continue;
      for (std::uint32_t op : it->second) {
        if (m.device_ops[op].kind == GpuOpKind::Kernel) m.orphan_kernels.push_back(op);
      }
    }
    auto by_start_longer_first = [&](std::uint32_t a, std::uint32_t b) {
      const DeviceOp &x = m.device_ops[a], &y = m.device_ops[b];
      return x.start != y.start ? x.start < y.start : x.end > y.end;
    };
    for (std::uint32_t i = 0; i < m.runtimes.size(); ++i) {
      auto& ops = m.runtimes[i].device_ops;
      std::stable_sort(ops.begin(), ops.end(), by_start_longer_first);
      for (std::uint32_t op : ops) m.device_ops[op].runtime = i;
    }
    std::stable_sort(m.orphan_kernels.begin(), m.orphan_kernels.end(), by_start_longer_first);
  }

  // Roles and spans.
  std::array<std::vector<Interval>, kRoles> roles;
  auto add_role = [&](StepCategory c, TimeNs start, TimeNs end) {
    roles[static_cast<std::size_t>(c)].push_back({start, end});
  };
  for (const DeviceOp& d : m.device_ops) {
    seen(d.start, d.end);
    switch (d.kind) {
      case GpuOpKind::Kernel:
        add_role(d.communication ? StepCategory::Communication : StepCategory::Kernel, d.start, d.end);
        break;
      case GpuOpKind::Memcpy: add_role(StepCategory::Memcpy, d.start, d.end); break;
      case GpuOpKind::Memset: add_role(StepCategory::Memset, d.start, d.end); break;
      case GpuOpKind::Sync: break;
    }
  }
  for (const RuntimeCall& r : m.runtimes) {
    seen(r.start, r.end);
    add_role(StepCategory::Runtime, r.start, r.end);
  }
  for (const HostEvent& e : m.host) {
    seen(e.start, e.end);
    if (e.kind == HostKind::Python || e.kind == HostKind::Operator || e.kind == HostKind::ProfilerStep) {
      cpu_min = std::min(cpu_min, e.start);
      cpu_max = std::max(cpu_max, e.end);
    }
    if (e.kind == HostKind::ProfilerStep) m.host_steps.push_back({step_label(trace, e.row), e.start, e.end});
    const std::size_t role = role_of(m, e);
    if (role < kRoles) roles[role].push_back({e.start, e.end});
  }
  for (std::size_t r = 0; r < kRoles; ++r) {
    m.role_events[r] = roles[r].size();
    m.roles[r] = detail::merge_intervals(std::move(roles[r]));
  }

  if (m.host_steps.empty()) {
    // Without ProfilerStep#N the plugin takes the span of the CPU events as the one step.
    // Without CPU events its step would be empty (max, min); the whole trace is used instead.
    if (cpu_min <= cpu_max) m.host_steps.push_back({"(CPU span)", cpu_min, cpu_max});
    else if (global_min <= global_max) m.host_steps.push_back({"(whole trace)", global_min, global_max});
  }
  m.timeline_begin = global_min <= global_max ? global_min : 0;
  m.timeline_end = global_min <= global_max ? global_max : 0;
  if (m.kineto) {
    const std::optional<StringId> fwdbwd = trace.find_string("fwdbwd");
    std::unordered_map<TimeNs, std::size_t> index_of_forward;
    for (const FlowRecord& f : trace.flows()) {
      if (!fwdbwd || f.kind != *fwdbwd) continue;
      const TimeNs from = as_plugin_reads(true, f.from_time, f.from_time).start;
      const TimeNs to = as_plugin_reads(true, f.to_time, f.to_time).start;
      auto [it, inserted] = index_of_forward.try_emplace(from, m.forward_backward.size());
      if (inserted) m.forward_backward.emplace_back(from, to);
      else m.forward_backward[it->second].second = to;
    }
  }
  // The plugin's timeline runs over the profiler's own span when the file has it.
  const std::string span = trace.meta_value("kineto.profiler_span_ns");
  if (const std::size_t space = span.find(' '); m.kineto && space != std::string::npos) {
    const std::string_view text(span);
    TimeNs begin = 0, end = 0;
    const auto a = std::from_chars(text.data(), text.data() + space, begin);
    const auto b = std::from_chars(text.data() + space + 1, text.data() + text.size(), end);
    if (a.ec == std::errc() && b.ec == std::errc() && begin <= end) {
      const Span read = as_plugin_reads(true, begin, end);
      m.timeline_begin = read.start;
      m.timeline_end = read.end;
    }
  }
  return m;
}

} // namespace dreamscope::analyzers::tb
