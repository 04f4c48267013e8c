// What the GUI tests share: an offscreen QApplication and a small trace whose layout the
// tests know, so they can compute where each event must be drawn.
#pragma once

#include "../common/scratch_dir.h"

#include <dreamscope/storage/trace.h>

#include "trace_document.h"

#include <QApplication>
#include <QStandardPaths>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <unistd.h>

namespace dreamscope::gui::test {

using dreamscope::test::ScratchDir;

// Qt needs one application object; gtest_main owns main(), so the first test makes it.
inline QApplication& app() {
  static int argc = 1;
  static char name[] = "gui_tests";
  static char* argv[] = {name, nullptr};
  static QApplication* instance = [] {
    ::setenv("QT_QPA_PLATFORM", "offscreen", 0);
    // Recent files go to a test location, not the user's settings.
    QStandardPaths::setTestModeEnabled(true);
    return new QApplication(argc, argv);
  }();
  return *instance;
}

// One process (pid 100, thread "MainThread" tid 100) driving one GPU (stream 7):
//   annotations  step [1000, 101000)  > forward [2000, 50000), backward [52000, 100000)
//   CUDA API     cudaLaunchKernel [10000, 12000) corr 1, [60000, 62000) corr 2
//   GPU          Memcpy HtoD [5000, 8000), gemm_kernel [20000, 45000) corr 1 (grid 64x1x1,
//                block 256x1x1, 32 registers), relu_kernel [65000, 90000) corr 2
inline Trace make_step_trace() {
  TraceBuilder b;
  b.set_source(TraceSource::Tracer);
  const auto proc = b.add_process(ProcessInfo{.pid = 100, .name = "python"});
  DeviceInfo d;
  d.ordinal = 0;
  d.process = proc;
  d.name = "Test GPU";
  const auto dev = b.add_device(d);
  const TrackId main = b.thread_track(proc, 100, "MainThread");
  const TrackId stream = b.stream_track(dev, 7);
  const StringId nvtx = b.intern("nvtx");
  b.add(AnnotationRecord{.track = main, .start = 1000, .end = 101000, .name = b.intern("step"), .domain = nvtx});
  b.add(AnnotationRecord{.track = main, .start = 2000, .end = 50000, .name = b.intern("forward"), .domain = nvtx});
  b.add(AnnotationRecord{.track = main, .start = 52000, .end = 100000, .name = b.intern("backward"), .domain = nvtx});
  const StringId launch = b.intern("cudaLaunchKernel");
  b.add(CudaApiRecord{.track = main, .start = 10000, .end = 12000, .name = launch, .correlation = 1});
  b.add(CudaApiRecord{.track = main, .start = 60000, .end = 62000, .name = launch, .correlation = 2});
  GpuOpRecord gemm{.track = stream, .kind = GpuOpKind::Kernel, .start = 20000, .end = 45000,
                   .name = b.intern("gemm_kernel"), .correlation = 1};
  gemm.launch.grid[0] = 64;
  gemm.launch.grid[1] = gemm.launch.grid[2] = 1;
  gemm.launch.block[0] = 256;
  gemm.launch.block[1] = gemm.launch.block[2] = 1;
  gemm.launch.registers_per_thread = 32;
  b.add(gemm);
  b.add(GpuOpRecord{.track = stream, .kind = GpuOpKind::Kernel, .start = 65000, .end = 90000,
                    .name = b.intern("relu_kernel"), .correlation = 2});
  b.add(GpuOpRecord{.track = stream, .kind = GpuOpKind::Memcpy, .subkind = 1, .start = 5000, .end = 8000,
                    .name = b.intern("Memcpy HtoD"), .bytes = 1 << 20});
  return std::move(b).build();
}

inline std::shared_ptr<const TraceDocument> make_step_document() {
  return std::make_shared<const TraceDocument>(make_step_trace(), QStringLiteral("step-trace"));
}

// The row of a table whose name is `name` (first match).
inline EventRef find_named(const TraceDocument& doc, EventTable table, std::string_view name) {
  const Trace& t = doc.trace();
  const auto id = t.find_string(name);
  const std::vector<StringId>* names = &t.annotations().name;
  if (table == EventTable::CudaApi) names = &t.cuda_api().name;
  if (table == EventTable::GpuOp) names = &t.gpu_ops().name;
  for (std::size_t i = 0; id && i < names->size(); ++i) {
    if ((*names)[i] == *id) return EventRef{table, static_cast<std::uint32_t>(i)};
  }
  return {};
}

} // namespace dreamscope::gui::test
