// dreamscope-gui at scale: how long a 1 M- and a 10 M-event trace take to open (read the
// file, build the timeline's lanes), and how long one frame of the timeline takes to paint
// at several zoom levels, as median and 95th percentile over many frames.
//
//   build/gui/bench/gui_bench                       # both sizes
//   build/gui/bench/gui_bench --benchmark_filter='^BM_[A-Za-z]+/1000000/'   # 1 M only
//
// The traces are written once with the storage writer into $TMPDIR and reused.
#include "timeline_view.h"
#include "trace_document.h"

#include <dreamscope/storage/trace_file.h>

#include <benchmark/benchmark.h>

#include <QApplication>
#include <QImage>
#include <QPainter>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dreamscope::gui {
namespace {

constexpr int kThreads = 4;          // each drives its own stream
constexpr int kOpsPerStep = 200;
constexpr TimeNs kOpPeriod = 10000;  // 10 us per operation

// A training loop: per thread, steps of `kOpsPerStep` operations; each operation is an
// annotation (depth 2, inside step > forward/backward), a launch, and its kernel.
Trace make_trace(std::int64_t events) {
  TraceBuilder b;
  b.set_source(TraceSource::Tracer);
  const auto proc = b.add_process(ProcessInfo{.pid = 4242, .name = "train.py"});
  DeviceInfo d;
  d.name = "Benchmark GPU";
  d.process = proc;
  const auto dev = b.add_device(d);
  const std::int64_t ops = events / 3;
  b.reserve(static_cast<std::size_t>(ops), static_cast<std::size_t>(ops), static_cast<std::size_t>(ops + ops / 50));
  std::vector<StringId> kernel_names, op_names;
  for (int k = 0; k < 40; ++k) {
    kernel_names.push_back(b.intern("kernel_" + std::to_string(k) + "_sm90_xmma_gemm"));
    op_names.push_back(b.intern("aten::op_" + std::to_string(k)));
  }
  const StringId step = b.intern("step"), fwd = b.intern("forward"), bwd = b.intern("backward");
  const StringId launch = b.intern("cudaLaunchKernel");
  std::int64_t correlation = 1;
  for (int th = 0; th < kThreads; ++th) {
    const TrackId cpu = b.thread_track(proc, 1000 + th, "worker-" + std::to_string(th));
    const TrackId gpu = b.stream_track(dev, 7 + th);
    const std::int64_t my_ops = ops / kThreads;
    for (std::int64_t i = 0; i < my_ops; ++i) {
      const TimeNs t = i * kOpPeriod + th * 1300;
      if (i % kOpsPerStep == 0) {
        const TimeNs end = t + kOpsPerStep * kOpPeriod - 500;
        b.add(AnnotationRecord{.track = cpu, .start = t, .end = end, .name = step});
        b.add(AnnotationRecord{.track = cpu, .start = t + 100, .end = t + kOpsPerStep / 2 * kOpPeriod - 200, .name = fwd});
        b.add(AnnotationRecord{.track = cpu, .start = t + kOpsPerStep / 2 * kOpPeriod, .end = end - 100, .name = bwd});
      }
      const int k = static_cast<int>((i * 7 + th) % 40);
      b.add(AnnotationRecord{.track = cpu, .start = t + 400, .end = t + 8400, .name = op_names[k]});
      b.add(CudaApiRecord{.track = cpu, .start = t + 1000, .end = t + 4000, .name = launch, .correlation = correlation});
      b.add(GpuOpRecord{.track = gpu, .kind = GpuOpKind::Kernel, .start = t + 5000,
                        .end = t + 5000 + 2000 + (k % 8) * 1000, .name = kernel_names[k], .correlation = correlation});
      ++correlation;
    }
  }
  return std::move(b).build();
}

std::filesystem::path trace_file(std::int64_t events) {
  const char* tmp = std::getenv("TMPDIR");
  const auto path = std::filesystem::path(tmp ? tmp : "/tmp") / ("dreamscope-gui-bench-" + std::to_string(events) + ".db");
  if (!std::filesystem::exists(path)) write_trace(make_trace(events), path);
  return path;
}

std::shared_ptr<const TraceDocument>& cached_document(std::int64_t events) {
  static std::map<std::int64_t, std::shared_ptr<const TraceDocument>> docs;
  return docs[events];
}

void BM_OpenTrace(benchmark::State& state) {
  const auto path = trace_file(state.range(0));
  std::size_t events = 0;
  for (auto _ : state) {
    LoadOutcome out = load_document({path.string()});
    if (!out.document) {
      state.SkipWithError(out.error.toStdString().c_str());
      return;
    }
    events = out.document->trace().event_count();
    cached_document(state.range(0)) = out.document;
  }
  state.counters["events"] = static_cast<double>(events);
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsIterationInvariantRate);
}

