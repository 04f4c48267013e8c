#include <dreamscope/whatif/cost_models.h>
#include <dreamscope/storage/limits.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace dreamscope::whatif {

namespace {

TimeNs non_negative(double ns) { return ns <= 0 ? 0 : limits::saturated_ns(ns); }

std::int64_t threads_per_block(const LaunchConfig& l) {
  return static_cast<std::int64_t>(l.block[0]) * std::max(l.block[1], 1) * std::max(l.block[2], 1);
}

std::int64_t block_count(const LaunchConfig& l) {
  return static_cast<std::int64_t>(l.grid[0]) * std::max(l.grid[1], 1) * std::max(l.grid[2], 1);
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

TimeNs wave_scaled(const WaveScalingCost& m, const TaskCost& task) {
  const double gamma = m.gamma(task.arithmetic_intensity);
  const double compute_exponent = 1.0 - gamma;
  const auto& o = m.origin;
  const auto& d = m.destination;
  const double measured = static_cast<double>(task.measured);
  const double clock_factor = o.boost_clock_hz / d.boost_clock_hz;

  // Habitat: a kernel that fills less than one wave on both GPUs keeps every SM it uses
  // busy for one block's time, so bandwidth and SM count do not move it; only the clock and
  // the number of blocks stacked per SM do.
  const std::int64_t blocks = block_count(task.launch);
  const std::int64_t origin_wave = WaveScalingCost::wave_size(o, task.launch);
  const std::int64_t destination_wave = WaveScalingCost::wave_size(d, task.launch);
  if (blocks > 0 && origin_wave > 0 && destination_wave > 0 && blocks < origin_wave && blocks < destination_wave) {
    const double stacked_origin = static_cast<double>(ceil_div(blocks, o.sm_count));
    const double stacked_destination = static_cast<double>(ceil_div(blocks, d.sm_count));
    const double partial_compute_factor = clock_factor * (stacked_destination / stacked_origin);
    return non_negative(measured * std::pow(partial_compute_factor, compute_exponent));
  }

  const double bandwidth_factor = o.memory_bandwidth_bytes_per_s / d.memory_bandwidth_bytes_per_s;
  const double sm_factor = static_cast<double>(o.sm_count) / static_cast<double>(d.sm_count);
  return non_negative(measured * std::pow(bandwidth_factor, gamma) * std::pow(clock_factor, compute_exponent) *
                      std::pow(sm_factor, compute_exponent));
}

TimeNs ring_all_reduce(const RingAllReduceCost& m, const TaskCost& task) {
  if (m.workers <= 1) return 0;
  const double p = static_cast<double>(m.workers);
  const double steps = 2.0 * (p - 1.0);
  const double seconds =
      steps * m.latency_s + steps / p * static_cast<double>(task.bytes) / m.link_bandwidth_bytes_per_s;
  return non_negative(seconds * 1e9);
}

} // namespace

double WaveScalingCost::gamma(std::optional<double> arithmetic_intensity) const {
  if (!arithmetic_intensity) return 1.0;
  const double intensity = *arithmetic_intensity;
  const double ridge = destination.ridge_point();
  if (!(ridge > 0) || !(intensity > 0)) return 1.0;
  // Linear from 1 (pure streaming) down to 0.5 at the ridge, then R/(2I) towards 0 for
  // kernels ever more compute bound: continuous, and within [0, 1].
  if (intensity <= ridge) return 1.0 - 0.5 * intensity / ridge;
  return 0.5 * ridge / intensity;
}

std::int64_t WaveScalingCost::wave_size(const DeviceSpec& device, const LaunchConfig& launch) {
  const std::int64_t threads = threads_per_block(launch);
  if (threads <= 0 || device.sm_count <= 0) return 0;
  std::int64_t per_sm = device.max_blocks_per_sm;
  per_sm = std::min<std::int64_t>(per_sm, device.max_threads_per_sm / threads);
  if (launch.registers_per_thread > 0) {
    per_sm = std::min<std::int64_t>(per_sm, device.registers_per_sm / (launch.registers_per_thread * threads));
  }
  const std::int64_t shared = launch.shared_memory();
  if (shared > 0 && device.shared_memory_per_sm_bytes > 0) {
    per_sm = std::min<std::int64_t>(per_sm, device.shared_memory_per_sm_bytes / shared);
  }
  // A launch that ran on the origin fits at least one block per SM; the estimate above
  // ignores allocation granularity, so never let it drop to zero.
  return std::max<std::int64_t>(per_sm, 1) * device.sm_count;
}

TimeNs predict_duration(const CostModel& model, const TaskCost& task) {
  struct Visitor {
    const TaskCost& task;
    TimeNs operator()(const ConstantCost& m) const { return std::max<TimeNs>(m.duration, 0); }
    TimeNs operator()(const RatioCost& m) const {
      return non_negative(static_cast<double>(task.measured) * m.ratio + static_cast<double>(m.add));
    }
    TimeNs operator()(const WaveScalingCost& m) const { return wave_scaled(m, task); }
    TimeNs operator()(const RingAllReduceCost& m) const { return ring_all_reduce(m, task); }
  };
  return std::visit(Visitor{task}, model);
}

std::string describe(const CostModel& model) {
  struct Visitor {
    std::string operator()(const ConstantCost& m) const { return fmt::format("constant {} ns", m.duration); }
    std::string operator()(const RatioCost& m) const {
      return m.add == 0 ? fmt::format("×{:.3g}", m.ratio) : fmt::format("×{:.3g} {:+} ns", m.ratio, m.add);
    }
    std::string operator()(const WaveScalingCost& m) const {
      return fmt::format("wave scaling {} → {}", m.origin.name, m.destination.name);
    }
    std::string operator()(const RingAllReduceCost& m) const {
      return fmt::format("ring all-reduce over {} workers (α {:.3g} µs, β {:.3g} GB/s)", m.workers,
                         m.latency_s * 1e6, m.link_bandwidth_bytes_per_s / 1e9);
    }
  };
  return std::visit(Visitor{}, model);
}

} // namespace dreamscope::whatif
