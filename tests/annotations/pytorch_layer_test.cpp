// dreamscope's Python instrumentation on real PyTorch programs, traced with the real tracer:
// an unmodified torchvision script gives steps, batch waits, the workers' fetch and collate
// linked to their batches, module forwards, backward and the optimizer; `--python off`
// gives none of them; a program's own annotations replace the automatic ones of their kind.
// Debian's python3-torch is installed by scripts/install-deps.sh: under CI a Python without
// torch is a failure, elsewhere the tests say they are skipped.
#include "../tracer/run_helpers.h"

#include <dreamscope/storage/trace_summary.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

namespace dreamscope::test {
namespace {

// A Python that imports torch: Debian's first (a user's PATH may put another python3 first).
const std::string& torch_python() {
  static const std::string python = [] {
    for (const char* candidate : {"/usr/bin/python3", "python3"}) {
      const std::string probe = std::string(candidate) + " -c 'import torch, torchvision' >/dev/null 2>&1";
      if (std::system(probe.c_str()) == 0) return std::string(candidate);
    }
    return std::string();
  }();
  return python;
}

#define REQUIRE_TORCH()                                                                        \
  do {                                                                                         \
    if (torch_python().empty()) {                                                              \
      const char* ci = std::getenv("CI");                                                      \
      if (ci && std::string(ci) == "true") FAIL() << "no Python with torch and torchvision (scripts/install-deps.sh installs them)"; \
      GTEST_SKIP() << "no Python with torch and torchvision here";                             \
    }                                                                                          \
  } while (0)

std::string script(const char* name) { return std::string(DREAMSCOPE_SOURCE_DIR) + "/" + name; }

std::vector<Row> select(const std::vector<Row>& rows, const std::string& domain, const std::string& category,
                        const std::string& name = {}) {
  std::vector<Row> out;
  for (const auto& r : rows) {
    if (r.domain == domain && r.category == category && (name.empty() || r.name == name)) out.push_back(r);
  }
  std::sort(out.begin(), out.end(), [](const Row& a, const Row& b) { return a.start < b.start; });
  return out;
}

std::size_t count_flows(const Trace& t, std::string_view kind) {
  return static_cast<std::size_t>(std::count_if(t.flows().begin(), t.flows().end(),
                                                [&](const FlowRecord& f) { return t.str(f.kind) == kind; }));
}

constexpr const char* kAuto = "dreamscope.auto";

TEST(PytorchLayer, UnmodifiedTorchvisionScriptShowsStepsPipelineAndModel) {
  REQUIRE_TORCH();
  const auto dir = scratch_dir("pytorch-layer");
  const auto out = dir / "rn.db";
  RunResult r = run(traced(out, {torch_python(), script("tests/python/torchvision_resnet.py"), "--workers", "2",
                                 "--steps", "5"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Trace t = read_trace(out);
  const auto rows = annotation_rows(t);
  ASSERT_GE(t.processes().size(), 3u) << "the main process and its two DataLoader workers";
  const std::int64_t main_pid = t.processes().front().pid;

  // Five optimizer steps, numbered 0..4, one after another on the main thread.
  const auto steps = select(rows, kAuto, "step");
  ASSERT_EQ(steps.size(), 5u) << r.output;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].payload, static_cast<std::int64_t>(i));
    EXPECT_EQ(steps[i].pid, main_pid);
    EXPECT_LT(steps[i].start, steps[i].end);
    if (i > 0) {
      EXPECT_EQ(steps[i].start, steps[i - 1].end) << "a step begins where the one before ended";
    }
  }
  // No step marks are left: the merge made them into steps.
  for (const auto& row : select(rows, kAuto, "step")) EXPECT_NE(row.start, row.end);

  // The main process waits for six batches (the sixth request finds none); each of the five
  // is fetched and collated in a worker, with the same batch id, and linked to its wait.
  const auto waits = select(rows, kAuto, "wait");
  ASSERT_EQ(waits.size(), 6u);
  const auto fetches = select(rows, kAuto, "fetch"), preps = select(rows, kAuto, "prep");
  ASSERT_EQ(fetches.size(), 5u);
  ASSERT_EQ(preps.size(), 5u);
  std::set<std::int64_t> waited, fetched, prepared, workers;
  for (const auto& w : waits) {
    EXPECT_EQ(w.pid, main_pid);
    waited.insert(w.payload);
  }
  for (const auto& f : fetches) {
    EXPECT_NE(f.pid, main_pid);
    workers.insert(f.pid);
    fetched.insert(f.payload);
  }
  for (const auto& p : preps) prepared.insert(p.payload);
  EXPECT_EQ(workers.size(), 2u);
  EXPECT_EQ(fetched, prepared);
  EXPECT_TRUE(std::includes(waited.begin(), waited.end(), fetched.begin(), fetched.end()));
  EXPECT_EQ(count_flows(t, "batch"), 5u);
  // Each batch's collate follows its reads, and each ends with the thread's CPU time in it.
  for (const auto& f : fetches) {
    const auto p = std::find_if(preps.begin(), preps.end(), [&](const Row& x) { return x.payload == f.payload; });
    ASSERT_NE(p, preps.end());
    EXPECT_LE(f.end, p->start);
  }
  EXPECT_EQ(select(rows, kAuto, "cpu").size(), 10u);

  // The model: its forward and its direct children's (the default depth 1), backward,
  // the optimizer's step and zero_grad, once a step.
  EXPECT_EQ(select(rows, kAuto, "operation", "forward").size(), 5u);
  EXPECT_EQ(select(rows, kAuto, "operation", "forward: layer1").size(), 5u);
  EXPECT_EQ(select(rows, kAuto, "operation", "forward: fc").size(), 5u);
  EXPECT_TRUE(select(rows, kAuto, "operation", "forward: layer1.0").empty()) << "deeper than the default depth";
  EXPECT_EQ(select(rows, kAuto, "operation", "backward").size(), 5u);
  EXPECT_EQ(select(rows, kAuto, "operation", "optimizer.step").size(), 5u);
  EXPECT_EQ(select(rows, kAuto, "operation", "zero_grad").size(), 5u);
  // What a Python range costs the program beyond the tracer's recording, measured at start:
  // a calibration row, not a mark left in the trace.
  const auto python = std::find_if(t.calibration().begin(), t.calibration().end(),
                                   [](const CalibrationRecord& c) { return c.event_kind == "python_range"; });
  ASSERT_NE(python, t.calibration().end());
  EXPECT_GT(python->cost_ns, 0);
  EXPECT_LT(python->cost_ns, 1e6);
  EXPECT_TRUE(std::none_of(rows.begin(), rows.end(), [](const Row& x) { return x.name == "python range cost"; }));
  for (const auto& s : steps) {
    const auto inside = [&](const Row& x) { return x.start >= s.start && x.end <= s.end; };
    const auto backward = select(rows, kAuto, "operation", "backward");
    EXPECT_EQ(std::count_if(backward.begin(), backward.end(), inside), 1) << "step " << s.payload;
  }
  // Backward per module, within each pass on its thread, in the reverse of the forward's
  // order: the gradient reaches fc first, layer4 before layer1, and the modules' backwards
  // follow each other without overlapping.
  const auto passes = select(rows, kAuto, "operation", "backward");
  for (const char* module : {"backward: fc", "backward: layer4", "backward: layer1", "backward: conv1"}) {
    const auto ranges = select(rows, kAuto, "operation", module);
    ASSERT_EQ(ranges.size(), 5u) << module;
    for (std::size_t i = 0; i < ranges.size(); ++i) {
      EXPECT_EQ(ranges[i].tid, passes[i].tid) << module;
      EXPECT_GE(ranges[i].start, passes[i].start) << module;
      EXPECT_LE(ranges[i].end, passes[i].end) << module;
    }
  }
  for (std::size_t i = 0; i < passes.size(); ++i) {
    const auto fc = select(rows, kAuto, "operation", "backward: fc")[i];
    const auto layer4 = select(rows, kAuto, "operation", "backward: layer4")[i];
    const auto layer1 = select(rows, kAuto, "operation", "backward: layer1")[i];
    EXPECT_LE(fc.end, layer4.start);
    EXPECT_LE(layer4.end, layer1.start);
  }
  EXPECT_TRUE(select(rows, kAuto, "operation", "backward: layer1.0").empty()) << "deeper than the default depth";
  std::filesystem::remove_all(dir);
}

TEST(PytorchLayer, DeeperModulesOnRequestAndNothingWithPythonOff) {
  REQUIRE_TORCH();
  const auto dir = scratch_dir("pytorch-layer-options");
  const auto deep = dir / "deep.db", off = dir / "off.db";
  const std::vector<std::string> job{torch_python(), script("tests/python/torchvision_resnet.py"), "--workers", "0",
                                     "--steps", "2"};
  RunResult r = run(traced(deep, job, {"--python-modules", "2"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto rows = annotation_rows(read_trace(deep));
  EXPECT_EQ(select(rows, kAuto, "operation", "forward: layer1.0").size(), 2u);
  // A module's backward encloses its children's: layer1's holds layer1.0's and layer1.1's.
  const auto layer1 = select(rows, kAuto, "operation", "backward: layer1");
  const auto block = select(rows, kAuto, "operation", "backward: layer1.0");
  ASSERT_EQ(block.size(), layer1.size());
  for (std::size_t i = 0; i < block.size(); ++i) {
    EXPECT_GE(block[i].start, layer1[i].start);
    EXPECT_LE(block[i].end, layer1[i].end);
  }
  EXPECT_TRUE(select(rows, kAuto, "operation", "forward: layer1.0.conv1").empty());
  // Without workers the main process fetches each batch itself, inside its wait.
  const auto waits = select(rows, kAuto, "wait"), fetches = select(rows, kAuto, "fetch");
  ASSERT_EQ(fetches.size(), 2u);
  for (std::size_t i = 0; i < fetches.size(); ++i) {
    EXPECT_EQ(fetches[i].payload, waits[i].payload);
    EXPECT_GE(fetches[i].start, waits[i].start);
    EXPECT_LE(fetches[i].end, waits[i].end);
  }
  EXPECT_EQ(select(rows, kAuto, "step").size(), 2u);

  r = run(traced(off, job, {"--python", "off"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  if (std::filesystem::exists(off)) {
    rows = annotation_rows(read_trace(off));
    EXPECT_TRUE(std::none_of(rows.begin(), rows.end(), [](const Row& x) { return x.domain == kAuto; }));
  }
  std::filesystem::remove_all(dir);
}

TEST(PytorchLayer, EpochsOfPersistentWorkersAndANoGradValidationKeepBatchesApart) {
  REQUIRE_TORCH();
  const auto dir = scratch_dir("pytorch-layer-epochs");
  const auto out = dir / "e.db";
  RunResult r = run(traced(out, {torch_python(), script("tests/python/torchvision_resnet.py"), "--workers", "2",
                                 "--steps", "3", "--epochs", "2", "--persistent", "--val"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Trace t = read_trace(out);
  const auto rows = annotation_rows(t);
  // Training steps only: the validation passes run without gradients and make none.
  EXPECT_EQ(select(rows, kAuto, "step").size(), 6u);
  // 2 epochs × (3 training + 3 validation batches), every one its own id, each linked.
  const auto preps = select(rows, kAuto, "prep");
  std::set<std::int64_t> ids;
  for (const auto& p : preps) ids.insert(p.payload);
  EXPECT_EQ(preps.size(), 12u);
  EXPECT_EQ(ids.size(), 12u);
  EXPECT_EQ(count_flows(t, "batch"), 12u);
  std::filesystem::remove_all(dir);
}

// A GAN's loop: two optimizers a batch. Where the loop iterates a DataLoader a step stays one
// pass of it (both updates, one batch); without one, nothing tells passes apart and each
// optimizer step ends a step.
TEST(PytorchLayer, TwoOptimizersABatchMakeOneStepABatch) {
  REQUIRE_TORCH();
  const auto dir = scratch_dir("pytorch-layer-gan");
  const auto out = dir / "gan.db";
  RunResult r = run(traced(out, {torch_python(), script("tests/python/two_optimizers.py"), "--workers", "1",
                                 "--steps", "6"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto rows = annotation_rows(read_trace(out));
  const auto steps = select(rows, kAuto, "step");
  ASSERT_EQ(steps.size(), 6u) << r.output;
  const auto updates = select(rows, kAuto, "operation", "optimizer.step");
  const auto waits = select(rows, kAuto, "wait");
  ASSERT_EQ(updates.size(), 12u);
  ASSERT_EQ(waits.size(), 7u) << "six batches and the request that found none";
  const auto within = [](const std::vector<Row>& ranges, const Row& step) {
    return std::count_if(ranges.begin(), ranges.end(),
                         [&](const Row& x) { return x.start >= step.start && x.end <= step.end; });
  };
  for (std::size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].payload, static_cast<std::int64_t>(i));
    EXPECT_EQ(within(updates, steps[i]), 2) << "step " << i << ": both updates of its batch";
    EXPECT_EQ(within(waits, steps[i]), 1) << "step " << i << ": one batch";
    EXPECT_GE(steps[i].end, updates[2 * i + 1].end) << "step " << i << " ends as its last update returns";
    if (i + 1 < steps.size()) {
      EXPECT_LE(steps[i].end, waits[i + 1].start);
    }
    if (i > 0) {
      EXPECT_EQ(steps[i].start, steps[i - 1].end);
    }
  }

  const auto bare = dir / "bare.db";
  r = run(traced(bare, {torch_python(), script("tests/python/two_optimizers.py"), "--no-loader", "--steps", "6"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  rows = annotation_rows(read_trace(bare));
  EXPECT_EQ(select(rows, kAuto, "step").size(), 12u) << "no DataLoader: a step per optimizer step";
  std::filesystem::remove_all(dir);
}

// An IterableDataset with two workers: each worker's last attempt finds the stream exhausted,
// and is no fetch (it would be a batch that never comes); every batch is fetched, collated and
// linked once.
TEST(PytorchLayer, AnExhaustedStreamMakesNoFetch) {
  REQUIRE_TORCH();
  const auto dir = scratch_dir("pytorch-layer-stream");
  const auto out = dir / "stream.db";
  RunResult r = run(traced(out, {torch_python(), script("tests/python/iterable_stream.py"), "--workers", "2",
                                 "--items", "32", "--batch-size", "4", "--epochs", "2"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Trace t = read_trace(out);
  const auto rows = annotation_rows(t);
  // 2 epochs x (training + evaluation) x 8 batches: 32 batches, each its own id.
  const auto fetches = select(rows, kAuto, "fetch"), preps = select(rows, kAuto, "prep");
  EXPECT_EQ(fetches.size(), 32u);
  EXPECT_EQ(preps.size(), 32u);
  std::set<std::int64_t> fetched, prepared;
  for (const auto& f : fetches) fetched.insert(f.payload);
  for (const auto& p : preps) prepared.insert(p.payload);
  EXPECT_EQ(fetched, prepared);
  EXPECT_EQ(count_flows(t, "batch"), 32u);
  EXPECT_TRUE(std::none_of(rows.begin(), rows.end(), [](const Row& x) { return x.name == "fetch found no data"; }));
  EXPECT_EQ(select(rows, kAuto, "step").size(), 16u) << "training steps only";
  std::filesystem::remove_all(dir);
}

// Gradient accumulation: an optimizer step every 3 batches, zero_grad after it. The batches
// before the first optimizer step were its micro-batches, so the first step holds three
// batches as every later one does.
TEST(PytorchLayer, GradientAccumulationMakesAStepOfEachOptimizerStepFromTheFirst) {
  REQUIRE_TORCH();
  const auto dir = scratch_dir("pytorch-layer-accumulate");
  const auto out = dir / "acc.db";
  RunResult r = run(traced(out, {torch_python(), script("tests/python/torchvision_resnet.py"), "--workers", "1",
                                 "--steps", "9", "--batch-size", "4", "--accumulate", "3"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto rows = annotation_rows(read_trace(out));
  const auto steps = select(rows, kAuto, "step");
  const auto waits = select(rows, kAuto, "wait");
  ASSERT_EQ(steps.size(), 3u) << r.output;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].payload, static_cast<std::int64_t>(i));
    EXPECT_EQ(std::count_if(waits.begin(), waits.end(),
                            [&](const Row& w) { return w.start >= steps[i].start && w.end <= steps[i].end; }),
              3)
        << "step " << i;
  }
  std::filesystem::remove_all(dir);
}

// The paired bench's runs (bench/pytorch_whatif_paired.py): blocks of the traced configuration
// and of another, recording paused in the other's. Only the first kind's steps are in the
// trace, and no step spans a pause (its marks inside went unrecorded); the other kind's
// workers, forked while paused, record nothing.
TEST(PytorchLayer, AlternatingBlocksRecordOnlyTheTracedKindAndNoStepSpansAPause) {
  REQUIRE_TORCH();
  const auto dir = scratch_dir("pytorch-layer-alternate");
  const auto out = dir / "alt.db";
  RunResult r = run(traced(out, {torch_python(), script("samples/pytorch/train.py"), "--device", "cpu", "--steps", "12",
                                 "--block", "3", "--batch-size", "4", "--workers", "0", "--alternate", "--workers 2"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::size_t printed = 0;
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("step_ns ")) continue;
    const std::size_t step = std::stoul(line.substr(8));
    EXPECT_EQ(line[line.find(' ', 8) + 1], (step / 3) % 2 ? 'b' : 'a') << line;
    ++printed;
  }
  EXPECT_EQ(printed, 12u) << r.output;
  const Trace t = read_trace(out);
  const auto rows = annotation_rows(t);
  // Blocks a: steps 0-2 and 6-8. Step 6 began at step 5's end, in the pause: no step.
  const auto steps = select(rows, kAuto, "step");
  EXPECT_EQ(steps.size(), 5u) << r.output;
  EXPECT_EQ(select(rows, kAuto, "wait").size(), 6u);
  EXPECT_EQ(select(rows, kAuto, "fetch").size(), 6u);
  const std::int64_t main_pid = t.processes().front().pid;
  for (const auto& row : rows) EXPECT_EQ(row.pid, main_pid) << row.name;
  const TraceSummary summary = summarize(t);
  EXPECT_EQ(summary.recording_pauses, 2u);
  std::filesystem::remove_all(dir);
}

TEST(PytorchLayer, AProgramsOwnAnnotationsReplaceTheAutomaticOnesOfTheirKind) {
  REQUIRE_TORCH();
  const auto dir = scratch_dir("pytorch-layer-hand");
  const auto out = dir / "hand.db";
  RunResult r = run(traced(out, {torch_python(), script("samples/pytorch/train.py"), "--device", "cpu", "--steps", "4",
                                 "--workers", "2", "--batch-size", "8", "--annotate"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Trace t = read_trace(out);
  const auto rows = annotation_rows(t);
  EXPECT_EQ(select(rows, "dreamscope", "step").size(), 4u);
  EXPECT_EQ(select(rows, "dreamscope", "fetch").size(), 4u);
  for (const char* category : {"step", "wait", "fetch", "prep", "cpu"}) {
    EXPECT_TRUE(select(rows, kAuto, category).empty()) << category;
  }
  EXPECT_EQ(count_flows(t, "batch"), 4u);
  // What the program does not annotate itself is still recorded.
  EXPECT_EQ(select(rows, kAuto, "operation", "optimizer.step").size(), 4u);
  std::filesystem::remove_all(dir);
}

TEST(PytorchLayer, TheSampleTrainsOnTheCpuAndRefusesWhatNeedsCuda) {
  REQUIRE_TORCH();
  RunResult r = run({torch_python(), script("samples/pytorch/train.py"), "--device", "cpu", "--steps", "3",
                     "--workers", "0", "--batch-size", "4"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("median_step_ns"), std::string::npos) << r.output;
  r = run({torch_python(), script("samples/pytorch/train.py"), "--device", "cpu", "--cuda-graphs"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--cuda-graphs needs a CUDA device"), std::string::npos) << r.output;
}

} // namespace
} // namespace dreamscope::test
