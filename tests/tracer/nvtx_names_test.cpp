// nvtxNameOsThread: a thread named after its track was written and a thread named by
// another before it recorded both end up with the names the program gave them.
#include "run_helpers.h"

#include <map>

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

} // namespace
} // namespace dreamscope::test
