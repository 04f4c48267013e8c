#include "test_traces.h"

#include <dreamscope/storage/trace.h>
#include <dreamscope/storage/trace_summary.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <tuple>

namespace dreamscope {
namespace {

struct Built {
  Trace trace;
  TrackId thread;
};

// Ranges given out of order, with one that overlaps its neighbour without nesting.
Built nested() {
  TraceBuilder b;
  auto p = b.add_process(ProcessInfo{.pid = 1, .name = "x"});
  TrackId t = b.thread_track(p, 1);
  auto add = [&](const char* name, TimeNs s, TimeNs e) {
    b.add(AnnotationRecord{.track = t, .start = s, .end = e, .name = b.intern(name), .domain = 0, .category = 0,
                           .payload = kNoValue, .external_id = kNoValue});
  };
  add("c", 20, 30);
  add("a", 0, 100);
  add("b", 10, 50);
  add("d", 40, 60); // starts inside b, ends after it: a sibling of b under a
  add("e", 200, 300);
  add("same-start-short", 200, 210);
  return {std::move(b).build(), t};
}

TEST(TraceModel, SortsByTrackStartAndLongerFirst) {
  auto [t, thread] = nested();
  const auto& a = t.annotations();
  std::vector<std::string> order;
  for (std::size_t i = 0; i < a.size(); ++i) order.emplace_back(t.str(a.name[i]));
  EXPECT_EQ(order, (std::vector<std::string>{"a", "b", "c", "d", "e", "same-start-short"}));
}

TEST(TraceModel, DerivesNesting) {
  auto [t, thread] = nested();
  const auto& a = t.annotations();
  EXPECT_EQ(a.parent[0], kNoIndex);
  EXPECT_EQ(a.parent[1], 0u); // b in a
  EXPECT_EQ(a.parent[2], 1u); // c in b
  EXPECT_EQ(a.parent[3], 0u); // d overlaps b, so it hangs under a
  EXPECT_EQ(a.parent[4], kNoIndex);
  EXPECT_EQ(a.parent[5], 4u);
  EXPECT_EQ(a.depth[2], 2);
  EXPECT_EQ(t.annotation_children(AnnotationIndex{0}), (std::vector{AnnotationIndex{1}, AnnotationIndex{3}}));
  EXPECT_EQ(t.innermost_annotation_at(thread, 25), 2u);
  EXPECT_EQ(t.innermost_annotation_at(thread, 55), 3u);
  EXPECT_EQ(t.innermost_annotation_at(thread, 150), std::nullopt);
}

TEST(TraceModel, TimeWindowBinarySearch) {
  auto [t, thread] = nested();
  // Window [45, 46): a (0-100), b (10-50) and d (40-60) overlap it; c ends before.
  EventRange r = t.annotations_in(thread, 45, 46);
  std::vector<std::string> hits;
  for (auto i = r.begin; i < r.end; ++i) {
    if (t.annotations().end[i] > 45) hits.emplace_back(t.str(t.annotations().name[i]));
  }
  EXPECT_EQ(hits, (std::vector<std::string>{"a", "b", "d"}));
  EXPECT_TRUE(t.annotations_in(thread, 400, 500).empty());
  EXPECT_EQ(t.annotations_on(thread).size(), 6u);
}

TEST(TraceModel, CorrelationLookups) {
  Trace t = test::make_full_trace();
  auto ops = t.gpu_ops_with_correlation(1);
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(t.str(t.gpu_ops().name[ops[0]]), "ampere_sgemm_128x64_tn");
  auto api = t.cuda_api_with_correlation(2);
  ASSERT_TRUE(api);
  EXPECT_EQ(t.str(t.cuda_api().name[*api]), "cudaMemcpyAsync");
  EXPECT_FALSE(t.cuda_api_with_correlation(999));
  EXPECT_EQ(t.find_string("Memset"), t.gpu_ops().name[t.gpu_ops_with_correlation(4)[0]]);
  EXPECT_FALSE(t.find_string("not there"));
}

// build() restores (track, start) order; windows of one thread that start together keep the
// order they were added in.
TEST(TraceModel, SortsThreadLoadsByTrackThenStart) {
  TraceBuilder b;
  const auto p = b.add_process(ProcessInfo{.pid = 1, .name = "x"});
  const TrackId t0 = b.thread_track(p, 1), t1 = b.thread_track(p, 2);
  b.add(ThreadLoadRecord{.track = t1, .start = 0, .end = 10, .events = 1});
  b.add(ThreadLoadRecord{.track = t0, .start = 20, .end = 30, .events = 2});
  b.add(ThreadLoadRecord{.track = t0, .start = 10, .end = 20, .events = 3});
  b.add(ThreadLoadRecord{.track = t0, .start = 20, .end = 25, .events = 4});
  const Trace t = std::move(b).build();
  std::vector<std::int64_t> order;
  for (const auto& l : t.thread_loads()) order.push_back(l.events);
  EXPECT_EQ(order, (std::vector<std::int64_t>{3, 2, 4, 1}));
}

// build() orders memory events by time; events of one time keep the order they were added
// in, whatever their thread: the profiler's order, which pairs an allocation with its release.
TEST(TraceModel, SortsMemoryEventsByTimeKeepingTheOrderAtOneTime) {
  TraceBuilder b;
  const auto p = b.add_process(ProcessInfo{.pid = 1, .name = "x"});
  const TrackId t0 = b.thread_track(p, 1), t1 = b.thread_track(p, 2);
  b.add(MemoryEventRecord{.track = t1, .time = 30, .bytes = 1});
  b.add(MemoryEventRecord{.track = t0, .time = 20, .bytes = 2});
  b.add(MemoryEventRecord{.track = t1, .time = 20, .bytes = 3});
  b.add(MemoryEventRecord{.track = t0, .time = 20, .bytes = -2});
  b.add(MemoryEventRecord{.track = t0, .time = 10, .bytes = 4});
  const Trace t = std::move(b).build();
  std::vector<std::int64_t> order;
  for (const auto& m : t.memory_events()) order.push_back(m.bytes);
  EXPECT_EQ(order, (std::vector<std::int64_t>{4, 2, 3, -2, 1}));
  // They are not events of the timeline: the span and the event count leave them out.
  EXPECT_EQ(t.event_count(), 0u);
  EXPECT_GE(t.memory_bytes(), 5 * sizeof(MemoryEventRecord));
}

// Rows added a track at a time (a few ascending runs, the reader's and most importers' case)
// or in no order at all come out as a full stable sort would put them: by track, start and
// longer first, rows equal in all three in the order they were added. The correlation index
// keeps rows of one correlation id in row order too.
TEST(TraceModel, SortsRowsAddedInRunsOrAtRandomAsAStableSortWould) {
  struct Row {
    TrackId track;
    TimeNs start, end;
    std::int64_t tag;
  };
  auto check = [](const char* shape, std::vector<Row> rows) {
    SCOPED_TRACE(shape);
    TraceBuilder b;
    const auto d = b.add_device(DeviceInfo{.ordinal = 0, .name = "gpu"});
    for (int s = 0; s < 4; ++s) b.stream_track(d, s);
    const StringId name = b.intern("k");
    for (const Row& r : rows) {
      b.add(GpuOpRecord{.track = r.track, .start = r.start, .end = r.end, .name = name, .correlation = r.tag / 2});
    }
    const Trace t = std::move(b).build();
    std::stable_sort(rows.begin(), rows.end(), [](const Row& x, const Row& y) {
      return std::tie(x.track, x.start, y.end) < std::tie(y.track, y.start, x.end);
    });
    const auto& ops = t.gpu_ops();
    ASSERT_EQ(ops.size(), rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      ASSERT_EQ(ops.track[i], rows[i].track) << "row " << i;
      ASSERT_EQ(ops.start[i], rows[i].start) << "row " << i;
      ASSERT_EQ(ops.end[i], rows[i].end) << "row " << i;
      ASSERT_EQ(ops.correlation[i], rows[i].tag / 2) << "row " << i;
    }
    // Each correlation id is on two rows (tags 2k and 2k+1): both found, in row order.
    for (std::int64_t c = 0; c < static_cast<std::int64_t>(rows.size() / 2); c += 97) {
      const std::vector<GpuOpIndex> found = t.gpu_ops_with_correlation(c);
      ASSERT_EQ(found.size(), 2u) << "correlation " << c;
      EXPECT_LT(found[0], found[1]);
      for (GpuOpIndex i : found) EXPECT_EQ(ops.correlation[i], c);
    }
  };
  std::mt19937_64 rng(11);
  std::vector<Row> runs;
  // Four tracks, each in order, added one after another from the last: four runs, with rows
  // that tie on start (the longer first) and on start and end inside them.
  for (TrackId tr{4}; tr-- > 0;) {
    for (TimeNs i = 0; i < 3000; ++i) {
      const TimeNs start = i / 3 * 100;
      runs.push_back({tr, start, start + (i % 3 == 2 ? 10 : 11), static_cast<std::int64_t>(runs.size())});
    }
  }
  // And track 1's rows again: a fifth run whose every row ties with one of the third's.
  for (std::size_t i = 6000; i < 9000; ++i) runs.push_back({runs[i].track, runs[i].start, runs[i].end, static_cast<std::int64_t>(runs.size())});
  check("runs", runs);
  std::vector<Row> shuffled = runs;
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  for (std::size_t i = 0; i < shuffled.size(); ++i) shuffled[i].tag = static_cast<std::int64_t>(i);
  check("random", shuffled);
  std::vector<Row> one_out_of_place = runs;
  std::sort(one_out_of_place.begin(), one_out_of_place.end(), [](const Row& x, const Row& y) {
    return std::tie(x.track, x.start, y.end, x.tag) < std::tie(y.track, y.start, x.end, y.tag);
  });
  std::rotate(one_out_of_place.begin(), one_out_of_place.end() - 1, one_out_of_place.end());
  for (std::size_t i = 0; i < one_out_of_place.size(); ++i) one_out_of_place[i].tag = static_cast<std::int64_t>(i);
  check("one row out of place", one_out_of_place);
}

TEST(TraceModel, RejectsRowsOnUnknownTracks) {
  TraceBuilder b;
  b.add(AnnotationRecord{.track = TrackId{3}, .start = 0, .end = 1});
  EXPECT_THROW(std::move(b).build(), TraceError);
}

TEST(TraceSummary, CountsKernelsAndThreads) {
  Trace t = test::make_full_trace();
  TraceSummary s = summarize(t);
  EXPECT_EQ(s.counts.runtime_api, 2u);
  EXPECT_EQ(s.counts.driver_api, 1u);
  EXPECT_EQ(s.counts.kernels, 1u);
  EXPECT_EQ(s.counts.memcpys, 1u);
  EXPECT_EQ(s.counts.memsets, 1u);
  EXPECT_EQ(s.counts.syncs, 1u);
  EXPECT_EQ(s.counts.annotations, 4u);
  EXPECT_EQ(s.counts.overheads, 1u);
  EXPECT_EQ(s.counts.thread_loads, 3u);
  EXPECT_EQ(s.counts.memory_events, 5u);
  EXPECT_EQ(s.counts.total(), 2u + 1u + 1u + 1u + 1u + 1u + 4u + 1u + 1u + 3u + 5u);
  ASSERT_EQ(s.processes.size(), 2u);
  EXPECT_EQ(s.processes[0].threads.size(), 2u);
  EXPECT_EQ(s.processes[1].threads.size(), 1u);
  ASSERT_EQ(s.top_kernels.size(), 1u);
  EXPECT_EQ(s.top_kernels[0].name, "ampere_sgemm_128x64_tn");
  EXPECT_EQ(s.top_kernels[0].total, 2500);
  EXPECT_EQ(s.streams.size(), 2u);
  EXPECT_EQ(s.dropped_events, 3);
}

} // namespace
} // namespace dreamscope

