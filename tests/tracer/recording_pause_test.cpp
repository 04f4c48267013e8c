// Recording paused and resumed by the traced program (ds_tracing_pause / ds_tracing_resume):
// nothing made while paused is in the trace, ranges open at a pause end there, pops after the
// resume of ranges pushed before it are ignored, the pauses are in meta and `info`, and a
// paused NVTX call costs what an untraced one does (the tracer emptied its slot).
#include "run_helpers.h"

#include <dreamscope/storage/tracer_environment.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

namespace dreamscope::test {
namespace {

struct Pause {
  std::int64_t pid, start, end;
};

std::vector<Pause> pauses_of(const Trace& t) {
  std::vector<Pause> out;
  std::stringstream in(t.meta_value("recording_paused"));
  std::string item;
  while (std::getline(in, item, ';')) {
    Pause p{};
    if (std::sscanf(item.c_str(), "%ld %ld %ld", &p.pid, &p.start, &p.end) == 3) out.push_back(p);
  }
  return out;
}

TEST(RecordingPause, NothingPausedIsRecordedAndRangesOpenAtAPauseEndThere) {
  const auto dir = scratch_dir("recording-pause");
  const auto out = dir / "paused.db";
  RunResult r = run(traced(out, {program("pause_resume")}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // NVTX returns -2 from a push whose slot is empty: what it costs with no tool attached.
  EXPECT_NE(r.output.find("push while recording 0, while paused -2"), std::string::npos) << r.output;

  Trace t = read_trace(out);
  EXPECT_TRUE(t.complete());
  const std::vector<Pause> pauses = pauses_of(t);
  ASSERT_EQ(pauses.size(), 2u) << t.meta_value("recording_paused");
  EXPECT_EQ(pauses[0].pid, t.processes()[0].pid);
  EXPECT_LT(pauses[0].start, pauses[0].end);
  EXPECT_LT(pauses[0].end, pauses[1].start);
  EXPECT_GE(pauses[1].end, pauses[1].start) << "the process exited paused: the pause ends with it";

  std::map<std::string, Row> by_name;
  for (const Row& row : annotation_rows(t)) {
    EXPECT_TRUE(by_name.emplace(row.name, row).second) << row.name << " twice";
  }
  std::vector<std::string> names;
  for (const auto& [name, row] : by_name) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"open-at-last-pause", "open-at-pause", "recorded-1", "recorded-2", "started",
                                             "worker-after", "worker-held"}))
      << "no range or mark made while paused, nor the control marks";
  auto ends_at = [&](const std::string& name, std::int64_t at) {
    ASSERT_TRUE(by_name.count(name)) << name;
    EXPECT_EQ(by_name[name].end, at) << name;
    EXPECT_LT(by_name[name].start, at) << name;
  };
  ends_at("open-at-pause", pauses[0].start);
  ends_at("started", pauses[0].start);
  ends_at("worker-held", pauses[0].start);
  ends_at("open-at-last-pause", pauses[1].start);
  EXPECT_LT(by_name["recorded-1"].end, pauses[0].start);
  EXPECT_GE(by_name["recorded-2"].start, pauses[0].end);
  EXPECT_GE(by_name["worker-after"].start, pauses[0].end);
  EXPECT_NE(by_name["worker-held"].tid, by_name["recorded-1"].tid);

