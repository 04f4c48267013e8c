// Small traces with every table and field set, shared by the storage tests.
#pragma once

#include "../common/scratch_dir.h"

#include <dreamscope/storage/columns.h>
#include <dreamscope/storage/trace.h>
#include <dreamscope/storage/trace_file.h>

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace dreamscope::test {


// A trace with two processes, three threads, one device, two streams, and events of every
// kind with every field set to a distinct value.
inline Trace make_full_trace() {
  TraceBuilder b;
  b.set_source(TraceSource::Tracer);
  b.set_meta("command", "python train.py --epochs 1");
  b.set_meta("host", "node-7");
  b.set_meta("dropped_events", "3");
  b.set_meta("warnings", "CUPTI: counters unavailable");
  b.set_meta("cpu_cores", "16");
  b.set_meta("tracer_writer_cpu_ns", "1500");
  ProcessInfo p0{.pid = 100, .parent_pid = 1, .name = "python", .command = "python train.py", .start = 1000,
                 .end = 90000, .exit_status = 0, .rank = 3, .local_rank = 1, .world_size = 8, .host = "node-7",
                 .clock_offset = -250};
  // A data-loader worker of rank 3: it inherited the rank, and says no more.
  ProcessInfo p1{.pid = 101, .parent_pid = 100, .name = "worker", .command = "python -c loader", .start = 2000,
                 .end = 80000, .exit_status = 137, .rank = 3};
  auto proc0 = b.add_process(p0);
  auto proc1 = b.add_process(p1);
  DeviceInfo d;
  d.ordinal = 0;
  d.process = proc0;
  d.name = "NVIDIA H100 80GB HBM3";
  d.sm_count = 132;
  d.core_clock_khz = 1980000;
  d.memory_clock_khz = 2619000;
  d.memory_bus_width_bits = 5120;
  d.memory_bandwidth_bytes_per_s = 3352000000000;
  d.global_memory_bytes = 85000000000;
  d.compute_capability_major = 9;
  d.compute_capability_minor = 0;
  auto dev = b.add_device(d);
  TrackId main = b.thread_track(proc0, 100, "MainThread");
  TrackId loader = b.thread_track(proc0, 105, "pt_data_pin");
  TrackId worker = b.thread_track(proc1, 101, "worker-0");
  TrackId s7 = b.stream_track(dev, 7, "compute");
  TrackId s20 = b.stream_track(dev, 20, "copy");

  StringId launch = b.intern("cudaLaunchKernel");
  StringId memcpy_async = b.intern("cudaMemcpyAsync");
  b.add(CudaApiRecord{.track = main, .start = 5000, .end = 5600, .name = launch, .cbid = 211,
                      .kind = ApiKind::Runtime, .correlation = 1, .external_id = 77, .result = 0, .stream = 7,
                      .event = kNoValue});
  b.add(CudaApiRecord{.track = main, .start = 6000, .end = 6900, .name = memcpy_async, .cbid = 41,
                      .kind = ApiKind::Runtime, .correlation = 2, .external_id = kNoValue, .result = 0,
                      .stream = 20, .event = kNoValue});
  b.add(CudaApiRecord{.track = loader, .start = 3000, .end = 3100, .name = b.intern("cuLaunchKernel"), .cbid = 307,
                      .kind = ApiKind::Driver, .correlation = 3, .external_id = kNoValue, .result = 700,
                      .stream = kNoValue, .event = 42});
  GpuOpRecord k{.track = s7, .kind = GpuOpKind::Kernel, .subkind = 0, .start = 7000, .end = 9500,
                .name = b.intern("ampere_sgemm_128x64_tn"), .correlation = 1};
  k.launch = LaunchConfig{{120, 2, 1}, {256, 1, 1}, 64, 16384, 2048};
  b.add(k);
  b.add(GpuOpRecord{.track = s20, .kind = GpuOpKind::Memcpy, .subkind = static_cast<std::uint8_t>(CopyKind::HtoD),
                    .start = 7100, .end = 8100, .name = b.intern("Memcpy HtoD (Pinned -> Device)"),
                    .correlation = 2, .launch = {}, .bytes = 1 << 20, .event = kNoValue});
  b.add(GpuOpRecord{.track = s7, .kind = GpuOpKind::Memset, .subkind = 0, .start = 9600, .end = 9700,
                    .name = b.intern("Memset"), .correlation = 4, .launch = {}, .bytes = 4096, .event = kNoValue});
  b.add(GpuOpRecord{.track = s7, .kind = GpuOpKind::Sync,
                    .subkind = static_cast<std::uint8_t>(SyncKind::StreamWaitEvent), .start = 9800, .end = 9900,
                    .name = b.intern("Stream Wait Event"), .correlation = 5, .launch = {}, .bytes = 0, .event = 42});
  StringId ds = b.intern("dreamscope");
  b.add(AnnotationRecord{.track = main, .start = 4000, .end = 20000, .name = b.intern("step"), .domain = ds,
                         .category = b.intern("step"), .payload = 0, .external_id = kNoValue});
  b.add(AnnotationRecord{.track = main, .start = 4500, .end = 10000, .name = b.intern("forward"), .domain = ds,
                         .category = b.intern("operation"), .payload = kNoValue, .external_id = 77});
  b.add(AnnotationRecord{.track = worker, .start = 2500, .end = 3500, .name = b.intern("prep"), .domain = ds,
                         .category = b.intern("prep"), .payload = 12, .external_id = kNoValue});
  b.add(AnnotationRecord{.track = s7, .start = 7000, .end = 9700, .name = b.intern("forward"),
                         .domain = b.intern("pytorch"), .category = b.intern("gpu_user_annotation"),
                         .payload = kNoValue, .external_id = kNoValue});
  b.add(FlowRecord{.kind = b.intern("batch"), .from_track = worker, .from_time = 3500, .to_track = main,
                   .to_time = 4000, .id = 12});
  b.add(CalibrationRecord{.event_kind = "nvtx_range", .cost_ns = 27.5, .samples = 4096, .method = "startup"});
  b.add(CalibrationRecord{.event_kind = "nvtx_mark", .cost_ns = 14.25, .samples = 4096, .method = "startup"});
  b.add(OverheadRecord{.track = main, .start = 15000, .end = 15400, .kind = b.intern("cupti_buffer_flush")});
  // Added out of (track, start) order, which build() restores; one with nothing known.
  b.add(ThreadLoadRecord{.track = main, .start = 14000, .end = 24000, .cpu_ns = 9100, .runqueue_ns = 450,
                         .events = 2, .cost_samples = 1, .range_cost_ns = 28.75, .mark_cost_ns = 12.5});
  b.add(ThreadLoadRecord{.track = main, .start = 4000, .end = 14000, .cpu_ns = 8800, .runqueue_ns = 0,
                         .events = 3, .cost_samples = 2, .range_cost_ns = 31.5, .mark_cost_ns = -1});
  b.add(ThreadLoadRecord{.track = worker, .start = 2000, .end = 12000, .cpu_ns = kNoValue, .runqueue_ns = kNoValue,
                         .events = 1, .cost_samples = 0, .range_cost_ns = -1, .mark_cost_ns = -1});
  // Added out of time order, which build() restores; two at one time keep their order (an
  // allocation and the release of its address); one as PyTorch 1.9 wrote them (no address, no
  // totals); one at an address past 2^63 (its bit pattern).
  b.add(MemoryEventRecord{.track = main, .time = 8000, .device_type = 1, .device_id = 0, .addr = 140000000000000,
                          .bytes = -4096, .total_allocated = 1 << 20, .total_reserved = 2 << 20});
  b.add(MemoryEventRecord{.track = main, .time = 5200, .device_type = 1, .device_id = 0, .addr = 140000000000000,
                          .bytes = 4096, .total_allocated = (1 << 20) + 4096, .total_reserved = 2 << 20});
  b.add(MemoryEventRecord{.track = main, .time = 5200, .device_type = 1, .device_id = 0, .addr = 140000000000000,
                          .bytes = -4096, .total_allocated = 1 << 20, .total_reserved = 2 << 20});
  b.add(MemoryEventRecord{.track = worker, .time = 2600, .device_type = 0, .device_id = -1, .addr = kNoValue,
                          .bytes = 64, .total_allocated = kNoValue, .total_reserved = kNoValue});
  b.add(MemoryEventRecord{.track = loader, .time = 3050, .device_type = 0, .device_id = -1,
                          .addr = static_cast<std::int64_t>(0xffff800000001000ull), .bytes = 512,
                          .total_allocated = 576, .total_reserved = 0});
  return std::move(b).build();
}

// Whether column `c` of row `x` of trace `a` holds what it does in row `y` of `b`, names as text
// (string ids may differ) and a GPU op's launch configuration as the configuration.
template <class Column, class Record>
void expect_same_column(const Column& c, const Trace& a, const Record& x, const Trace& b, const Record& y,
                        std::string_view table, std::size_t row) {
  if constexpr (columns::is<Column, columns::String>) {
    EXPECT_EQ(a.str(x.*c.member), b.str(y.*c.member)) << table << " row " << row << ", " << c.name;
  } else {
    EXPECT_EQ(x.*c.member, y.*c.member) << table << " row " << row << ", " << c.name;
  }
}

// Compares two traces field by field, every column of every table (columns.h) and the
// annotations' nesting, with names compared as text (ids may differ).
inline void expect_same_events(const Trace& a, const Trace& b) {
  ASSERT_EQ(a.processes(), b.processes());
  ASSERT_EQ(a.devices(), b.devices());
  ASSERT_EQ(a.tracks(), b.tracks());
  EXPECT_EQ(a.calibration(), b.calibration());
  auto same_rows = [&]<class Record>(std::string_view table, const auto& row_of_a, const auto& row_of_b,
                                     std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      const Record x = row_of_a(i), y = row_of_b(i);
      columns::for_each<Record>([&](const auto& c) { expect_same_column(c, a, x, b, y, table, i); });
    }
  };
  auto same_events = [&]<class Record>(std::type_identity<Record>) {
    using D = columns::Definition<Record>;
    const auto& rows_a = (a.*D::in)();
    const auto& rows_b = (b.*D::in)();
    ASSERT_EQ(rows_a.size(), rows_b.size()) << D::name;
    auto row_of = [](const Trace& t) {
      return [&t](std::size_t i) {
        const typename D::Index row{i};
        if constexpr (std::is_same_v<Record, GpuOpRecord>) {
          return t.gpu_ops().row(row, t.launch_configs());
        } else {
          return (t.*D::in)().row(row);
        }
      };
    };
    same_rows.template operator()<Record>(D::name, row_of(a), row_of(b), rows_a.size());
  };
  same_events(std::type_identity<CudaApiRecord>{});
  same_events(std::type_identity<GpuOpRecord>{});
  same_events(std::type_identity<AnnotationRecord>{});
  for (std::size_t i = 0; i < a.annotations().size() && i < b.annotations().size(); ++i) {
    EXPECT_EQ(a.annotations().parent[i], b.annotations().parent[i]);
    EXPECT_EQ(a.annotations().depth[i], b.annotations().depth[i]);
  }
  columns::each_record<columns::RowRecords>([&]<class Record>(std::type_identity<Record>) {
    using D = columns::Definition<Record>;
    const std::vector<Record>& rows_a = (a.*D::in)();
    const std::vector<Record>& rows_b = (b.*D::in)();
    ASSERT_EQ(rows_a.size(), rows_b.size()) << D::name;
    same_rows.template operator()<Record>(
        D::name, [&](std::size_t i) { return rows_a[i]; }, [&](std::size_t i) { return rows_b[i]; }, rows_a.size());
  });
}

