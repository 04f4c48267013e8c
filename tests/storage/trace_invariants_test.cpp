// The invariants every Trace holds after TraceBuilder::build(), whichever loader made it,
// and the message-quoting and UTF-8 helpers of limits.h.
#include <dreamscope/storage/limits.h>
#include <dreamscope/storage/trace.h>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace dreamscope {
namespace {

// A builder with one process, one thread and one stream, and the origin "x.json".
struct Fixture {
  TraceBuilder b;
  TrackId thread{0};
  TrackId stream{0};
  StringId name = 0;

  Fixture() {
    b.set_origin("x.json");
    const auto p = b.add_process(ProcessInfo{.pid = 7, .name = "train"});
    const auto d = b.add_device(DeviceInfo{.ordinal = 0, .name = "GPU"});
    thread = b.thread_track(p, 7);
    stream = b.stream_track(d, 7);
    name = b.intern("op");
  }

  std::string error() {
    try {
      (void)std::move(b).build();
    } catch (const TraceError& e) {
      return e.what();
    }
    return "no error";
  }
};

TEST(TraceInvariants, ARowOnAnUnknownTrackNamesTheOriginTableAndCount) {
  Fixture f;
  f.b.add(AnnotationRecord{.track = TrackId{3}, .start = 0, .end = 1, .name = f.name});
  f.b.add(AnnotationRecord{.track = TrackId{9}, .start = 0, .end = 1, .name = f.name});
  EXPECT_EQ(f.error(), "x.json: 2 annotation rows naming an unknown track; first: row 0, track 3 (docs/limits.md)");
}

TEST(TraceInvariants, RanksOutsideTheJobLimitsAreRefused) {
  for (const ProcessInfo& bad : {ProcessInfo{.pid = 8, .rank = -2}, ProcessInfo{.pid = 8, .local_rank = 1 << 24},
                                 ProcessInfo{.pid = 8, .rank = 0, .world_size = 0}}) {
    Fixture f;
    f.b.add_process(bad);
    EXPECT_EQ(f.error().rfind("x.json: 1 process row with a rank, local rank or world size outside [0, 2^24)", 0), 0u)
        << f.error();
  }
  Fixture f;
  f.b.add_process(ProcessInfo{.pid = 8, .clock_offset = std::int64_t{1} << 62});
  EXPECT_NE(f.error().find("process row with a clock offset beyond"), std::string::npos) << f.error();
  Fixture ok;
  ok.b.add_process(ProcessInfo{.pid = 8, .rank = (1 << 24) - 1, .local_rank = 0, .world_size = 1 << 23});
  EXPECT_EQ(ok.error(), "no error");
}

TEST(TraceInvariants, TimestampsBeyondTwoToThe62AreRefused) {
  Fixture f;
  f.b.add(CudaApiRecord{.track = f.thread, .start = 10, .end = 20, .name = f.name});
  f.b.add(CudaApiRecord{.track = f.thread, .start = 0, .end = std::numeric_limits<TimeNs>::max(), .name = f.name});
  EXPECT_EQ(f.error(), "x.json: 1 cuda_api row with a timestamp beyond +-2^62 ns; first: row 1, start 0 ns, end "
                       "9223372036854775807 ns (docs/limits.md)");

  Fixture g;
  g.b.add(GpuOpRecord{.track = g.stream, .start = -limits::kMaxAbsTimestampNs, .end = 0, .name = g.name});
  EXPECT_NE(g.error().find("gpu_op row with a timestamp beyond"), std::string::npos);

  // Just inside the bound either side: the span fits in int64 and the trace loads.
  Fixture h;
  h.b.add(AnnotationRecord{.track = h.thread, .start = -limits::kMaxAbsTimestampNs + 1, .end = 0, .name = h.name});
  h.b.add(AnnotationRecord{.track = h.thread, .start = 0, .end = limits::kMaxAbsTimestampNs - 1, .name = h.name});
  const Trace t = std::move(h.b).build();
  EXPECT_EQ(t.end_time() - t.begin_time(), (limits::kMaxAbsTimestampNs - 1) * 2);
}

TEST(TraceInvariants, AnEventEndingBeforeItStartsIsRefused) {
  Fixture f;
  f.b.add(GpuOpRecord{.track = f.stream, .start = 100, .end = 99, .name = f.name});
  EXPECT_EQ(f.error(), "x.json: 1 gpu_op row with end < start; first: row 0, start 100 ns, end 99 ns "
                       "(docs/limits.md)");
}

TEST(TraceInvariants, NamesLongerThan64KiBAreRefusedButArgsMayBeLong) {
  Fixture f;
  const std::string long_text(limits::kMaxNameBytes + 1, 'a');
  const auto row = f.b.add(AnnotationRecord{.track = f.thread, .start = 0, .end = 1, .name = f.name});
  f.b.add_arg(row, "stack", long_text);
  EXPECT_NO_THROW((void)std::move(f.b).build());

  Fixture g;
  g.b.add(GpuOpRecord{.track = g.stream, .start = 0, .end = 1, .name = g.b.intern(long_text)});
  EXPECT_EQ(g.error(), "x.json: 1 gpu_op row with a name longer than 64 KiB; first: row 0, a name of 65537 bytes "
                       "(docs/limits.md)");
}

TEST(TraceInvariants, UnknownStringsDevicesAndArgRowsAreRefused) {
  Fixture f;
  f.b.add(CudaApiRecord{.track = f.thread, .start = 0, .end = 1, .name = 4000});
  EXPECT_NE(f.error().find("1 cuda_api row naming an unknown string; first: row 0, string 4000"), std::string::npos);

  Fixture g;
  g.b.add_track(TrackInfo{.kind = TrackKind::GpuStream, .device = DeviceId{5}, .stream = 1});
  EXPECT_NE(g.error().find("x.json: 1 track row naming an unknown device"), std::string::npos);

  Fixture h;
  h.b.add_arg(GpuOpIndex{0}, "k", std::int64_t{1});
  EXPECT_NE(h.error().find("1 gpu_op arg row naming an unknown event row"), std::string::npos);

  Fixture i;
  i.b.add(FlowRecord{.kind = i.name, .from_track = i.thread, .from_time = 0, .to_track = TrackId{77}, .to_time = 1});
  EXPECT_NE(i.error().find("1 flow row naming an unknown track; first: row 0, tracks 0 -> 77"), std::string::npos);
}

TEST(TraceInvariants, CalibrationCostsMustBeFiniteAndNonNegative) {
  // 1e15 ns per range is what fuzz_trace_db found: finite, and 9e21 ns once charged.
  for (double cost : {std::nan(""), -1.0, std::numeric_limits<double>::infinity(), 1e15}) {
    Fixture f;
    f.b.add(CalibrationRecord{.event_kind = "nvtx_range", .cost_ns = cost, .samples = 10});
    EXPECT_NE(f.error().find("1 calibration row with a cost that is not a number of ns in [0, 1e9]"), std::string::npos)
        << cost;
  }
}

// What the tracer measured of a thread: a window in [0, 2^62) ns, times the kernel reports
// (never negative) or kNoValue, counts >= 0, and costs bounded like calibration costs, which
// overhead correction multiplies them like. Negative costs mean none was timed.
TEST(TraceInvariants, ThreadLoadsAreBoundedWindowsTimesCountsAndCosts) {
  // `l` on the fixture's thread (track 0) unless it says otherwise, after a valid row 0.
  auto error = [](const ThreadLoadRecord& l) {
    Fixture f;
    f.b.add(ThreadLoadRecord{.track = f.thread, .start = 0, .end = 10, .events = 1});
    f.b.add(l);
    return f.error();
  };
  const ThreadLoadRecord ok{.start = 100, .end = 200, .cpu_ns = 80, .runqueue_ns = 5, .events = 4,
                            .cost_samples = 2, .range_cost_ns = 30, .mark_cost_ns = -1};
  EXPECT_EQ(error(ok), "no error");
  auto with = [&](auto change) {
    ThreadLoadRecord l = ok;
    change(l);
    return error(l);
  };
  EXPECT_EQ(with([](auto& l) { l.track = TrackId{9}; }),
            "x.json: 1 thread_load row naming an unknown track; first: row 1, track 9 (docs/limits.md)");
  EXPECT_EQ(with([](auto& l) { l.start = -5; }),
            "x.json: 1 thread_load row starting before 0 ns; first: row 1, start -5 ns, end 200 ns (docs/limits.md)");
  EXPECT_EQ(with([](auto& l) { l.end = 99; }),
            "x.json: 1 thread_load row with end < start; first: row 1, start 100 ns, end 99 ns (docs/limits.md)");
  EXPECT_NE(with([](auto& l) { l.end = limits::kMaxAbsTimestampNs; })
                .find("x.json: 1 thread_load row with a timestamp beyond +-2^62 ns"),
            std::string::npos);
  EXPECT_EQ(with([](auto& l) { l.cpu_ns = -1; }),
            "x.json: 1 thread_load row with a CPU or run-queue time outside [0, 2^62] ns; first: row 1, cpu_ns -1, "
            "runqueue_ns 5 (docs/limits.md)");
  EXPECT_NE(with([](auto& l) { l.runqueue_ns = limits::kMaxAbsTimestampNs + 1; })
                .find("1 thread_load row with a CPU or run-queue time outside [0, 2^62] ns"),
            std::string::npos);
  EXPECT_EQ(with([](auto& l) { l.cost_samples = -3; }),
            "x.json: 1 thread_load row with a negative count of events, timed calls or probe records; first: row 1, events 4, "
            "cost_samples -3, probe_events 0 (docs/limits.md)");
  EXPECT_NE(with([](auto& l) { l.events = -1; }).find("1 thread_load row with a negative count"), std::string::npos);
  EXPECT_NE(with([](auto& l) { l.probe_events = -2; }).find("probe_events -2"), std::string::npos);
  for (double cost : {std::nan(""), std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                      1e15}) {
    EXPECT_NE(with([&](auto& l) { l.mark_cost_ns = cost; })
                  .find("1 thread_load row with a recording cost that is not a number of ns up to 1e9; first: row 1"),
              std::string::npos)
        << cost;
    EXPECT_NE(with([&](auto& l) { l.range_cost_ns = cost; }).find("with a recording cost"), std::string::npos) << cost;
  }
  // At the bounds, and unknown, all load.
  EXPECT_EQ(with([](auto& l) {
              l.start = l.end = 0;
              l.cpu_ns = limits::kMaxAbsTimestampNs;
              l.runqueue_ns = kNoValue;
              l.events = l.cost_samples = 0;
              l.range_cost_ns = limits::kMaxCalibrationCostNs;
              l.mark_cost_ns = -1e300;
            }),
            "no error");
}

// A thread the tracer saw only by its CPU time (an OpenMP thread that recorded nothing): a
// track with load rows and no events, which the invariants accept.
TEST(TraceInvariants, AThreadWithNoEventsButItsLoadIsFine) {
  Fixture f;
  const TrackId omp = f.b.thread_track(ProcessId{0}, 8, "omp");
  f.b.add(ThreadLoadRecord{.track = omp, .start = 0, .end = 100, .cpu_ns = 90, .runqueue_ns = 3});
  f.b.add(ThreadLoadRecord{.track = omp, .start = 100, .end = 200, .cpu_ns = 100, .runqueue_ns = 0});
  const Trace t = std::move(f.b).build();
  ASSERT_EQ(t.thread_loads().size(), 2u);
  EXPECT_TRUE(t.annotations_on(omp).empty());
  EXPECT_EQ(t.thread_loads()[0].events, 0);
}

// A memory event: on a known track, at a time within the bounds, with bytes and totals the
// memory view can sum without overflow (unknown totals are fine).
TEST(TraceInvariants, MemoryEventsAreOnKnownTracksWithBoundedTimesAndBytes) {
  auto with = [](auto change) {
    Fixture f;
    f.b.add(MemoryEventRecord{.track = f.thread, .time = 5, .bytes = 8});
    MemoryEventRecord m{.track = f.thread, .time = 10, .device_type = 1, .device_id = 0, .addr = 4096,
                        .bytes = -8, .total_allocated = 0, .total_reserved = 2 << 20};
    change(m);
    f.b.add(m);
    return f.error();
  };
  EXPECT_EQ(with([](auto&) {}), "no error");
  EXPECT_EQ(with([](auto& m) { m.track = TrackId{9}; }),
            "x.json: 1 memory_event row naming an unknown track; first: row 1, track 9 (docs/limits.md)");
  EXPECT_EQ(with([](auto& m) { m.time = -limits::kMaxAbsTimestampNs; }),
            "x.json: 1 memory_event row with a timestamp beyond +-2^62 ns; first: row 1, time -4611686018427387904 "
            "ns (docs/limits.md)");
  EXPECT_EQ(with([](auto& m) { m.bytes = limits::kMaxAbsBytes; }),
            "x.json: 1 memory_event row with a byte count or total beyond +-2^62; first: row 1, bytes "
            "4611686018427387904, total_allocated 0, total_reserved 2097152 (docs/limits.md)");
  EXPECT_NE(with([](auto& m) { m.total_reserved = std::numeric_limits<std::int64_t>::max(); })
                .find("1 memory_event row with a byte count or total beyond +-2^62"),
            std::string::npos);
  EXPECT_NE(with([](auto& m) { m.total_allocated = -limits::kMaxAbsBytes; }).find("byte count or total"),
            std::string::npos);
  // Unknowns, any device and any address (a pointer's bit pattern) load.
  EXPECT_EQ(with([](auto& m) {
              m.device_type = m.device_id = m.total_allocated = m.total_reserved = kNoValue;
              m.addr = -1;
              m.bytes = limits::kMaxAbsBytes - 1;
            }),
            "no error");
}

TEST(TraceInvariants, IllFormedUtf8IsRepairedNotRefused) {
  Fixture f;
  const StringId bad = f.b.intern("gemm\xff\xfe_kernel\xc3");
  f.b.add(GpuOpRecord{.track = f.stream, .start = 0, .end = 1, .name = bad});
  f.b.set_meta("command", "python \xe2\x82 train.py");
  const Trace t = std::move(f.b).build();
  EXPECT_EQ(t.str(t.gpu_ops().name[0]), "gemm\xEF\xBF\xBD\xEF\xBF\xBD_kernel\xEF\xBF\xBD");
  EXPECT_EQ(t.meta_value("command"), "python \xEF\xBF\xBD\xEF\xBF\xBD train.py");
  for (const auto& s : t.strings()) EXPECT_TRUE(limits::is_valid_utf8(s)) << s;
}

TEST(Utf8, ValidatesAsTheStandardSays) {
  EXPECT_TRUE(limits::is_valid_utf8("plain ascii"));
  EXPECT_TRUE(limits::is_valid_utf8("\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80"));
  EXPECT_FALSE(limits::is_valid_utf8("\xc0\xaf"));         // overlong '/'
  EXPECT_FALSE(limits::is_valid_utf8("\xed\xa0\x80"));     // a surrogate
  EXPECT_FALSE(limits::is_valid_utf8("\xf4\x90\x80\x80")); // past U+10FFFF
  EXPECT_FALSE(limits::is_valid_utf8("\xe2\x82"));         // cut short
  EXPECT_EQ(limits::repair_utf8("a\x80" "b"), "a\xEF\xBF\xBD" "b");
}

TEST(QuotedText, StaysOneShortLine) {
  EXPECT_EQ(limits::quoted("gemm"), "'gemm'");
  EXPECT_EQ(limits::quoted("two\nlines\tand 'quotes'"), "'two\\nlines\\tand \\'quotes\\''");
  EXPECT_EQ(limits::quoted("bell\x07 and \xff"), "'bell\\x07 and \\xff'");
  EXPECT_EQ(limits::quoted(std::string(100000, '9'), 5), "'99999'... (100000 bytes)");
  // Multi-byte characters count as one and are never cut in the middle.
  EXPECT_EQ(limits::quoted("\xc3\xa9\xc3\xa9\xc3\xa9", 2), "'\xc3\xa9\xc3\xa9'... (6 bytes)");
}

} // namespace
} // namespace dreamscope
