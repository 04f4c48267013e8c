// Cost models: how long a task would take under a what-if, from what the trace measured.
//
//   constant      a fixed duration (a fused kernel of known cost, a synthetic batch)
//   ratio         measured × ratio + add (Daydream's scaling: AMP, a faster CPU)
//   wave scaling  a kernel moved to another GPU (Habitat, ATC'21)
//   ring α-β      a ring all-reduce of n bytes over p workers
//
// The device table holds the published specifications of the GPUs that wave scaling
// moves kernels between; docs/whatif.md cites the vendor documents.
#pragma once

#include <dreamscope/storage/trace.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>

namespace dreamscope::whatif {

// A GPU as wave scaling and the occupancy estimate see it.
struct DeviceSpec {
  std::string name;        // short name used in scenarios: "A100", "RTX4090"
  std::string model;       // the vendor's product name of the measured variant
  std::int64_t sm_count = 0;
  double boost_clock_hz = 0;
  double memory_bandwidth_bytes_per_s = 0;
  double peak_fp32_flops = 0;
  double peak_fp16_tensor_flops = 0; // dense, FP32 accumulate (what mixed precision uses)
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  // Per-SM limits of the architecture (CUDA C++ Programming Guide, "Compute Capabilities"),
  // for the number of thread blocks one wave holds.
  int max_threads_per_sm = 2048;
  int max_blocks_per_sm = 32;
  int registers_per_sm = 65536;
  int shared_memory_per_sm_bytes = 0;

  // FLOP per byte where the FP32 roofline bends: kernels below it are memory bound.
  double ridge_point() const { return peak_fp32_flops / memory_bandwidth_bytes_per_s; }
};

// The built-in table: V100, A100 (40 and 80 GB), H100 (SXM and PCIe), H200, L4, RTX 4090,
// RTX 3060.
std::span<const DeviceSpec> device_table();

// The table's entry for a short name ("a100", "RTX 4090") or for the name a trace's
// DeviceInfo carries ("NVIDIA A100-SXM4-80GB", "Tesla V100-SXM2-16GB"); case and the
// "NVIDIA"/"Tesla"/"GeForce" prefixes do not matter. A memory-size or form-factor suffix
// picks the matching variant.
std::optional<DeviceSpec> find_device(std::string_view name);

// The measured GPU of a trace: its table entry with the values the tracer read from the
// device itself (SMs, clock, bandwidth) taking precedence, since they describe the card that
// ran. Empty when the name is unknown and the trace lacks SMs, clock or bandwidth.
std::optional<DeviceSpec> device_from_trace(const DeviceInfo& device);

// The names of the table's devices, for error messages.
std::string device_names();

// What a cost model may look at in one task.
struct TaskCost {
  TimeNs measured = 0;
  LaunchConfig launch;    // kernels; all zero when unknown
  std::int64_t bytes = 0; // copies, memsets, collectives
  // FLOP per byte of DRAM traffic, when counters gave it; without it wave scaling treats the
  // kernel as memory bound (Habitat's rule when metrics are missing).
  std::optional<double> arithmetic_intensity;
};

struct ConstantCost {
  TimeNs duration = 0;
};

struct RatioCost {
  double ratio = 1.0;
  TimeNs add = 0;
};

// Habitat's wave scaling of a kernel from `origin` to `destination`:
//   T_d = T_o · (D_o/D_d)^γ · (C_o/C_d)^(1−γ) · (S_o/S_d)^(1−γ)
// with D memory bandwidth, C clock, S SM count, and γ from the kernel's arithmetic
// intensity I against the destination's ridge point R:
//   γ = 1 − I/(2R) for I ≤ R,  γ = R/(2I) above it,  γ = 1 without counters.
// A kernel too small to fill one wave on either GPU is not bandwidth-scaled: its time moves
// only with the compute factor, clock ratio × ceil(blocks/SMs) ratio, raised to 1−γ.
struct WaveScalingCost {
  DeviceSpec origin;
  DeviceSpec destination;

  double gamma(std::optional<double> arithmetic_intensity) const;
  // Thread blocks that run at once on the whole GPU for this launch (0 when unknown).
  static std::int64_t wave_size(const DeviceSpec& device, const LaunchConfig& launch);
};

// Ring all-reduce of n bytes over p workers, α-β model (Thakur, Rabenseifner and Gropp,
// 2005): 2(p−1) steps, each paying the link latency α and moving n/p bytes at bandwidth β:
//   T = 2(p−1)·α + 2·(p−1)/p · n/β
struct RingAllReduceCost {
  std::int64_t workers = 1;
  double latency_s = 0;               // α, per step
  double link_bandwidth_bytes_per_s = 0; // β, per direction of one link
};

using CostModel = std::variant<ConstantCost, RatioCost, WaveScalingCost, RingAllReduceCost>;

// The predicted duration of a task under a cost model, never negative.
TimeNs predict_duration(const CostModel& model, const TaskCost& task);

std::string describe(const CostModel& model);

} // namespace dreamscope::whatif
