// How fast the tracer's writer thread turns CUPTI activity buffers into part-file rows: the
// rate that decides whether a GPU job's records keep up with CUPTI (32 buffers of 4 MB;
// past that CUPTI drops and counts). Buffers are fabricated from the real CUDA 13 record
// structs, laid out as CUPTI lays them out, with a PyTorch-like mix per operator: the
// external correlation of its NVTX range, a cudaLaunchKernel and its kernel, two skipped
// cudaGetDevice calls; every 20th operator a copy, every 50th an event record and a stream
// wait. `records/s` and `launches/s` are the results:
//   build/release/bench/tracer_cupti_decoder_bench --benchmark_repetitions=5
#include "../../tests/common/fabricated_cupti.h"
#include "cupti_decoder.h"

#include <dreamscope/storage/trace_log.h>

#include <benchmark/benchmark.h>

#include <filesystem>
#include <unistd.h>

namespace dreamscope::tracer {
namespace {

using namespace fabricated;

constexpr std::size_t kBufferBytes = 4 << 20; // CUPTI's buffers in the tracer
constexpr int kBuffers = 8;                   // distinct correlation ranges, reused in turn

struct Mix {
  std::size_t records = 0, launches = 0;
};

// One buffer of operators starting at correlation `first`, filled to about 4 MB.
Mix fill(FabricatedBuffer& b, std::uint32_t first) {
  Mix mix;
  std::uint32_t c = first;
  std::uint64_t t = 1'000'000;
  for (int op = 0; b.size() < kBufferBytes - 4096; ++op, t += 10'000) {
    const std::uint64_t range = (std::uint64_t{1} << 40) | static_cast<std::uint64_t>(op);
    for (int noisy = 0; noisy < 2; ++noisy, ++c) {
      b.add(external_record(c, range));
      b.add(api_record(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, c, t, t + 100));
      mix.records += 2;
    }
    b.add(external_record(c, range));
    b.add(api_record(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, c, t + 200, t + 5'000));
    cupti::KernelRecord k = kernel_record();
    k.correlationId = c;
    k.start = t + 6'000;
    k.end = t + 9'000;
    b.add(k);
    mix.records += 3;
    ++mix.launches;
    ++c;
    if (op % 20 == 0) {
      b.add(external_record(c, range));
      b.add(api_record(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, c, t + 5'100, t + 5'500));
      b.add(memcpy_record(c, t + 5'600, t + 5'900, 9));
      mix.records += 3;
      ++c;
    }
    if (op % 50 == 0) {
      b.add(api_record(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020, c, t + 5'600, t + 5'700));
      b.add(event_record(c, 9, 3));
      ++c;
      b.add(api_record(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020, c, t + 5'800,
                       t + 5'900));
      b.add(sync_record(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, c, t + 5'800, t + 5'900, 7, 3));
      mix.records += 4;
      ++c;
    }
  }
  return mix;
}

void BM_DecodeActivityBuffers(benchmark::State& state) {
  std::vector<FabricatedBuffer> buffers(kBuffers);
  std::vector<Mix> mixes;
  std::uint32_t first = 1;
  for (auto& b : buffers) {
    mixes.push_back(fill(b, first));
    first += 1'000'000;
  }
  const auto path = std::filesystem::temp_directory_path() / ("ds-cupti-bench-" + std::to_string(getpid()) + ".dslog");
  TraceLogWriter writer(path);
  TraceTarget target(writer, writer.add_process(ProcessInfo{.pid = 4242, .name = "train"}));
  target.thread_track(4242, 0, "main");
  CuptiDecoder decoder(target, CuptiDecoderOptions{false, callback_name});
  Mix done;
  std::size_t i = 0;
  for (auto _ : state) {
    FabricatedBuffer& b = buffers[i % kBuffers];
    decoder.decode_buffer(b.data(), b.size(), b.walker());
    done.records += mixes[i % kBuffers].records;
    done.launches += mixes[i % kBuffers].launches;
    ++i;
  }
  decoder.finish();
  writer.close();
  state.counters["records/s"] = benchmark::Counter(static_cast<double>(done.records), benchmark::Counter::kIsRate);
  state.counters["launches/s"] = benchmark::Counter(static_cast<double>(done.launches), benchmark::Counter::kIsRate);
  state.counters["MB/s"] = benchmark::Counter(static_cast<double>(i) * static_cast<double>(buffers[0].size()) / 1e6,
                                              benchmark::Counter::kIsRate);
  state.counters["log_bytes_per_launch"] =
      static_cast<double>(std::filesystem::file_size(path)) / static_cast<double>(std::max<std::size_t>(done.launches, 1));
  std::filesystem::remove(path);
}
BENCHMARK(BM_DecodeActivityBuffers)->Unit(benchmark::kMillisecond)->UseRealTime();

} // namespace
} // namespace dreamscope::tracer

BENCHMARK_MAIN();