// The storage writers (SQLite and trace log) under a full disk and a SIGKILL: a writer is
// opened in a forked child, which records annotation i at [10 i, 10 i + 5) with payload i,
// so that what survives can be checked to be exactly events 0..n-1 in order.
using OpenSink = std::function<std::unique_ptr<TraceSink>()>;

inline void add_numbered_annotation(TraceSink& w, TrackId track, StringId name, std::int64_t i) {
  w.add(AnnotationRecord{.track = track, .start = i * 10, .end = i * 10 + 5, .name = name, .payload = i});
}

// Writes a million events in a child whose files may not grow past `limit_bytes` (a full
// disk), flushing every `flush_every` events (0: never), and returns the message of the
// TraceError the writer threw, or "no error".
inline std::string write_until_disk_full(const OpenSink& open, std::size_t limit_bytes, int flush_every) {
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(fds[0]);
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit lim{limit_bytes, limit_bytes};
    ::setrlimit(RLIMIT_FSIZE, &lim);
    std::string msg = "no error";
    try {
      const auto w = open();
      const auto p = w->add_process(ProcessInfo{.pid = 1, .name = "x"});
      const TrackId t = w->add_track(TrackInfo{.kind = TrackKind::CpuThread, .process = p, .tid = 1});
      const StringId n = w->intern("range");
      for (int i = 0; i < 1'000'000; ++i) {
        add_numbered_annotation(*w, t, n, i);
        if (flush_every > 0 && i % flush_every == flush_every - 1) w->flush();
      }
      w->close();
    } catch (const TraceError& e) {
      msg = e.what();
    }
    (void)!::write(fds[1], msg.data(), msg.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string msg;
  char buf[512];
  ssize_t got;
  while ((got = ::read(fds[0], buf, sizeof buf)) > 0) msg.append(buf, static_cast<std::size_t>(got));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status)) << "the writer crashed on a full disk";
  return msg;
}

