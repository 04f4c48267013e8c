// nvtxNameOsThread: a thread named after its track was written and a thread named by
// another before it recorded both end up with the names the program gave them.
#include "run_helpers.h"

#include <map>
#include <vector>

namespace dreamscope::test {
namespace {

TEST(NvtxThreadNames, TracksCarryTheNamesTheProgramGave) {
  const auto dir = scratch_dir("nvtx-names");
  const auto out = dir / "names.db";
  RunResult r = run(traced(out, {program("nvtx_names")}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Trace t = read_trace(out);
  EXPECT_TRUE(t.complete());
  std::map<std::string, std::string> thread_of; // range name -> its track's name
  const auto& a = t.annotations();
  for (std::size_t i = 0; i < a.size(); ++i) thread_of[std::string(t.str(a.name[i]))] = t.tracks()[a.track[i]].name;
  EXPECT_EQ(thread_of["setup"], "trainer") << "renamed after its first range was written";
  EXPECT_EQ(thread_of["step"], "trainer");
  EXPECT_EQ(thread_of["load"], "loader \u00e9 0") << "named by another thread, in UTF-16/32";
  std::filesystem::remove_all(dir);
}

// NVTX keeps one stack of pushed ranges per domain: a pop ends the innermost range of its own
// domain. PyTorch's autograd thread pushes dreamscope's `backward` inside an operator range
// that it pops first; a single stack per thread ended `backward` there, 90 us into a 1.4 ms
// pass, on the first H200 traced with --python-ops (tests/data/gpu/pytorch_auto.db).
TEST(NvtxDomains, APopEndsTheInnermostRangeOfItsOwnDomain) {
  const auto dir = scratch_dir("nvtx-domains");
  const auto out = dir / "domains.db";
  RunResult r = run(traced(out, {program("nvtx_domains")}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Trace t = read_trace(out);
  std::map<std::string, std::vector<std::pair<TimeNs, TimeNs>>> ranges;
  const auto& a = t.annotations();
  for (std::size_t i = 0; i < a.size(); ++i) ranges[std::string(t.str(a.name[i]))].emplace_back(a.start[i], a.end[i]);
  ASSERT_EQ(ranges["evaluate_function"].size(), 1u);
  ASSERT_EQ(ranges["backward"].size(), 1u);
  ASSERT_EQ(ranges["op"].size(), 3u);
  ASSERT_EQ(ranges["after"].size(), 1u);
  const auto [eval_start, eval_end] = ranges["evaluate_function"][0];
  const auto [bw_start, bw_end] = ranges["backward"][0];
  EXPECT_LT(eval_start, bw_start);
  EXPECT_LT(eval_end, bw_end) << "the default domain's pop ended evaluate_function, not backward";
  for (const auto& [start, end] : ranges["op"]) {
    EXPECT_LT(bw_start, start);
    EXPECT_LT(end, bw_end) << "every op is inside backward";
  }
  EXPECT_LT(bw_end, ranges["after"][0].first);
  std::filesystem::remove_all(dir);
}

} // namespace
} // namespace dreamscope::test