// The GUI's own share of opening: lanes, colours and kernel statistics from a Trace in memory.
void BM_BuildTimeline(benchmark::State& state) {
  auto& doc = cached_document(state.range(0));
  if (!doc) doc = load_document({trace_file(state.range(0)).string()}).document;
  for (auto _ : state) {
    state.PauseTiming();
    Trace copy = doc->trace();
    state.ResumeTiming();
    TraceDocument built(std::move(copy));
    benchmark::DoNotOptimize(built.kernel_stats().data());
    state.PauseTiming();
    {
      TraceDocument gone(std::move(built)); // freeing ten million rows is not the GUI's work
    }
    state.ResumeTiming();
  }
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(doc->trace().event_count()),
                                                      benchmark::Counter::kIsIterationInvariantRate);
}

// range(0): events; range(1): nanoseconds per pixel (0 = the whole trace).
void BM_PaintFrame(benchmark::State& state) {
  auto& doc = cached_document(state.range(0));
  if (!doc) {
    LoadOutcome out = load_document({trace_file(state.range(0)).string()});
    doc = out.document;
  }
  constexpr int kWidth = 1920, kHeight = 1080;
  TimelineView view;
  view.resize(kWidth, kHeight);
  view.set_document(doc);
  view.fit_all();
  const TimeScale fitted = view.scale();
  const TimeNs middle = (doc->trace().begin_time() + doc->trace().end_time()) / 2;
  const double nspp = state.range(1) == 0 ? fitted.ns_per_pixel() : static_cast<double>(state.range(1));
  const int width = TimelineView::time_area_width(view.viewport()->width());
  QImage img(view.viewport()->size(), QImage::Format_RGB32);
  std::vector<double> frame_ms;
  std::int64_t frame = 0;
  for (auto _ : state) {
    // Each frame pans a little, as while dragging, so no frame repeats the last one.
    const TimeNs origin = middle - static_cast<TimeNs>(nspp * width / 2) + static_cast<TimeNs>(nspp * 7 * (frame++ % 50));
    view.set_scale(TimeScale(origin, nspp));
    const auto t0 = std::chrono::steady_clock::now();
    {
      QPainter p(&img);
      view.paint(p, img.size());
    }
    frame_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(frame_ms.begin(), frame_ms.end());
  auto percentile = [&](double q) { return frame_ms[static_cast<std::size_t>(q * static_cast<double>(frame_ms.size() - 1))]; };
  state.counters["median_ms"] = percentile(0.5);
  state.counters["p95_ms"] = percentile(0.95);
  state.counters["ns_per_px"] = nspp;
}

void register_all() {
  for (std::int64_t events : {1'000'000, 10'000'000}) {
    benchmark::RegisterBenchmark("BM_OpenTrace", BM_OpenTrace)->Arg(events)->Unit(benchmark::kMillisecond)->Iterations(events > 5'000'000 ? 2 : 5)->UseRealTime();
    benchmark::RegisterBenchmark("BM_BuildTimeline", BM_BuildTimeline)->Arg(events)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
    // Whole trace, one step per screen, a few operations per pixel, a few pixels per
    // operation, and deep inside one kernel.
    for (std::int64_t nspp : {0, 1'000'000, 20'000, 2'000, 500, 1}) {
      benchmark::RegisterBenchmark("BM_PaintFrame", BM_PaintFrame)->Args({events, nspp})->Unit(benchmark::kMillisecond)->Iterations(200)->UseRealTime();
    }
  }
}

} // namespace
} // namespace dreamscope::gui

int main(int argc, char** argv) {
  // Painting needs a GUI application (fonts); no display is needed.
  ::setenv("QT_QPA_PLATFORM", "offscreen", 0);
  QApplication app(argc, argv);
  dreamscope::gui::register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
