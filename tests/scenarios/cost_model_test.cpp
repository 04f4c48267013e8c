// Cost models against numbers worked out by hand from the formulas in cost_models.h.
#include <dreamscope/whatif/cost_models.h>

#include <gtest/gtest.h>

#include <cmath>

using namespace dreamscope;
using namespace dreamscope::whatif;

namespace {

DeviceSpec device(std::string_view name) {
  auto d = find_device(name);
  EXPECT_TRUE(d.has_value()) << name;
  return d.value_or(DeviceSpec{});
}

LaunchConfig launch(int blocks, int threads, int registers = 0, int shared = 0) {
  LaunchConfig l;
  l.grid[0] = blocks;
  l.grid[1] = l.grid[2] = 1;
  l.block[0] = threads;
  l.block[1] = l.block[2] = 1;
  l.registers_per_thread = registers;
  l.shared_memory_static = shared;
  return l;
}

} // namespace

TEST(DeviceTable, HasTheRequiredGpus) {
  for (const char* name : {"V100", "A100", "H100", "H200", "L4", "RTX4090", "RTX3060"}) {
    const auto d = find_device(name);
    ASSERT_TRUE(d) << name;
    EXPECT_GT(d->sm_count, 0);
    EXPECT_GT(d->boost_clock_hz, 0);
    EXPECT_GT(d->memory_bandwidth_bytes_per_s, 0);
    EXPECT_GT(d->peak_fp32_flops, 0);
    EXPECT_GT(d->peak_fp16_tensor_flops, d->peak_fp32_flops);
  }
}

TEST(DeviceTable, FindsTheNamesDriversReport) {
  EXPECT_EQ(device("NVIDIA A100-SXM4-80GB").name, "A100");
  EXPECT_EQ(device("NVIDIA A100-SXM4-40GB").name, "A100-40GB");
  EXPECT_EQ(device("NVIDIA A100-PCIE-40GB").name, "A100-40GB");
  EXPECT_EQ(device("NVIDIA A100 80GB PCIe").name, "A100-PCIe-80GB");
  EXPECT_EQ(device("Tesla V100-SXM2-16GB").name, "V100");
  EXPECT_EQ(device("Tesla V100-PCIE-32GB").name, "V100-PCIe");
  EXPECT_EQ(device("NVIDIA H100 80GB HBM3").name, "H100");
  EXPECT_EQ(device("NVIDIA H100 PCIe").name, "H100-PCIe");
  EXPECT_EQ(device("NVIDIA H200").name, "H200");
  EXPECT_EQ(device("NVIDIA L4").name, "L4");
  EXPECT_EQ(device("NVIDIA GeForce RTX 4090").name, "RTX4090");
  EXPECT_EQ(device("NVIDIA GeForce RTX 3060").name, "RTX3060");
  EXPECT_EQ(device("rtx 3060").name, "RTX3060");
  // Other chips that share a prefix are not confused with the table's.
  EXPECT_FALSE(find_device("NVIDIA GeForce RTX 3060 Ti"));
  EXPECT_FALSE(find_device("NVIDIA L40S"));
  EXPECT_FALSE(find_device("NVIDIA A10"));
}

TEST(DeviceTable, TraceValuesOverrideTheTable) {
  DeviceInfo info;
  info.name = "NVIDIA H100 80GB HBM3";
  info.sm_count = 132;
  info.core_clock_khz = 1755000;
  info.memory_bandwidth_bytes_per_s = 3352000000000;
  const auto d = device_from_trace(info);
  ASSERT_TRUE(d);
  EXPECT_DOUBLE_EQ(d->boost_clock_hz, 1755e6);
  EXPECT_DOUBLE_EQ(d->memory_bandwidth_bytes_per_s, 3352e9);
  EXPECT_DOUBLE_EQ(d->peak_fp32_flops, 67e12); // only the table has it

  DeviceInfo unknown;
  unknown.name = "Mystery GPU";
  EXPECT_FALSE(device_from_trace(unknown));
  unknown.sm_count = 10;
  unknown.core_clock_khz = 1000000;
  unknown.memory_bandwidth_bytes_per_s = 100000000000;
  ASSERT_TRUE(device_from_trace(unknown));
  EXPECT_EQ(device_from_trace(unknown)->sm_count, 10);
}

TEST(WaveScaling, MemoryBoundWithoutCountersScalesWithBandwidth) {
  // γ = 1: T_d = T_o · D_o/D_d. V100 → A100 (80 GB): 900/2039 GB/s.
  WaveScalingCost m{device("V100"), device("A100")};
  EXPECT_DOUBLE_EQ(m.gamma(std::nullopt), 1.0);
  TaskCost k{.measured = 1'000'000, .launch = launch(10000, 256)};
  EXPECT_EQ(predict_duration(m, k), std::llround(1e6 * 900.0 / 2039.0)); // 441393 ns
  EXPECT_EQ(predict_duration(m, k), 441393);
}