  RunResult info = run({bin("dreamscope"), "info", out.string()});
  ASSERT_EQ(info.exit_code, 0) << info.output;
  EXPECT_NE(info.output.find("recording paused  2 times by the program"), std::string::npos) << info.output;
  RunResult json = run({bin("dreamscope"), "info", out.string(), "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.output;
  const auto j = nlohmann::json::parse(json.output);
  EXPECT_EQ(j["recording_paused"]["pauses"], 2);
  EXPECT_EQ(j["recording_paused"]["ns"], (pauses[0].end - pauses[0].start) + (pauses[1].end - pauses[1].start));
  std::filesystem::remove_all(dir);
}

// cpu_train --paused-blocks pauses through the annotation library in every other block of
// steps: the trace holds the steps of the recorded blocks, each once, on every thread's side
// the same, and the run prints every step's time with whether it was recorded.
TEST(RecordingPause, CpuTrainRecordsEveryOtherBlockOfSteps) {
  const auto dir = scratch_dir("recording-pause-cpu-train");
  const auto out = dir / "blocks.db";
  constexpr int kSteps = 240, kBlock = 30; // blocks of tens of ms: the writer drains in them
  RunResult r = run(traced(out, {bin("cpu_train"), "--steps", std::to_string(kSteps), "--workers", "2",
                                 "--dataset-size", "100", "--paused-blocks", std::to_string(kBlock), "--data",
                                 (dir / "data").string()}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Trace t = read_trace(out);
  EXPECT_TRUE(t.complete());
  EXPECT_EQ(pauses_of(t).size(), static_cast<std::size_t>(kSteps / kBlock / 2));
  std::set<std::int64_t> steps, fetched;
  for (const Row& row : annotation_rows(t)) {
    if (row.category == "step") {
      EXPECT_TRUE(steps.insert(row.payload).second) << "step " << row.payload << " twice";
    }
    if (row.category == "fetch") fetched.insert(row.payload);
  }
  std::set<std::int64_t> recorded;
  for (int i = 0; i < kSteps; ++i) {
    if ((i / kBlock) % 2 == 0) recorded.insert(i);
  }
  EXPECT_EQ(steps, recorded);
  // The loaders run ahead of the steps, so which batches they fetched while recording is not
  // fixed; that some were, and not all, is.
  EXPECT_FALSE(fetched.empty());
  EXPECT_LT(fetched.size(), static_cast<std::size_t>(kSteps));
  int printed = 0;
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);) {
    int step = -1, was_recorded = -1;
    double ns = 0;
    if (std::sscanf(line.c_str(), "step_ns %d %d %lf", &step, &was_recorded, &ns) != 3) continue;
    ++printed;
    EXPECT_EQ(was_recorded == 1, recorded.count(step) == 1) << line;
    EXPECT_GT(ns, 0) << line;
  }
  EXPECT_EQ(printed, kSteps);
  // The writer's busy spells are on the threads that recorded beside them, never in a pause:
  // no recorded step ran beside those (docs/simulation.md, "The writer's drains").
  const std::optional<StringId> busy = t.find_string(tracer_environment::kWriterBusy);
  ASSERT_TRUE(busy) << "no writer spell recorded";
  int spells = 0;
  for (const OverheadRecord& o : t.overheads()) {
    if (o.kind != *busy) continue;
    ++spells;
    EXPECT_LT(o.start, o.end);
    for (const Pause& p : pauses_of(t)) EXPECT_TRUE(o.end <= p.start || o.start >= p.end) << o.start << " in a pause";
  }
  EXPECT_GT(spells, 0);
  std::filesystem::remove_all(dir);
}

// The Python module's pause() and resume(), through the annotation library.
TEST(RecordingPause, PythonPauseAndResume) {
  if (std::system("python3 -c 'import ctypes' >/dev/null 2>&1") != 0) GTEST_SKIP() << "no python3";
  const auto dir = scratch_dir("recording-pause-python");
  const auto out = dir / "python.db";
  const std::string script =
      "import dreamscope\n"
      "for i in range(6):\n"
      "    if i == 2: dreamscope.pause()\n"
      "    if i == 4: dreamscope.resume()\n"
      "    with dreamscope.step(i):\n"
      "        pass\n"
      "print('traced' if dreamscope.is_traced() else 'untraced')\n";
  RunResult r = run(traced(out, {"python3", "-c", script}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("traced"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("untraced"), std::string::npos) << r.output;
  Trace t = read_trace(out);
  std::set<std::int64_t> steps;
  for (const Row& row : annotation_rows(t)) {
    if (row.category == "step") steps.insert(row.payload);
  }
  EXPECT_EQ(steps, (std::set<std::int64_t>{0, 1, 4, 5}));
  EXPECT_EQ(pauses_of(t).size(), 1u);
  // Untraced, the same calls are no-ops.
  RunResult untraced = run({"python3", "-c", script}, {{"PYTHONPATH", DREAMSCOPE_SOURCE_DIR "/annotations/python"}});
  ASSERT_EQ(untraced.exit_code, 0) << untraced.output;
  EXPECT_NE(untraced.output.find("untraced"), std::string::npos) << untraced.output;
  std::filesystem::remove_all(dir);
}

} // namespace
} // namespace dreamscope::test
