// The trace diff: HTA's TraceDiff test (tests/test_trace_diff.py) on HTA's own trace pair,
// and hand-built pairs whose changes are known: a kernel that doubles, an operation that
// vanishes and one that appears; a trace against itself; runs of different length; a job
// with one rank slowed.
#include "../common/required_data.h"
#include "analysis_traces.h"
#include "diff_test_traces.h"

#include <dreamscope/storage/importers.h>
#include <dreamscope/analyzers/trace_diff.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <stdexcept>

namespace dreamscope::analyzers {
namespace {

namespace fs = std::filesystem;
using test::TraceMaker;
using test::job;
using test::training_loop;
using test::us;

fs::path hta_data(const std::string& rel) {
  return fs::path(DREAMSCOPE_SHARED_DATA_DIR) / "kineto-hta" / "trace_compare" / rel;
}

const OperationDiff* find(const TraceDiff& d, DiffSubject subject, const std::string& name) {
  for (const auto& o : d.operations) {
    if (o.subject == subject && o.name == name) return &o;
  }
  return nullptr;
}

// HTA's test_trace_diff.py compares rank 1, iteration 1010 of base/ and test/.
class HtaTraceCompare : public ::testing::Test {
 protected:
  void SetUp() override {
    DREAMSCOPE_REQUIRE_DATA(hta_data("base/base.json.gz"));
    base_ = load_trace(hta_data("base/base.json.gz"));
    test_ = load_trace(hta_data("test/test.json.gz"));
    DiffOptions o;
    o.steps = {1010};
    diff_ = diff_traces(*base_, *test_, o, "Base Trace", "Test Trace");
  }
  std::optional<Trace> base_, test_;
  TraceDiff diff_;
};

// HTA's test_get_ops_summary: counts and total durations (µs) of the base trace's CPU events in
// iteration 1010, whatever thread they ran on.
TEST_F(HtaTraceCompare, BaseOpsSummaryIsHtas) {
  ASSERT_EQ(diff_.steps.size(), 1u);
  EXPECT_EQ(diff_.steps[0].number, 1010);
  EXPECT_EQ(diff_.steps[0].label_a, "ProfilerStep#1010");
  EXPECT_EQ(diff_.steps[0].a, us(122149)); // HTA's ProfilerStep#1010 total_duration
  EXPECT_EQ(diff_.steps[0].b, us(122149));
  const std::map<std::pair<DiffSubject, std::string>, std::pair<std::int64_t, TimeNs>> expected{
      {{DiffSubject::Operation, "aten::as_strided"}, {1, 0}},
      {{DiffSubject::Operation, "aten::empty"}, {1, 0}},
      {{DiffSubject::CudaApi, "cudaEventQuery"}, {1, us(4)}},
      {{DiffSubject::CudaApi, "cudaLaunchKernel"}, {1, us(4)}},
      {{DiffSubject::Operation, "nccl:all_reduce"}, {1, us(67)}},
  };
  for (const auto& [key, counts] : expected) {
    const OperationDiff* o = find(diff_, key.first, key.second);
    ASSERT_NE(o, nullptr) << key.second;
    EXPECT_EQ(o->count_a, counts.first) << key.second;
    EXPECT_EQ(o->total_a, counts.second) << key.second;
  }
  // HTA's test_extract_ops: 6 CPU events (the step, and the five above) and 1 GPU event.
  std::int64_t cpu_events = 0, gpu_events = 0;
  for (const auto& o : diff_.operations) {
    if (o.name.starts_with("(")) continue; // the step's own time: HTA counts the step as one event
    (o.subject == DiffSubject::GpuWork ? gpu_events : cpu_events) += o.count_a;
  }
  EXPECT_EQ(cpu_events + 1, 6);
  EXPECT_EQ(gpu_events, 1);
}

// HTA's test_compare_trace and test_ops_diff: count changes '=' 5, '+' 3, '-' 1 on the CPU
// (the step is HTA's fifth '='), '-' 1 on the GPU; which names were added, deleted, unchanged.
TEST_F(HtaTraceCompare, CountChangesAndOpsDiffAreHtas) {
  std::map<char, int> cpu, gpu;
  std::vector<std::string> added, deleted, unchanged;
  for (const auto& o : diff_.operations) {
    if (o.name.starts_with("(")) continue;
    (o.subject == DiffSubject::GpuWork ? gpu : cpu)[o.count_change]++;
    if (o.subject == DiffSubject::GpuWork) continue;
    if (o.change == DiffChange::Appeared) added.push_back(o.name);
    if (o.change == DiffChange::Vanished) deleted.push_back(o.name);
    if (o.count_change == '=') unchanged.push_back(o.name);
  }
  cpu['=']++; // ProfilerStep#1010, matched in the steps table
  EXPECT_EQ(cpu, (std::map<char, int>{{'=', 5}, {'+', 3}, {'-', 1}}));
  EXPECT_EQ(gpu, (std::map<char, int>{{'-', 1}}));
  std::sort(added.begin(), added.end());
  std::sort(unchanged.begin(), unchanged.end());
  EXPECT_EQ(added, (std::vector<std::string>{"AddmmBackward0", "All2All_Pooled_Req", "CatBackward0"}));
  EXPECT_EQ(deleted, (std::vector<std::string>{"nccl:all_reduce"}));
  EXPECT_EQ(unchanged, (std::vector<std::string>{"aten::as_strided", "aten::empty", "cudaEventQuery", "cudaLaunchKernel"}));
}

// HTA's diff_duration (test - control total duration) of the names that changed.
TEST_F(HtaTraceCompare, DurationDifferencesAreHtas) {
  const std::map<std::string, TimeNs> diff_duration{
      {"All2All_Pooled_Req", us(311)}, {"AddmmBackward0", us(207)}, {"CatBackward0", us(11)},
      {"nccl:all_reduce", -us(67)},    {"aten::empty", 0},          {"aten::as_strided", 0}};
  for (const auto& [name, d] : diff_duration) {
    const OperationDiff* o = find(diff_, DiffSubject::Operation, name);
    ASSERT_NE(o, nullptr) << name;
    EXPECT_EQ(o->total_b - o->total_a, d) << name;
  }
  const OperationDiff* kernel = nullptr;
  for (const auto& o : diff_.operations) {
    if (o.subject == DiffSubject::GpuWork) kernel = &o;
  }
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(kernel->change, DiffChange::Vanished);
  EXPECT_EQ(kernel->total_a, us(4));
  EXPECT_TRUE(find(diff_, DiffSubject::Operation, "nccl:all_reduce")->communication);
  // The largest change on the step first: the 311 µs operation that appeared.
  EXPECT_EQ(diff_.operations.front().name, "All2All_Pooled_Req");
  // The step's own time shrank by as much (the new operation took it), 0.25 % of the step:
  // within the threshold, so no gate counts it as an improvement.
  const OperationDiff* own = find(diff_, DiffSubject::Operation, "(in the step, outside any operation)");
  ASSERT_NE(own, nullptr);
  EXPECT_EQ(own->self_b - own->self_a, -us(311));
  EXPECT_EQ(own->change, DiffChange::Unchanged);
  const auto gates = diff_gate_values(diff_);
  EXPECT_DOUBLE_EQ(gates.at("top_regression_ms"), 0.311);
  EXPECT_DOUBLE_EQ(gates.at("top_improvement_ms"), 0.067);
}

TEST_F(HtaTraceCompare, StepOutsideEitherTraceIsAnErrorNamingIt) {
  DiffOptions o;
  o.steps = {7};
  try {
    diff_traces(*base_, *test_, o, "base.json.gz", "test.json.gz");
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "base.json.gz: no step numbered 7 (its steps: 1009 to 1010)");
  }
}

TEST(TraceDiff, NamesTheDoubledKernelTheVanishedAndTheAppearedOperationInOrderOfImpact) {
  const Trace a = training_loop(false), b = training_loop(true);
  const TraceDiff d = diff_traces(a, b);
  EXPECT_TRUE(d.matched_by_number);
  ASSERT_EQ(d.steps.size(), 3u);
  for (const auto& s : d.steps) {
    EXPECT_EQ(s.a, us(1000));
    EXPECT_EQ(s.b, us(900));
  }
  EXPECT_EQ(d.step_median_a, us(1000));
  EXPECT_EQ(d.step_median_b, us(900));
  ASSERT_GE(d.operations.size(), 3u);
  EXPECT_EQ(d.operations[0].name, "gemm");
  EXPECT_EQ(d.operations[0].subject, DiffSubject::GpuWork);
  EXPECT_EQ(d.operations[0].change, DiffChange::Slower);
  EXPECT_DOUBLE_EQ(d.operations[0].impact(), static_cast<double>(us(400)));
  EXPECT_EQ(d.operations[1].name, "load");
  EXPECT_EQ(d.operations[1].change, DiffChange::Vanished);
  EXPECT_DOUBLE_EQ(d.operations[1].impact(), -static_cast<double>(us(300)));
  EXPECT_EQ(d.operations[2].name, "augment");
  EXPECT_EQ(d.operations[2].change, DiffChange::Appeared);
  EXPECT_DOUBLE_EQ(d.operations[2].impact(), static_cast<double>(us(200)));
  for (std::size_t i = 3; i < d.operations.size(); ++i) {
    EXPECT_EQ(d.operations[i].change, DiffChange::Unchanged) << d.operations[i].name;
  }
  // forward's self time is its 300 µs less the 10 µs launch inside it.
  const OperationDiff* forward = find(d, DiffSubject::Operation, "forward");
  ASSERT_NE(forward, nullptr);
  EXPECT_EQ(forward->total_a, 3 * us(300));
  EXPECT_EQ(forward->self_a, 3 * us(290));

  const auto gates = diff_gate_values(d);
  EXPECT_DOUBLE_EQ(gates.at("step_change_pct"), -10.0);
  EXPECT_DOUBLE_EQ(gates.at("top_regression_ms"), 0.4);
  EXPECT_DOUBLE_EQ(gates.at("top_improvement_ms"), 0.3);
  EXPECT_DOUBLE_EQ(gates.at("gpu_change_pct"), 100.0);
  EXPECT_EQ(gates.at("appeared"), 1);
  EXPECT_EQ(gates.at("vanished"), 1);
  EXPECT_EQ(gates.at("slower"), 1);
}

TEST(TraceDiff, ATraceAgainstItselfShowsNoChange) {
  const Trace a = training_loop(false);
  const TraceDiff d = diff_traces(a, a);
  ASSERT_FALSE(d.operations.empty());
  for (const auto& o : d.operations) {
    EXPECT_EQ(o.change, DiffChange::Unchanged) << o.name;
    EXPECT_EQ(o.count_change, '=') << o.name;
    EXPECT_EQ(o.impact(), 0) << o.name;
  }
  for (const auto& [name, value] : diff_gate_values(d)) {
    if (name.ends_with("_a") || name.ends_with("_b")) continue;
    EXPECT_EQ(value, 0) << name;
  }
}

TEST(TraceDiff, RunsOfDifferentLengthCompareTimePerStep) {
  const Trace a = training_loop(false, 2), b = training_loop(false, 5);
  const TraceDiff d = diff_traces(a, b);
  EXPECT_EQ(d.steps_a, 2u);
  EXPECT_EQ(d.steps_b, 5u);
  for (const auto& o : d.operations) {
    EXPECT_EQ(o.change, DiffChange::Unchanged) << o.name;
    EXPECT_EQ(o.count_change, '=') << o.name;
  }
  // Steps 3 to 5 are only in B.
  ASSERT_EQ(d.steps.size(), 5u);
  EXPECT_TRUE(d.steps[1].matched());
  EXPECT_FALSE(d.steps[2].matched());
  EXPECT_EQ(d.steps[2].a, kNoValue);
  EXPECT_EQ(d.steps[4].label_b, "step 5");
}

TEST(TraceDiff, StepsWhoseNumbersDoNotOverlapMatchByPosition) {
  const Trace a = training_loop(false, 3, 1), b = training_loop(true, 3, 101);
  const TraceDiff d = diff_traces(a, b);
  EXPECT_FALSE(d.matched_by_number);
  ASSERT_EQ(d.steps.size(), 3u);
  EXPECT_EQ(d.steps[0].label_a, "step 1");
  EXPECT_EQ(d.steps[0].label_b, "step 101");
  EXPECT_EQ(d.steps[0].number, kNoValue);
  EXPECT_EQ(d.operations.front().name, "gemm");
}

TEST(TraceDiff, TracesWithoutStepsCompareWhole) {
  TraceMaker ma, mb;
  ma.annotation("work", us(0), us(100));
  mb.annotation("work", us(0), us(150));
  const Trace a = std::move(ma).build(), b = std::move(mb).build();
  const TraceDiff d = diff_traces(a, b);
  EXPECT_TRUE(d.whole_trace);
  ASSERT_EQ(d.steps.size(), 1u);
  EXPECT_EQ(d.steps[0].label_a, "(whole trace)");
  EXPECT_EQ(d.step_median_b, us(150));
  EXPECT_EQ(d.operations.front().change, DiffChange::Slower);
  EXPECT_DOUBLE_EQ(diff_gate_values(d).at("step_change_pct"), 50.0);
}

TEST(TraceDiff, ThresholdDecidesWhatIsUnchanged) {
  TraceMaker ma, mb;
  ma.annotation("work", us(0), us(100));
  mb.annotation("work", us(0), us(104));
  const Trace a = std::move(ma).build(), b = std::move(mb).build();
  EXPECT_EQ(diff_traces(a, b).operations.front().change, DiffChange::Unchanged); // 4 % <= 5 %
  DiffOptions o;
  o.threshold_pct = 3;
  EXPECT_EQ(diff_traces(a, b, o).operations.front().change, DiffChange::Slower);
}

TEST(TraceDiff, NamesTheSlowedRankAndItsCause) {
  const Trace a = job(false), b = job(true);
  const TraceDiff d = diff_traces(a, b);
  ASSERT_EQ(d.ranks.size(), 4u);
  ASSERT_TRUE(d.most_changed_rank.has_value());
  const RankDiff& slowed = d.ranks[*d.most_changed_rank];
  EXPECT_EQ(slowed.rank_a, 2);
  ASSERT_TRUE(slowed.cause.has_value());
  EXPECT_EQ(slowed.cause->name, "forward");
  EXPECT_DOUBLE_EQ(slowed.cause->impact(), static_cast<double>(us(300)));
  for (const RankDiff& r : d.ranks) {
    EXPECT_EQ(r.step_median_a, us(1000));
    EXPECT_EQ(r.step_median_b, us(1300)); // every rank's step grew: the others waited
    if (r.rank_a == 2) continue;
    EXPECT_FALSE(r.cause.has_value()) << "rank " << r.rank_a;
    EXPECT_DOUBLE_EQ(r.communication_change, static_cast<double>(us(300))) << "rank " << r.rank_a;
  }
  const auto gates = diff_gate_values(d);
  EXPECT_DOUBLE_EQ(gates.at("rank_own_growth_ms"), 0.3);
  EXPECT_DOUBLE_EQ(gates.at("worst_rank_change_pct"), 30.0);
  const std::string text = render_diff_text(d);
  EXPECT_NE(text.find("rank that changed most: rank 2: operation 'forward' +300.000 us per step"), std::string::npos)
      << text;
}

TEST(TraceDiff, JobsOfDifferentSizeSayWhyRanksAreNotCompared) {
  const Trace a = job(false);
  const Trace b = training_loop(false);
  const TraceDiff d = diff_traces(a, b, {}, "job.db", "one.db");
  EXPECT_TRUE(d.ranks.empty());
  EXPECT_EQ(d.rank_note, "ranks not compared: job.db has 4, one.db 0");
}

TEST(TraceDiffRender, EveryFormatSaysTheSameChanges) {
  const TraceDiff d = diff_traces(training_loop(false), training_loop(true), {}, "a.db", "b&<b>.db");
  const std::string text = render_diff_text(d), md = render_diff_markdown(d), html = render_diff_html(d);
  for (const std::string* s : {&text, &md, &html}) {
    EXPECT_NE(s->find("gemm"), std::string::npos);
    EXPECT_NE(s->find("vanished"), std::string::npos);
    EXPECT_NE(s->find("appeared"), std::string::npos);
  }
  EXPECT_NE(md.find("| slower | gpu | gemm | +400.000 us | +100.0 % |"), std::string::npos) << md;
  EXPECT_NE(html.find("b&amp;&lt;b&gt;.db"), std::string::npos);
  EXPECT_EQ(html.find("b&<b>"), std::string::npos);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  const auto j = nlohmann::json::parse(render_diff_json(d));
  EXPECT_EQ(j["schema"], "dreamscope-diff/1");
  EXPECT_EQ(j["matched_by"], "number");
  EXPECT_EQ(j["operations"][0]["name"], "gemm");
  EXPECT_EQ(j["operations"][0]["change"], "slower");
  EXPECT_EQ(j["operations"][1]["change"], "vanished");
  EXPECT_TRUE(j["operations"][2]["change_pct"].is_null()); // appeared: from nothing
  EXPECT_EQ(j["steps"].size(), 3u);
  EXPECT_DOUBLE_EQ(j["gates"]["step_change_pct"].get<double>(), -10.0);
}

} // namespace
} // namespace dreamscope::analyzers
