// The trace log (the tracer's part files): every record kind round-trips, a log cut short at
// any byte keeps its whole records and reads as incomplete, foreign and newer files are
// refused naming the file, and a full disk or a kill loses nothing already written.
#include "test_traces.h"

#include <dreamscope/storage/importers.h>
#include <dreamscope/storage/limits.h>
#include <dreamscope/storage/trace_file.h>
#include <dreamscope/storage/trace_log.h>

#include <gtest/gtest.h>

#include <fstream>

namespace dreamscope {
namespace {

using test::ScratchDir;

// Writes a Trace through any sink, as the tracer would have recorded it, with one arg per
// event (of a different type per table) so that args round-trip too.
void record(const Trace& trace, TraceSink& w) {
  for (const auto& [k, v] : trace.meta()) {
    if (k != "complete") w.set_meta(k, v);
  }
  std::vector<StringId> ids(trace.strings().size(), 0);
  for (StringId i = 1; i < trace.strings().size(); ++i) ids[i] = w.intern(trace.strings()[i]);
  for (const auto& p : trace.processes()) w.add_process(p);
  for (const auto& d : trace.devices()) w.add_device(d);
  for (const auto& t : trace.tracks()) w.add_track(t);
  const StringId key = w.intern("note");
  const auto& a = trace.cuda_api();
  for (CudaApiIndex i{0}; i < a.size(); ++i) {
    CudaApiRecord r = a.row(i);
    r.name = ids[r.name];
    w.add_arg(w.add(r), EventArg{.key = key, .type = ArgType::Int, .int_value = static_cast<std::int64_t>(i) - 5});
  }
  const auto& g = trace.gpu_ops();
  for (GpuOpIndex i{0}; i < g.size(); ++i) {
    GpuOpRecord r = g.row(i, trace.launch_configs());
    r.name = ids[r.name];
    w.add_arg(w.add(r), EventArg{.key = key, .type = ArgType::Double, .double_value = 0.5 + static_cast<double>(i)});
  }
  const auto& n = trace.annotations();
  for (AnnotationIndex i{0}; i < n.size(); ++i) {
    AnnotationRecord r = n.row(i);
    r.name = ids[r.name];
    r.domain = ids[r.domain];
    r.category = ids[r.category];
    w.add_arg(w.add(r), EventArg{.key = key, .type = ArgType::String, .text = ids[n.name[i]]});
  }
  for (FlowRecord f : trace.flows()) {
    f.kind = ids[f.kind];
    w.add(f);
  }
  for (const auto& c : trace.calibration()) w.add(c);
  for (OverheadRecord o : trace.overheads()) {
    o.kind = ids[o.kind];
    w.add(o);
  }
  for (const auto& l : trace.thread_loads()) w.add(l);
  for (const auto& m : trace.memory_events()) w.add(m);
}

TEST(TraceLog, EveryRecordKindRoundTrips) {
  ScratchDir dir;
  const Trace original = test::make_full_trace();
  {
    TraceLogWriter w(dir / "full.dslog");
    record(original, w);
    const ProcessId p{0};
    ProcessInfo updated = original.processes()[p];
    updated.end = 95000;
    updated.exit_status = 3;
    w.update_process(p, updated);
    w.update_process(p, original.processes()[p]); // the last update stands
    w.close();
  }
  const Trace back = read_trace_log(dir / "full.dslog");
  test::expect_same_events(original, back);
  EXPECT_TRUE(back.complete());
  EXPECT_EQ(back.source(), TraceSource::Tracer);
  EXPECT_EQ(back.dropped_events(), 3);
  EXPECT_EQ(back.meta_value("command"), "python train.py --epochs 1");
  EXPECT_EQ(back.meta_value("warnings"), "CUPTI: counters unavailable");
  // Each arg stays with its event, whatever order the reader sorted the rows into.
  ASSERT_EQ(back.arg_count(), original.event_count());
  for (CudaApiIndex i{0}; i < back.cuda_api().size(); ++i) {
    const std::size_t written = static_cast<std::size_t>(back.arg_int(i, "note").value() + 5);
    ASSERT_LT(written, original.cuda_api().size());
    EXPECT_EQ(original.cuda_api().start[written], back.cuda_api().start[i]);
  }
  for (GpuOpIndex i{0}; i < back.gpu_ops().size(); ++i) {
    const EventArg* arg = back.find_arg(i, "note");
    ASSERT_NE(arg, nullptr);
    EXPECT_EQ(arg->type, ArgType::Double);
    EXPECT_EQ(original.gpu_ops().start[static_cast<std::size_t>(arg->double_value)], back.gpu_ops().start[i]);
  }
  for (AnnotationIndex i{0}; i < back.annotations().size(); ++i) {
    EXPECT_EQ(back.arg_text(i, "note"), std::string(back.str(back.annotations().name[i])));
  }
  // Small: a varint-coded annotation is a fraction of its 48 bytes in memory.
  EXPECT_LT(std::filesystem::file_size(dir / "full.dslog"), 2000u);

  // Every command opens a part directly, by its content.
  EXPECT_EQ(detect_trace_format(dir / "full.dslog"), TraceFormat::DreamscopeLog);
  test::expect_same_events(original, load_trace(dir / "full.dslog"));
}

// nvtxNameOsThread can name a thread after its track was written: the last name stands,
// in the log and in SQLite alike.
TEST(TraceLog, ATrackRenamedAfterItsEventsKeepsTheLastName) {
  ScratchDir dir;
  auto write = [](TraceSink& w) {
    const ProcessId p = w.add_process(ProcessInfo{.pid = 7, .name = "train"});
    const TrackId main = w.add_track(TrackInfo{.kind = TrackKind::CpuThread, .process = p, .tid = 7, .name = "python"});
    const TrackId loader = w.add_track(TrackInfo{.kind = TrackKind::CpuThread, .process = p, .tid = 8, .name = "python"});
    w.add(AnnotationRecord{.track = main, .start = 10, .end = 20, .name = w.intern("step")});
    w.rename_track(loader, "loader 0");
    w.rename_track(main, "trainer");
    w.rename_track(main, "main loop");
    w.close();
  };
  {
    TraceLogWriter log(dir / "renamed.dslog");
    write(log);
    TraceWriter db(dir / "renamed.db");
    write(db);
  }
  for (const char* file : {"renamed.dslog", "renamed.db"}) {
    const Trace t = load_trace(dir / file);
    ASSERT_EQ(t.tracks().size(), 2u) << file;
    EXPECT_EQ(t.tracks()[0].name, "main loop") << file;
    EXPECT_EQ(t.tracks()[1].name, "loader 0") << file;
    EXPECT_EQ(t.annotations().size(), 1u) << file;
  }
}

// The writer thread records a thread's load between its events, for a window that began
// before them: the events keep their times, and the loads keep every field, at the bounds a
// Trace allows too, in the log and in SQLite alike.
TEST(TraceLog, ThreadLoadsBetweenEventsKeepEveryField) {
  ScratchDir dir;
  const ThreadLoadRecord widest{.track = TrackId{1},
                                .start = 0,
                                .end = limits::kMaxAbsTimestampNs - 1,
                                .cpu_ns = limits::kMaxAbsTimestampNs,
                                .runqueue_ns = 0,
                                .events = INT64_MAX,
                                .cost_samples = INT64_MAX,
                                .range_cost_ns = limits::kMaxCalibrationCostNs,
                                .mark_cost_ns = 0};
  const ThreadLoadRecord unknown{.track = TrackId{0},
                                 .start = 1000,
                                 .end = 1000,
                                 .cpu_ns = kNoValue,
                                 .runqueue_ns = kNoValue,
                                 .events = 0,
                                 .cost_samples = 0,
                                 .range_cost_ns = -1,
                                 .mark_cost_ns = -1};
  const ThreadLoadRecord measured{.track = TrackId{0},
                                  .start = 5000,
                                  .end = 905000,
                                  .cpu_ns = 700000,
                                  .runqueue_ns = 150000,
                                  .events = 1234,
                                  .cost_samples = 40,
                                  .range_cost_ns = 33.125,
                                  .mark_cost_ns = 17.5};
  auto write = [&](TraceSink& w) {
    const ProcessId p = w.add_process(ProcessInfo{.pid = 7, .name = "train"});
    const TrackId main = w.add_track(TrackInfo{.kind = TrackKind::CpuThread, .process = p, .tid = 7});
    w.add_track(TrackInfo{.kind = TrackKind::CpuThread, .process = p, .tid = 8});
    const StringId step = w.intern("step");
    w.add(AnnotationRecord{.track = main, .start = 900000, .end = 950000, .name = step});
    w.add(measured);
    w.add(AnnotationRecord{.track = main, .start = 960000, .end = 990000, .name = step});
    w.add(widest);
    w.add(unknown);
    w.add(AnnotationRecord{.track = main, .start = 995000, .end = 999000, .name = step});
    w.close();
  };
  {
    TraceLogWriter log(dir / "loads.dslog");
    write(log);
    TraceWriter db(dir / "loads.db");
    write(db);
  }
  for (const char* file : {"loads.dslog", "loads.db"}) {
    const Trace t = load_trace(dir / file);
    EXPECT_EQ(t.thread_loads(), (std::vector<ThreadLoadRecord>{unknown, measured, widest})) << file;
    ASSERT_EQ(t.annotations().size(), 3u) << file;
    EXPECT_EQ(t.annotations().start, (std::vector<TimeNs>{900000, 960000, 995000})) << file;
    EXPECT_EQ(t.annotations().end, (std::vector<TimeNs>{950000, 990000, 999000})) << file;
  }
}

// Memory events between other events, at the bounds and unknown, in the log and in SQLite
// alike; two at one time keep the order they were written in.
TEST(TraceLog, MemoryEventsBetweenEventsKeepEveryField) {
  ScratchDir dir;
  const MemoryEventRecord widest{.track = TrackId{1},
                                 .time = limits::kMaxAbsTimestampNs - 1,
                                 .device_type = INT64_MAX,
                                 .device_id = INT64_MIN + 1,
                                 .addr = INT64_MAX,
                                 .bytes = limits::kMaxAbsBytes - 1,
                                 .total_allocated = -(limits::kMaxAbsBytes - 1),
                                 .total_reserved = 0};
  const MemoryEventRecord unknown{.track = TrackId{0},
                                  .time = 950000,
                                  .device_type = kNoValue,
                                  .device_id = kNoValue,
                                  .addr = kNoValue,
                                  .bytes = 0,
                                  .total_allocated = kNoValue,
                                  .total_reserved = kNoValue};
  const MemoryEventRecord allocated{.track = TrackId{0},
                                    .time = 950000,
                                    .device_type = 1,
                                    .device_id = 0,
                                    .addr = static_cast<std::int64_t>(0xfffffffffffff000ull),
                                    .bytes = 1 << 20,
                                    .total_allocated = 3 << 20,
                                    .total_reserved = 4 << 20};
  MemoryEventRecord released = allocated;
  released.bytes = -(1 << 20);
  released.total_allocated = 2 << 20;
  auto write = [&](TraceSink& w) {
    const ProcessId p = w.add_process(ProcessInfo{.pid = 7, .name = "train"});
    const TrackId main = w.add_track(TrackInfo{.kind = TrackKind::CpuThread, .process = p, .tid = 7});
    w.add_track(TrackInfo{.kind = TrackKind::CpuThread, .process = p, .tid = 8});
    const StringId step = w.intern("step");
    w.add(AnnotationRecord{.track = main, .start = 900000, .end = 950000, .name = step});
    w.add(widest);
    w.add(unknown);
    w.add(AnnotationRecord{.track = main, .start = 960000, .end = 990000, .name = step});
    w.add(allocated);
    w.add(released);
    w.close();
  };
  {
    TraceLogWriter log(dir / "memory.dslog");
    write(log);
    TraceWriter db(dir / "memory.db");
    write(db);
  }
  for (const char* file : {"memory.dslog", "memory.db"}) {
    const Trace t = load_trace(dir / file);
    EXPECT_EQ(t.memory_events(), (std::vector<MemoryEventRecord>{unknown, allocated, released, widest})) << file;
    EXPECT_EQ(t.annotations().start, (std::vector<TimeNs>{900000, 960000})) << file;
  }
}

TEST(TraceLog, ExtremeValuesRoundTrip) {
  ScratchDir dir;
  TraceBuilder b;
  auto p = b.add_process(ProcessInfo{.pid = INT64_MAX, .parent_pid = INT64_MIN + 1, .name = std::string(300, 'n'),
                                     .start = INT64_MIN + 1, .end = INT64_MAX, .exit_status = -1});
  TrackId t = b.thread_track(p, -5, "");
  // The latest and earliest instants a Trace may hold (limits.h).
  b.add(AnnotationRecord{.track = t, .start = limits::kMaxAbsTimestampNs - 2, .end = limits::kMaxAbsTimestampNs - 1,
                         .name = b.intern("late"), .payload = INT64_MAX, .external_id = INT64_MIN + 1});
  b.add(AnnotationRecord{.track = t, .start = -(limits::kMaxAbsTimestampNs - 1), .end = 0, .name = b.intern("early"),
                         .payload = -1, .external_id = 0});
  const Trace original = std::move(b).build();
  {
    TraceLogWriter w(dir / "x.dslog");
    record(original, w);
    w.close();
  }
  test::expect_same_events(original, read_trace_log(dir / "x.dslog"));
}

// The log of a killed process ends anywhere: at every byte of its last records, the reader
// keeps exactly the records that are whole and says the trace is incomplete.
TEST(TraceLog, CutShortAtEveryByteKeepsEveryWholeRecord) {
  ScratchDir dir;
  const auto path = dir / "cut.dslog";
  std::vector<std::uint64_t> ends; // the file's size after each annotation
  std::vector<std::size_t> annotations_at;
  {
    TraceLogWriter w(path);
    w.set_meta("source", "tracer");
    const auto p = w.add_process(ProcessInfo{.pid = 42, .name = "victim"});
    const TrackId t = w.add_track(TrackInfo{.kind = TrackKind::CpuThread, .process = p, .tid = 42, .name = "main"});
    w.flush();
    ends.push_back(w.bytes_written());
    annotations_at.push_back(0);
    for (int i = 0; i < 12; ++i) {
      // A new name now and then, so strings are among the records that get cut.
      const StringId name = w.intern(i % 4 == 0 ? "range-" + std::to_string(i) : "range");
      w.add(AnnotationRecord{.track = t, .start = 1000 * i, .end = 1000 * i + 500 + i, .name = name, .payload = i});
      w.flush();
      ends.push_back(w.bytes_written());
      annotations_at.push_back(static_cast<std::size_t>(i) + 1);
    }
    w.close();
  }
  std::string whole;
  {
    std::ifstream f(path, std::ios::binary);
    whole.assign(std::istreambuf_iterator<char>(f), {});
  }
  ASSERT_GT(whole.size(), ends.back()); // close() added the complete flag
  EXPECT_TRUE(read_trace_log(path).complete());
  const auto cut_path = dir / "cut-short.dslog";
  std::size_t k = 0;
  for (std::size_t size = ends.front(); size < whole.size(); ++size) {
    while (k + 1 < ends.size() && ends[k + 1] <= size) ++k;
    std::ofstream(cut_path, std::ios::binary | std::ios::trunc).write(whole.data(), static_cast<std::streamsize>(size));
    Trace t = read_trace_log(cut_path);
    ASSERT_FALSE(t.complete()) << "cut at byte " << size;
    ASSERT_EQ(t.annotations().size(), annotations_at[k]) << "cut at byte " << size;
    for (std::size_t i = 0; i < t.annotations().size(); ++i) {
      ASSERT_EQ(t.annotations().payload[i], static_cast<std::int64_t>(i)) << "cut at byte " << size;
      ASSERT_EQ(t.annotations().end[i], 1000 * static_cast<std::int64_t>(i) + 500 + static_cast<std::int64_t>(i));
    }
    ASSERT_EQ(t.processes().size(), 1u);
  }
  // Cut inside the header: a log whose first write never completed.
  for (std::size_t size = 1; size < ends.front() && size < 12; ++size) {
    std::ofstream(cut_path, std::ios::binary | std::ios::trunc).write(whole.data(), static_cast<std::streamsize>(size));
    Trace t = read_trace_log(cut_path);
    EXPECT_FALSE(t.complete());
    EXPECT_EQ(t.event_count(), 0u);
  }
}

std::string refusal(const std::filesystem::path& path) {
  try {
    read_trace_log(path);
  } catch (const TraceError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(TraceLog, AFileThatIsNotALogIsRefusedNamingIt) {
  ScratchDir dir;
  const auto text = dir / "notes.txt";
  std::ofstream(text) << "step,forward,backward\n1,2,3\n";
  EXPECT_EQ(refusal(text), text.string() + ": not a dreamscope trace log");
  const auto empty = dir / "empty.dslog";
  std::ofstream{empty};
  EXPECT_EQ(refusal(empty), empty.string() + ": not a dreamscope trace log");
  // A SQLite trace is a trace, but not a log.
  write_trace(test::make_full_trace(), dir / "t.db");
  EXPECT_EQ(refusal(dir / "t.db"), (dir / "t.db").string() + ": not a dreamscope trace log");
  EXPECT_FALSE(looks_like_trace_log(dir / "t.db"));
  EXPECT_EQ(refusal(dir / "missing.dslog"), (dir / "missing.dslog").string() + ": no such file");
}

TEST(TraceLog, ANewerVersionIsRefusedNamingTheFileAndBothVersions) {
  ScratchDir dir;
  const auto path = dir / "new.dslog";
  {
    TraceLogWriter w(path);
    w.set_meta("source", "tracer");
    w.close();
  }
  ASSERT_TRUE(looks_like_trace_log(path));
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(8);
  const char v2[4] = {static_cast<char>(kTraceLogVersion + 1), 0, 0, 0};
  f.write(v2, 4);
  f.close();
  EXPECT_EQ(refusal(path), path.string() + ": trace log version " + std::to_string(kTraceLogVersion + 1) +
                               " is newer than this build reads (" + std::to_string(kTraceLogVersion) + ")");
}

// Version 3 added thread loads, 5 memory events; the logs of versions 1 to 4 (no memory
// events, no thread loads before 3, and no track renames in 1) still read.
TEST(TraceLog, OlderVersionsStillRead) {
  ScratchDir dir;
  const auto path = dir / "old.dslog";
  {
    TraceLogWriter w(path);
    const auto p = w.add_process(ProcessInfo{.pid = 3, .name = "old"});
    const TrackId t = w.add_track(TrackInfo{.kind = TrackKind::CpuThread, .process = p, .tid = 3});
    w.add(AnnotationRecord{.track = t, .start = 10, .end = 20, .name = w.intern("step")});
    w.close();
  }
  char header[12] = {};
  std::ifstream(path, std::ios::binary).read(header, sizeof header);
  EXPECT_EQ(header[8], static_cast<char>(kTraceLogVersion));
  EXPECT_EQ(kTraceLogVersion, 5u);
  // Version 4 only appended fields to the process record, which older logs end without (the
  // recorded part logs under tests/data/cpu are such logs).
  for (char version : {1, 2, 3, 4}) {
    {
      std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(8);
      f.put(version);
    }
    const Trace t = read_trace_log(path);
    EXPECT_TRUE(t.complete()) << "version " << int(version);
    EXPECT_EQ(t.annotations().size(), 1u) << "version " << int(version);
    EXPECT_TRUE(t.thread_loads().empty());
    EXPECT_TRUE(t.memory_events().empty());
  }
}

TEST(TraceLog, ADamagedRecordIsRefusedNamingTheFileAndTheByte) {
  ScratchDir dir;
  const auto path = dir / "bad.dslog";
  {
    TraceLogWriter w(path);
    w.add_process(ProcessInfo{.pid = 1});
    w.close();
  }
  // The first record's type byte (just past the 12-byte header) becomes an unknown one.
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(12);
  f.put(static_cast<char>(200));
  f.close();
  EXPECT_EQ(refusal(path), path.string() + ": damaged trace log: a record of unknown type 200 (record at byte 12)");
}

// A full disk (a file-size limit, in a child): the writer names the file and the problem,
// and everything written before stays readable.
TEST(TraceLog, DiskFullReportsTheFileAndKeepsWhatWasWritten) {
  ScratchDir dir;
  const auto path = dir / "full.dslog";
  const std::string msg =
      test::write_until_disk_full([&] { return std::make_unique<TraceLogWriter>(path); }, 256 * 1024, 1000);
  EXPECT_EQ(msg.rfind(path.string() + ": cannot write: ", 0), 0u) << msg;
  Trace t = read_trace_log(path);
  EXPECT_FALSE(t.complete());
  EXPECT_GT(t.annotations().size(), 10'000u);
  test::expect_numbered_annotations(t);
}

// SIGKILL mid-write: every flushed record is there, nothing torn or repeated.
TEST(TraceLog, SigkillKeepsEveryFlushedRecord) {
  ScratchDir dir;
  const auto path = dir / "killed.dslog";
  const std::int64_t flushed = test::flushed_before_sigkill([&] { return std::make_unique<TraceLogWriter>(path); });
  Trace t = read_trace_log(path);
  EXPECT_FALSE(t.complete());
  ASSERT_GE(static_cast<std::int64_t>(t.annotations().size()), flushed);
  test::expect_numbered_annotations(t);
}

TEST(TraceLog, UnwritableFolderIsReportedNamingTheFile) {
  ScratchDir dir;
  const auto path = dir / "no-such-folder" / "x.dslog";
  try {
    TraceLogWriter w(path);
    FAIL() << "created a log in a missing folder";
  } catch (const TraceError& e) {
    EXPECT_EQ(std::string(e.what()), path.string() + ": cannot create the file: No such file or directory");
  }
}

} // namespace
} // namespace dreamscope