TEST(WaveScaling, GammaFollowsTheRidgePointOfTheDestination) {
  // A100: 19.5 TFLOP/s over 2039 GB/s = 9.5635 FLOP/byte.
  WaveScalingCost m{device("V100"), device("A100")};
  const double ridge = 19.5e12 / 2039e9;
  EXPECT_NEAR(m.destination.ridge_point(), ridge, 1e-9);
  EXPECT_DOUBLE_EQ(m.gamma(0.0), 1.0);
  EXPECT_NEAR(m.gamma(ridge / 2), 0.75, 1e-12);
  EXPECT_NEAR(m.gamma(ridge), 0.5, 1e-12);
  EXPECT_NEAR(m.gamma(4 * ridge), 0.125, 1e-12);
}

TEST(WaveScaling, ComputeBoundKernelScalesWithClockAndSms) {
  // γ = R/(2I) with I = 4R → γ = 1/8. V100 → A100:
  //   (900/2039)^(1/8) · (1530/1410)^(7/8) · (80/108)^(7/8)
  WaveScalingCost m{device("V100"), device("A100")};
  const double ridge = m.destination.ridge_point();
  TaskCost k{.measured = 1'000'000, .launch = launch(100000, 128), .arithmetic_intensity = 4 * ridge};
  const double expected = 1e6 * std::pow(900.0 / 2039.0, 0.125) * std::pow(1530.0 / 1410.0, 0.875) *
                          std::pow(80.0 / 108.0, 0.875);
  EXPECT_EQ(predict_duration(m, k), std::llround(expected));
  // Worked by hand: 0.90282 · 1.07408 · 0.76906 = 0.74576 → 745.76 µs.
  EXPECT_EQ(predict_duration(m, k), 745761);
}

TEST(WaveScaling, KernelSmallerThanOneWaveKeepsItsTimeWhenMemoryBound) {
  // 40 blocks of 256 threads: a V100 wave holds 80 SMs × 8 blocks = 640, an A100 wave 864.
  const LaunchConfig small = launch(40, 256);
  EXPECT_EQ(WaveScalingCost::wave_size(device("V100"), small), 640);
  EXPECT_EQ(WaveScalingCost::wave_size(device("A100"), small), 864);
  WaveScalingCost m{device("V100"), device("A100")};
  EXPECT_EQ(predict_duration(m, TaskCost{.measured = 5000, .launch = small}), 5000);
  // With γ = 1/2 (I = R) only the clock and per-SM stacking move it: (1530/1410 · 1/1)^(1/2).
  const double ridge = m.destination.ridge_point();
  EXPECT_EQ(predict_duration(m, TaskCost{.measured = 5000, .launch = small, .arithmetic_intensity = ridge}),
            5208);
}

TEST(WaveScaling, OccupancyIsLimitedByRegistersAndSharedMemory) {
  const DeviceSpec a100 = device("A100");
  // 256 threads × 128 registers = 32768 per block → 2 blocks per SM → 216 per wave.
  EXPECT_EQ(WaveScalingCost::wave_size(a100, launch(1, 256, 128)), 216);
  // 100 KiB of shared memory per block, 164 KiB per SM → 1 block per SM.
  EXPECT_EQ(WaveScalingCost::wave_size(a100, launch(1, 64, 0, 100 * 1024)), 108);
  EXPECT_EQ(WaveScalingCost::wave_size(a100, LaunchConfig{}), 0);
}

TEST(RingAllReduce, AlphaBetaByHand) {
  // 8 workers, 100 MB, 5 µs, 100 GB/s: 14·5 µs + 14/8 · 100e6/100e9 s = 70 µs + 1750 µs.
  RingAllReduceCost m{.workers = 8, .latency_s = 5e-6, .link_bandwidth_bytes_per_s = 100e9};
  EXPECT_EQ(predict_duration(m, TaskCost{.bytes = 100'000'000}), 1'820'000);
  // Two workers: 2 steps, each half the data.
  RingAllReduceCost two{.workers = 2, .latency_s = 1e-6, .link_bandwidth_bytes_per_s = 10e9};
  EXPECT_EQ(predict_duration(two, TaskCost{.bytes = 1'000'000}), 2'000 + 100'000);
  RingAllReduceCost one{.workers = 1, .latency_s = 1e-6, .link_bandwidth_bytes_per_s = 10e9};
  EXPECT_EQ(predict_duration(one, TaskCost{.bytes = 1'000'000}), 0);
}

TEST(CostModels, ConstantAndRatioNeverGoNegative) {
  EXPECT_EQ(predict_duration(ConstantCost{1234}, TaskCost{.measured = 99}), 1234);
  EXPECT_EQ(predict_duration(RatioCost{0.5, 10}, TaskCost{.measured = 1000}), 510);
  EXPECT_EQ(predict_duration(RatioCost{1.0, -5000}, TaskCost{.measured = 1000}), 0);
}
