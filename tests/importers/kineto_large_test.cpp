// PyTorch profiler traces large enough that the importer reads their events in several runs
// and gives back the text it has read (json_split.h, import_kineto.cpp): every event comes
// through, in order and with its exact name, whatever its strings hold (quotes, backslashes,
// brackets and commas, which the run scanner must not take for structure), and damage in a
// later run keeps the runs before it.
#include "import_test_util.h"

#include <dreamscope/storage/trace_file.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace dreamscope::test {
namespace {

// A name whose JSON text is full of what a scanner could mistake: escaped quotes and
// backslashes in runs of every length (so that some fall across 64-byte blocks), brackets,
// braces and commas.
std::string tricky_name(int i) {
  std::string name = "op" + std::to_string(i) + " ";
  for (int k = 0; k < i % 7; ++k) name += '\\';
  name += i % 2 ? "\"]}," : "[{,\"";
  for (int k = 0; k < i % 5; ++k) name += '\\';
  name += " end";
  return name;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

struct LargeTrace {
  std::string text;
  std::vector<std::string> names;
  std::vector<std::size_t> element_ends; // one past each event's '}' in `text`
};

// `events` complete events on one thread, each with args that nest arrays and objects, then
// the thread's name, then top-level fields after the events.
LargeTrace large_trace(int events) {
  LargeTrace t;
  t.text = "{\"schemaVersion\": 1, \"traceEvents\": [\n";
  for (int i = 0; i < events; ++i) {
    t.names.push_back(tricky_name(i));
    t.text += "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": " + json_string(t.names.back()) +
              ", \"pid\": 1, \"tid\": 2, \"ts\": " + std::to_string(10 * i) +
              ", \"dur\": 5, \"args\": {\"Input Dims\": [[1, 2], [3]], \"Note\": \"a, [b]\", \"Nested\": {\"x\": [{}, {\"y\": \"}\"}]}}}";
    t.element_ends.push_back(t.text.size());
    t.text += ",\n";
  }
  t.text += "  {\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 1, \"tid\": 2, \"args\": {\"name\": \"main [thread]\"}}\n";
  t.text += "], \"traceName\": \"large, [trace]\", \"baseTimeNanoseconds\": 1000}\n";
  return t;
}

constexpr int kEvents = 16000; // about 3.3 MB: a dozen runs, and a buffer large enough to map

// Every test runs with the runs parsed on a thread of their own while this one hands them
// over, and one after the other (kineto_json_reader.cpp, reads_alongside); and with runs of
// 256 kB, and of 300 bytes (a run boundary every few events, and the small cases alongside);
// and with the text streamed (import_input.h, open_input: read or inflated as the reading
// asks for it, the pages read moving ahead in chunks of 4 or 64 kB), which these files are
// too small for unless told.
struct Reading {
  const char* threads;
  const char* run_bytes;
  const char* name;
  const char* stream_chunk = nullptr;
};

class KinetoLargeTrace : public ::testing::TestWithParam<Reading> {
 protected:
  void SetUp() override {
    ::setenv("DREAMSCOPE_IMPORT_THREADS", GetParam().threads, 1);
    if (GetParam().run_bytes) ::setenv("DREAMSCOPE_IMPORT_RUN_BYTES", GetParam().run_bytes, 1);
    if (GetParam().stream_chunk) {
      ::setenv("DREAMSCOPE_IMPORT_STREAM_FROM", "0", 1);
      ::setenv("DREAMSCOPE_IMPORT_STREAM_CHUNK", GetParam().stream_chunk, 1);
    }
  }
  void TearDown() override {
    ::unsetenv("DREAMSCOPE_IMPORT_THREADS");
    ::unsetenv("DREAMSCOPE_IMPORT_RUN_BYTES");
    ::unsetenv("DREAMSCOPE_IMPORT_STREAM_FROM");
    ::unsetenv("DREAMSCOPE_IMPORT_STREAM_CHUNK");
  }
};

INSTANTIATE_TEST_SUITE_P(Reading, KinetoLargeTrace,
                         ::testing::Values(Reading{"2", nullptr, "Alongside"}, Reading{"1", nullptr, "InTurn"},
                                           Reading{"2", "300", "AlongsideInSmallRuns"},
                                           Reading{"1", "300", "InTurnInSmallRuns"},
                                           Reading{"2", nullptr, "AlongsideStreamed", "4096"},
                                           Reading{"1", nullptr, "InTurnStreamed", "65536"},
                                           Reading{"2", "300", "AlongsideInSmallRunsStreamed", "65536"},
                                           Reading{"1", "300", "InTurnInSmallRunsStreamed", "4096"}),
                         [](const ::testing::TestParamInfo<Reading>& info) { return info.param.name; });

TEST_P(KinetoLargeTrace, ManyRunsKeepEveryEventInOrderWithItsExactName) {
  const LargeTrace large = large_trace(kEvents);
  ASSERT_GT(large.text.size(), std::size_t{3} << 20); // mapped, and given back as it is read
  TempDir dir;
  for (const auto& p : {dir.write("large.json", large.text), dir.write_gzip("large.json.gz", large.text)}) {
    SCOPED_TRACE(p.string());
    ImportStats stats;
    const Trace t = load_trace(p, &stats);
    EXPECT_TRUE(t.complete());
    EXPECT_EQ(stats.events_read, kEvents + 1);
    const auto& ann = t.annotations();
    ASSERT_EQ(ann.size(), static_cast<std::size_t>(kEvents));
    for (std::size_t i = 0; i < ann.size(); ++i) {
      ASSERT_EQ(t.str(ann.name[i]), large.names[i]) << "event " << i;
      ASSERT_EQ(ann.start[i], static_cast<TimeNs>(10'000 * i)) << "event " << i;
    }
    ASSERT_EQ(t.tracks().size(), 1u);
    EXPECT_EQ(t.tracks()[0].name, "main [thread]"); // named after the events it names
    EXPECT_EQ(t.meta_value("kineto.traceName"), "large, [trace]");
  }
}

TEST_P(KinetoLargeTrace, ATruncatedFileKeepsEveryWholeEventBeforeTheCut) {
  const LargeTrace large = large_trace(kEvents);
  const std::size_t cut = large.text.size() * 7 / 10;
  std::size_t whole = 0;
  while (whole < large.element_ends.size() && large.element_ends[whole] <= cut) ++whole;
  TempDir dir;
  ImportStats stats;
  const Trace t = load_trace(dir.write("cut.json", large.text.substr(0, cut)), &stats);
  EXPECT_FALSE(t.complete());
  EXPECT_EQ(stats.issues.count("kineto_damaged_json"), 1u);
  // The last whole event may end just before the cut, with its comma after it: it is kept
  // when the comma is in the file, as a comma that ends an element says it is whole.
  const std::size_t kept = t.annotations().size();
  EXPECT_TRUE(kept == whole || kept + 1 == whole) << kept << " of " << whole;
  EXPECT_GT(kept, static_cast<std::size_t>(kEvents / 2));
}

TEST_P(KinetoLargeTrace, AMissingElementInALaterRunKeepsTheRunsBeforeIt) {
  LargeTrace large = large_trace(kEvents);
  const std::size_t at = large.element_ends[kEvents * 6 / 10];
  large.text.insert(at, ", "); // "}, ,\n  {": an element is missing
  TempDir dir;
  ImportStats stats;
  const Trace t = load_trace(dir.write("holed.json", large.text), &stats);
  EXPECT_FALSE(t.complete());
  EXPECT_EQ(stats.issues.count("kineto_damaged_json"), 1u);
  EXPECT_EQ(t.annotations().size(), static_cast<std::size_t>(kEvents * 6 / 10 + 1));
}

// Found by fuzz_kineto_import: an events array closed by '}' before its first event made
// the scanner hand over a run that ended before it began.
TEST_P(KinetoLargeTrace, AnArrayClosedByABraceIsDamageNotARun) {
  TempDir dir;
  const auto first = dir.write("brace.json", "{\"traceEvents\": [}\n {\"ph\": \"X\", \"name\": \"a\"}\n ]\n}\n");
  try {
    load_trace(first);
    ADD_FAILURE() << "no error";
  } catch (const TraceError& e) {
    EXPECT_TRUE(std::string(e.what()).starts_with(first.string() + ": not valid JSON")) << e.what();
  }
  // After events, the events before it are kept.
  ImportStats stats;
  const Trace t = load_trace(dir.write("late.json", R"json({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": 10, "dur": 5},
    {"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 2, "ts": 20, "dur": 5} }]})json"),
                             &stats);
  EXPECT_EQ(t.annotations().size(), 1u); // "b" is in the damaged rest, which simdjson refuses whole
  EXPECT_EQ(stats.issues.count("kineto_damaged_json"), 1u);
  EXPECT_FALSE(t.complete());
}

// Found by fuzz_kineto_import: a run simdjson refuses to start (here, bytes that are not
// UTF-8) has no location in it to report.
TEST_P(KinetoLargeTrace, ARunSimdjsonRefusesIsReportedWhereItStarts) {
  TempDir dir;
  const auto p = dir.write("latin1.json", std::string("[{\"ph\": \"X\", \"name\": \"caf\xe9\"}]"));
  try {
    load_trace(p);
    ADD_FAILURE() << "no error";
  } catch (const TraceError& e) {
    EXPECT_EQ(std::string(e.what()), p.string() + ": not valid JSON (The input is not valid UTF-8 at byte 0)");
  }
}

// The same in a trace of many runs: the error is raised on the importing thread, after the
// thread that parses the runs has stopped.
TEST_P(KinetoLargeTrace, AFirstRunSimdjsonRefusesFailsTheImport) {
  LargeTrace large = large_trace(kEvents);
  large.text.insert(large.element_ends[0] - 3, "\xe9"); // in the first event, so the first run
  TempDir dir;
  const auto p = dir.write("latin1_large.json", large.text);
  try {
    load_trace(p);
    ADD_FAILURE() << "no error";
  } catch (const TraceError& e) {
    EXPECT_TRUE(std::string(e.what()).starts_with(p.string() + ": not valid JSON (The input is not valid UTF-8"))
        << e.what();
  }
  // In a later run, the runs before it are kept: every event before it, in runs of one or two.
  large = large_trace(kEvents);
  large.text.insert(large.element_ends[kEvents / 2] - 3, "\xe9");
  ImportStats stats;
  const Trace t = load_trace(dir.write("latin1_late.json", large.text), &stats);
  EXPECT_EQ(stats.issues.count("kineto_damaged_json"), 1u);
  EXPECT_GT(t.annotations().size(), static_cast<std::size_t>(kEvents / 3));
  EXPECT_LE(t.annotations().size(), static_cast<std::size_t>(kEvents / 2));
}

TEST_P(KinetoLargeTrace, ATrailingCommaKeepsTheEventsBeforeIt) {
  TempDir dir;
  ImportStats stats;
  const Trace t = load_trace(dir.write("trailing.json", R"json({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": 10, "dur": 5},
    {"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 2, "ts": 20, "dur": 5},
  ]})json"),
                             &stats);
  EXPECT_EQ(t.annotations().size(), 2u);
  EXPECT_EQ(stats.issues.count("kineto_damaged_json"), 1u);
}

// The args of a name already known are skipped unparsed; that must not lose a name whose
// args come before its pid, nor let a repeated name replace the first.
TEST_P(KinetoLargeTrace, RepeatedAndReorderedMetadataKeepsTheFirstNames) {
  TempDir dir;
  const Trace t = load_trace(dir.write("meta.json", R"json({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": 10, "dur": 5},
    {"ph": "X", "cat": "cpu_op", "name": "b", "pid": 3, "tid": 4, "ts": 10, "dur": 5},
    {"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "first"}},
    {"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "second"}},
    {"name": "thread_name", "ph": "M", "pid": 1, "tid": 2, "args": {"name": "main"}},
    {"name": "thread_name", "ph": "M", "pid": 1, "tid": 2, "args": {"name": "again"}},
    {"args": {"name": "early args"}, "name": "thread_name", "ph": "M", "pid": 3, "tid": 4},
    {"args": {"name": "proc 3"}, "ph": "M", "name": "process_name", "pid": 3, "tid": 0},
    {"name": "process_name", "ph": "M", "pid": 3, "tid": 0, "args": {"name": "late"}}
  ]})json"));
  ASSERT_EQ(t.processes().size(), 2u);
  ASSERT_EQ(t.tracks().size(), 2u);
  for (const auto& track : t.tracks()) {
    const std::int64_t pid = t.processes()[track.process].pid;
    EXPECT_EQ(track.name, pid == 1 ? "main" : "early args");
    EXPECT_EQ(t.processes()[track.process].name, pid == 1 ? "first" : "proc 3");
  }
}

// Metadata written again and again, as the MTIA trace does (each name 62k times): repeats
// after the first are skipped unparsed, and must still be counted in place, lose no event
// between them, and leave the text that the run scanner reads again intact (a repeat that
// ends in the scanner's last block must stay, or the scan resumes inside a string).
TEST_P(KinetoLargeTrace, RepeatedMetadataIsSkippedButCountedInPlace) {
  const std::string process_name = "proc \"one\", [x] {y}";
  const std::string thread_name = "main \\ [thread], \"t\"";
  const std::string repeats =
      "  {\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 0, \"args\": {\"name\": " +
      json_string(process_name) + "}},\n" +
      "  {\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 2, \"args\": {\"name\": " +
      json_string(thread_name) + "}},\n" +
      "  {\"name\": \"thread_sort_index\", \"ph\": \"M\", \"pid\": 1, \"tid\": 2, \"args\": {\"sort_index\": 4}},\n";
  // Each complete event is followed by the three repeats; one event in a late run has a field
  // of the wrong type, so that its number says whether the skipped elements were counted.
  constexpr int kOps = 12000, kOdd = 10001;
  std::string text = "{\"traceEvents\": [\n";
  std::vector<std::string> names;
  for (int i = 0; i < kOps; ++i) {
    if (i == kOdd) {
      text += "  {\"ph\": 5, \"name\": \"odd\"},\n";
    } else {
      names.push_back(tricky_name(i));
      text += "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": " + json_string(names.back()) +
              ", \"pid\": 1, \"tid\": 2, \"ts\": " + std::to_string(10 * i) + ", \"dur\": 5},\n";
    }
    text += repeats;
  }
  text += "  {\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 0, \"args\": {\"name\": \"late\"}}\n]}\n";
  ASSERT_GT(text.size(), std::size_t{3} << 20);
  TempDir dir;
  ImportStats stats;
  const Trace t = load_trace(dir.write("repeats.json", text), &stats);
  EXPECT_TRUE(stats.issues.count("kineto_damaged_json") == 0);
  EXPECT_EQ(stats.events_read, static_cast<std::uint64_t>(4 * kOps + 1));
  const auto odd = stats.issues.find("kineto_field_wrong_type");
  ASSERT_NE(odd, stats.issues.end());
  EXPECT_EQ(odd->second.count, 1);
  EXPECT_EQ(odd->second.example, "field 'ph' of element #" + std::to_string(4 * kOdd + 1));
  const auto& ann = t.annotations();
  ASSERT_EQ(ann.size(), names.size());
  for (std::size_t i = 0; i < ann.size(); ++i) ASSERT_EQ(t.str(ann.name[i]), names[i]) << "event " << i;
  ASSERT_EQ(t.processes().size(), 1u);
  EXPECT_EQ(t.processes()[0].name, process_name);
  ASSERT_EQ(t.tracks().size(), 1u);
  EXPECT_EQ(t.tracks()[0].name, thread_name);
}

} // namespace
} // namespace dreamscope::test
