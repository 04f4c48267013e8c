// The category names of the TensorBoard plugin's step breakdown, and our estimates of a
// kernel's SM efficiency and achieved occupancy from its launch configuration, for traces
// that did not record Kineto's (tensorboard_steps.cpp, tensorboard_gpu.cpp use them).
#include "dreamscope/analyzers/tensorboard.h"

#include <algorithm>

namespace dreamscope::analyzers {

namespace {

struct DeviceLimits {
  int max_warps_per_sm;
  int max_blocks_per_sm;
  int registers_per_sm;
  int shared_memory_per_sm; // bytes
};

// Per-SM limits from the CUDA occupancy calculator, by compute capability.
DeviceLimits limits_for(const DeviceInfo& d) {
  const int cc = static_cast<int>(d.compute_capability_major * 10 + d.compute_capability_minor);
  if (cc >= 90) return {64, 32, 65536, 233472};
  if (cc == 89) return {48, 24, 65536, 102400};
  if (cc >= 86) return {48, 16, 65536, 102400};
  if (cc >= 80) return {64, 32, 65536, 167936};
  if (cc >= 75) return {32, 16, 65536, 65536};
  if (cc >= 70) return {64, 32, 65536, 98304};
  if (cc >= 60) return {64, 32, 65536, 65536};
  return {64, 32, 65536, 49152};
}

std::int64_t blocks_of(const LaunchConfig& l) {
  return static_cast<std::int64_t>(l.grid[0]) * std::max(l.grid[1], 1) * std::max(l.grid[2], 1);
}
std::int64_t threads_per_block(const LaunchConfig& l) {
  return static_cast<std::int64_t>(l.block[0]) * std::max(l.block[1], 1) * std::max(l.block[2], 1);
}

} // namespace

std::string_view to_string(StepCategory c) {
  switch (c) {
    case StepCategory::Kernel: return "Kernel";
    case StepCategory::Memcpy: return "Memcpy";
    case StepCategory::Memset: return "Memset";
    case StepCategory::Communication: return "Communication";
    case StepCategory::Runtime: return "Runtime";
    case StepCategory::DataLoader: return "DataLoader";
    case StepCategory::CpuExec: return "CPU Exec";
    case StepCategory::Other: return "Other";
  }
  return "Other";
}

double estimated_sm_efficiency(const LaunchConfig& launch, std::int64_t sm_count) {
  if (sm_count <= 0 || blocks_of(launch) <= 0) return 0;
  return std::min(1.0, static_cast<double>(blocks_of(launch)) / static_cast<double>(sm_count));
}

double theoretical_occupancy(const LaunchConfig& launch, const DeviceInfo& device) {
  const std::int64_t threads = threads_per_block(launch);
  if (threads <= 0) return 0;
  const DeviceLimits lim = limits_for(device);
  const std::int64_t warps_per_block = (threads + 31) / 32;
  std::int64_t blocks = std::min<std::int64_t>(lim.max_blocks_per_sm, lim.max_warps_per_sm / warps_per_block);
  if (launch.registers_per_thread > 0) {
    // Registers are allocated per warp in units of 256.
    const std::int64_t per_warp = (launch.registers_per_thread * 32 + 255) / 256 * 256;
    blocks = std::min(blocks, lim.registers_per_sm / (per_warp * warps_per_block));
  }
  const std::int64_t shared = launch.shared_memory();
  if (shared > 0) blocks = std::min(blocks, lim.shared_memory_per_sm / shared);
  return std::clamp(static_cast<double>(blocks * warps_per_block) / lim.max_warps_per_sm, 0.0, 1.0);
}

double estimated_achieved_occupancy(const LaunchConfig& launch, const DeviceInfo& device) {
  if (device.sm_count <= 0) return 0;
  const DeviceLimits lim = limits_for(device);
  const double threads = static_cast<double>(blocks_of(launch) * threads_per_block(launch));
  const double by_shape = threads / static_cast<double>(device.sm_count) / (lim.max_warps_per_sm * 32.0);
  return std::min(by_shape, theoretical_occupancy(launch, device));
}

} // namespace dreamscope::analyzers