// Events a victim has flushed, at least, when it is killed.
inline constexpr std::int64_t kFlushedBeforeKill = 20000;

// Writes events in a child, flushing every 1000, and kills it with SIGKILL once 20000 are
// flushed, in the middle of the next batch. Returns how many events were flushed before
// it died (a failure if the child died before that on its own).
inline std::int64_t flushed_before_sigkill(const OpenSink& open) {
  int fds[2];
  if (::pipe(fds) != 0) return -1;
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(fds[0]);
    const auto w = open();
    const auto p = w->add_process(ProcessInfo{.pid = ::getpid(), .name = "victim"});
    const TrackId t = w->add_track(TrackInfo{.kind = TrackKind::CpuThread, .process = p, .tid = ::getpid()});
    const StringId n = w->intern("range");
    for (std::int64_t i = 0;; ++i) {
      add_numbered_annotation(*w, t, n, i);
      if ((i + 1) % 1000 == 0) {
        w->flush();
        const std::int64_t flushed = i + 1;
        (void)!::write(fds[1], &flushed, sizeof flushed);
      }
    }
  }
  ::close(fds[1]);
  std::int64_t flushed = 0, got = 0;
  while (flushed < kFlushedBeforeKill && ::read(fds[0], &got, sizeof got) == sizeof got) flushed = got;
  // The child must have been writing when it was killed: one that died on its own before
  // its first flushes would leave nothing to check, and the test would pass on nothing.
  EXPECT_GE(flushed, kFlushedBeforeKill) << "the writer died before it was killed";
  ::kill(child, SIGKILL);
  while (::read(fds[0], &got, sizeof got) == sizeof got) flushed = got; // flushes that raced the kill
  ::close(fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status));
  return flushed;
}

// Exactly events 0..n-1 in order: nothing torn, nothing repeated.
inline void expect_numbered_annotations(const Trace& t) {
  for (std::size_t i = 0; i < t.annotations().size(); ++i) {
    ASSERT_EQ(t.annotations().payload[i], static_cast<std::int64_t>(i));
  }
}

} // namespace dreamscope::test
