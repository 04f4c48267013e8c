// Hand-built traces of a distributed job: N rank processes, each with a training thread whose
// steps are compute then an all-reduce (a dreamscope collective range) that every rank leaves
// together, `transfer` after the last rank arrived. Exact timelines for the multi-rank tests.
#pragma once

#include <dreamscope/storage/steps.h>
#include <dreamscope/storage/trace.h>

#include <algorithm>
#include <string>
#include <vector>

namespace dreamscope::test {

struct RankJob {
  // compute[r][s]: rank r's compute in step s (ns); every rank has the same number of steps.
  std::vector<std::vector<TimeNs>> compute;
  TimeNs transfer = 100;
  TimeNs gap = 10; // between a step's end and the next step's start
  std::int64_t bytes = 4096;

  // The measured end of step s (the same on every rank).
  TimeNs step_end(std::size_t s) const { return step_start(s) + slowest(s) + transfer; }
  TimeNs step_start(std::size_t s) const {
    TimeNs t = 0;
    for (std::size_t k = 0; k < s; ++k) t += slowest(k) + transfer + gap;
    return t + gap;
  }
  TimeNs slowest(std::size_t s) const {
    TimeNs m = 0;
    for (const auto& r : compute) m = std::max(m, r[s]);
    return m;
  }

  Trace build() const {
    TraceBuilder b;
    const StringId ds = b.intern("dreamscope"), step = b.intern(annotation_category::kStep),
                   op = b.intern(annotation_category::kOperation), coll = b.intern(annotation_category::kCollective),
                   forward = b.intern("forward"), all_reduce = b.intern("all_reduce");
    const auto world = static_cast<std::int64_t>(compute.size());
    for (std::int64_t r = 0; r < world; ++r) {
      const auto p = b.add_process({.pid = 100 + r, .name = "train", .rank = r, .local_rank = r, .world_size = world,
                                    .host = "node"});
      const TrackId t = b.thread_track(p, 100 + r, "main");
      for (std::size_t s = 0; s < compute[static_cast<std::size_t>(r)].size(); ++s) {
        const TimeNs begin = step_start(s), end = step_end(s);
        const TimeNs computed = begin + compute[static_cast<std::size_t>(r)][s];
        const auto n = static_cast<std::int64_t>(s);
        b.add(AnnotationRecord{.track = t, .start = begin, .end = end, .name = step, .domain = ds, .category = step,
                               .payload = n});
        b.add(AnnotationRecord{.track = t, .start = begin, .end = computed, .name = forward, .domain = ds,
                               .category = op});
        b.add(AnnotationRecord{.track = t, .start = computed, .end = end, .name = all_reduce, .domain = ds,
                               .category = coll, .payload = bytes});
      }
    }
    return std::move(b).build();
  }
};

} // namespace dreamscope::test
