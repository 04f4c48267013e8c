// Many threads pushing nested NVTX ranges as fast as they can: every range is either in
// the trace or counted in meta.dropped_events, exactly.
#include "run_helpers.h"

#include <map>

namespace dreamscope::test {
namespace {

struct StressResult {
  std::size_t ranges = 0;
  std::int64_t dropped = 0;
  std::size_t threads = 0;
  bool nesting_ok = true;
  // The tracer's own chunk mappings on the recording threads (overhead rows).
  std::size_t buffer_maps = 0;
  bool buffer_maps_on_recording_threads = true;
  // How often the writer gave way to the job's threads in a drain (meta tracer_writer_yields).
  std::int64_t writer_yields = 0;
};

StressResult stress(int threads, long ranges_per_thread, std::map<std::string, std::string> env,
                    std::vector<std::string> options = {}) {
  const auto dir = scratch_dir("nvtx-stress-" + std::to_string(threads));
  const auto out = dir / "stress.db";
  RunResult r = run(traced(out, {program("nvtx_stress"), std::to_string(threads), std::to_string(ranges_per_thread)},
                           options),
                    env);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  Trace t = read_trace(out);
  EXPECT_TRUE(t.complete());
  StressResult s;
  s.ranges = t.annotations().size();
  s.dropped = t.dropped_events();
  std::map<TrackId, std::size_t> per_track;
  const auto& a = t.annotations();
  for (std::size_t i = 0; i < a.size(); ++i) {
    ++per_track[a.track[i]];
    // An inner range recorded with its outer one sits inside it.
    if (t.str(a.name[i]) == "inner" && a.parent[i] != kNoIndex) {
      s.nesting_ok = s.nesting_ok && t.str(a.name[a.parent[i]]) == "outer";
    }
  }
  s.threads = per_track.size();
  s.writer_yields = std::atoll(t.meta_value("tracer_writer_yields", "0").c_str());
  for (const OverheadRecord& o : t.overheads()) {
    if (t.str(o.kind) != "tracer_buffer_map") continue;
    ++s.buffer_maps;
    s.buffer_maps_on_recording_threads = s.buffer_maps_on_recording_threads && per_track.contains(o.track) &&
                                         o.end >= o.start && o.end - o.start < 1'000'000'000;
  }
  std::filesystem::remove_all(dir);
  return s;
}

TEST(NvtxStress, SixtyFourThreadsNothingLostOrDropsCountedExactly) {
  constexpr int kThreads = 64;
  constexpr long kRanges = 100'000;
  StressResult s = stress(kThreads, kRanges, {});
  EXPECT_EQ(static_cast<std::int64_t>(s.ranges) + s.dropped, kThreads * kRanges)
      << s.ranges << " recorded, " << s.dropped << " dropped";
  EXPECT_EQ(s.threads, static_cast<std::size_t>(kThreads));
  EXPECT_TRUE(s.nesting_ok);
}

TEST(NvtxStress, BuffersGrowSoABurstThatFitsInMemoryLosesNothing) {
  // 1.6 M events in a few milliseconds, far more than one chunk per thread, and far faster
  // than the writer drains: the chains grow and nothing is dropped.
  constexpr int kThreads = 8;
  constexpr long kRanges = 100'000;
  StressResult s = stress(kThreads, kRanges, {});
  EXPECT_EQ(s.dropped, 0);
  EXPECT_EQ(s.ranges, static_cast<std::size_t>(kThreads * kRanges));
  EXPECT_TRUE(s.nesting_ok);
  // Eight threads need 24 chunks at once and the writer keeps two ready: the threads map
  // the others themselves, and the time each mapping took is in the trace, on that thread,
  // for overhead correction to remove.
  EXPECT_GT(s.buffer_maps, 0u);
  EXPECT_TRUE(s.buffer_maps_on_recording_threads);
}

TEST(NvtxStress, TheWriterGivesWayToTheJobEverySliceOfADrainAndLosesNothing) {
  // 1.6 M events: the writer's drains take milliseconds, far past a 1 us slice, so it yields
  // many times, and what it drains is still all there. With the slice off it never yields.
  constexpr int kThreads = 8;
  constexpr long kRanges = 100'000;
  for (const char* slice_us : {"1", "0"}) {
    SCOPED_TRACE(std::string("DREAMSCOPE_WRITER_SLICE_US=") + slice_us);
    StressResult s = stress(kThreads, kRanges, {{"DREAMSCOPE_WRITER_SLICE_US", slice_us}});
    EXPECT_EQ(s.dropped, 0);
    EXPECT_EQ(s.ranges, static_cast<std::size_t>(kThreads * kRanges));
    EXPECT_TRUE(s.nesting_ok);
    if (std::string(slice_us) == "0") {
      EXPECT_EQ(s.writer_yields, 0);
    } else {
      EXPECT_GT(s.writer_yields, 10);
    }
  }
}

TEST(NvtxStress, PastTheMemoryCapWholeRangesAreDroppedAndCounted) {
  // 4 MiB: two 2 MiB chunks for eight threads that each need three; one thread alone fills
  // both in about 3 ms, before the writer (every 10 ms) can recycle one.
  constexpr int kThreads = 8;
  constexpr long kRanges = 100'000;
  StressResult s = stress(kThreads, kRanges, {}, {"--buffer-mb", "4"});
  EXPECT_GT(s.dropped, 0);
  EXPECT_EQ(static_cast<std::int64_t>(s.ranges) + s.dropped, kThreads * kRanges)
      << s.ranges << " recorded, " << s.dropped << " dropped";
  EXPECT_TRUE(s.nesting_ok);
}

} // namespace
} // namespace dreamscope::test