namespace dreamscope {
namespace {

// The innermost range open at t, by brute force: the deepest of those containing t.
std::optional<AnnotationIndex> innermost_by_scan(const Trace& t, TrackId track, TimeNs time) {
  const auto& a = t.annotations();
  std::optional<AnnotationIndex> best;
  const EventRange r = t.annotations_on(track);
  for (auto i = r.begin; i < r.end; ++i) {
    if (a.start[i] <= time && time < a.end[i] && (!best || a.depth[i] >= a.depth[*best])) best = i;
  }
  return best;
}

TEST(TraceModel, InnermostAnnotationMatchesAScanOnDeepNestingAndLongRanges) {
  // A run-long range, steps, and call stacks up to 40 deep of random widths, with gaps and
  // zero-length ranges: what a Python profiler's with_stack trace looks like.
  TraceBuilder b;
  const auto p = b.add_process(ProcessInfo{.pid = 1});
  const TrackId thread = b.thread_track(p, 1);
  const StringId name = b.intern("frame");
  std::uint64_t rng = 12345;
  auto next = [&](std::uint64_t bound) {
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (rng >> 33) % bound;
  };
  b.add(AnnotationRecord{.track = thread, .start = 0, .end = 1'000'000, .name = name});
  // Children inside [lo, hi) at depth d, recursively.
  std::function<void(TimeNs, TimeNs, int)> fill = [&](TimeNs lo, TimeNs hi, int d) {
    TimeNs at = lo;
    while (d < 40 && hi - at > 4) {
      const TimeNs gap = static_cast<TimeNs>(next(4));
      const TimeNs width = static_cast<TimeNs>(next(static_cast<std::uint64_t>(hi - at)));
      const TimeNs s = at + gap, e = std::min(hi, s + width);
      if (s >= hi) break;
      b.add(AnnotationRecord{.track = thread, .start = s, .end = e, .name = name});
      if (next(3) != 0) fill(s, e, d + 1);
      at = e;
    }
  };
  for (TimeNs step = 0; step < 1'000'000; step += 100'000) {
    b.add(AnnotationRecord{.track = thread, .start = step, .end = step + 100'000, .name = name});
    fill(step, step + 100'000, 2);
  }
  const Trace t = std::move(b).build();
  ASSERT_GT(t.annotations().size(), 1000u);
  int max_depth = 0;
  for (auto d : t.annotations().depth) max_depth = std::max<int>(max_depth, d);
  EXPECT_GE(max_depth, 15);
  for (TimeNs time = -5; time < 1'000'010; time += 13) {
    ASSERT_EQ(t.innermost_annotation_at(thread, time), innermost_by_scan(t, thread, time)) << "at " << time;
  }
}

} // namespace
} // namespace dreamscope
