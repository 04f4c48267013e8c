// A trace as the TensorBoard profiler plugin (torch_tb_profiler) reads a PyTorch profiler
// file, for the views that reproduce the plugin's numbers (internal to the analyzers).
//
// The plugin works on the events of one Kineto file: host events (operators, Python scopes,
// user annotations, ProfilerStep#N, nn.Module scopes), runtime calls and the GPU ops each
// launched (same correlation id), and it ties a runtime call to the operator that made it by
// external id. `build_model` picks those out of a Trace with the plugin's rules, in the order
// the plugin sees them (time order); traces from other sources (our tracer, Nsight Systems)
// get the nearest equivalents, as docs/analyze.md says.
#pragma once

#include "dreamscope/analyzers/tensorboard.h"

#include "common/intervals.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dreamscope::analyzers::tb {

using detail::Interval;

// What the plugin makes of a host event (its EventTypes).
enum class HostKind : std::uint8_t { Operator, Python, UserAnnotation, ProfilerStep, Module };

struct HostEvent {
  AnnotationIndex row{}; // annotation row
  TimeNs start = 0, end = 0;
  std::string_view name;
  HostKind kind = HostKind::Operator;
  std::int64_t external_id = kNoValue;
  std::int64_t thread = kNoValue; // the plugin keys threads by tid alone
  bool on_gpu_track = false;      // Kineto's gpu_user_annotation: it has no place in the call trees
};

struct DeviceOp {
  GpuOpIndex row{}; // GPU op row
  TimeNs start = 0, end = 0;
  GpuOpKind kind = GpuOpKind::Kernel;
  std::int64_t device = kNoValue;   // ordinal
  bool communication = false;       // a kernel of a collective: the Communication category
  std::uint32_t runtime = kNoIndex; // the runtime call that launched it, if one did
};

struct RuntimeCall {
  CudaApiIndex row{}; // CUDA API row
  TimeNs start = 0, end = 0;
  std::int64_t external_id = kNoValue;
  std::int64_t thread = kNoValue;
  std::vector<std::uint32_t> device_ops; // into Model::device_ops, by (start, longer first)
};

// The step categories but Other, which is what no role claims.
inline constexpr std::size_t kRoles = kStepCategories - 1;

struct HostStep {
  std::string name;
  TimeNs start = 0, end = 0;
};

// A Kineto python_function event, an nn.Module scope or not: the module hierarchy comes from
// their Python ids, and only the module scopes are host events.
struct PythonFunction {
  AnnotationIndex row{}; // annotation row
  TimeNs start = 0;
  bool module = false; // has a "Python module id" (not null)
};

struct Model {
  const Trace* trace = nullptr;
  bool kineto = false;                             // the plugin's rules exactly; other sources get equivalents
  std::vector<HostEvent> host;                     // time order
  std::vector<RuntimeCall> runtimes;               // time order
  std::vector<DeviceOp> device_ops;                // kernels, copies and memsets, time order
  std::vector<std::uint32_t> orphan_kernels;       // kernels no runtime call launched ("staled")
  std::array<std::vector<Interval>, kRoles> roles; // merged, indexed by StepCategory
  std::array<std::size_t, kRoles> role_events{};   // events of each role, zero-length ones too
  std::vector<HostStep> host_steps;                // ProfilerStep#N in time order, or the one synthetic step
  TimeNs timeline_begin = 0, timeline_end = 0;     // the GPU-utilization timeline's span
  // Kineto's fwdbwd flows: (forward operator start, backward operator start), one per forward
  // start, in flow order.
  std::vector<std::pair<TimeNs, TimeNs>> forward_backward;
  std::vector<PythonFunction> python_functions; // time order; Kineto traces only
};

Model build_model(const Trace& trace);

// The steps as the overview shows them: each extended to the end of the GPU work its
// launches caused, trailing steps that launched nothing dropped.
struct Steps {
  std::vector<StepTime> steps; // `time` not filled
  bool gpu_used = false;       // some launch inside a step ran something on the GPU
};

Steps device_steps(const Model& model);

// A kernel's blocks per SM and est. achieved occupancy (in percent) as Kineto recorded them;
// for traces from other sources, our estimates from the launch configuration and the device.
std::optional<double> blocks_per_sm(const Model& model, const DeviceOp& kernel);
std::optional<double> occupancy_pct(const Model& model, const DeviceOp& kernel);

// Whether a kernel's name says it runs on tensor cores (the plugin's list, from PyProf).
bool uses_tensor_cores(std::string_view kernel_name);
// Whether an operator is one that can use tensor cores (the plugin's list, exact names).
bool is_tensor_core_operator(std::string_view name);

// Names of the plugin's collective operators ("nccl:all_reduce", "gloo:broadcast", ...).
bool is_collective_operator(std::string_view name);

// ASCII lower case, as the plugin compares categories.
std::string lower(std::string_view s);

// The plugin's DataLoader / DataPipe iteration ranges (`enumerate(DataLoader)#...__next__`).
bool is_data_loader_name(std::string_view name);

// Python's str() of a JSON value ("[[2, 8, 5], []]"), as the plugin shows an input shape.
std::string python_repr(std::string_view json);

} // namespace dreamscope::analyzers::tb
