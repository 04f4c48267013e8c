// The streams a call on a thread may mean (build_state.h's ProcessStreams): those of its own
// process and of devices whose process is unknown, in resource order, and among them the
// first with a stream id; the same as a scan of every resource per call, which they replace.
#include "passes/passes.h"

#include <dreamscope/storage/trace.h>

#include <gtest/gtest.h>

#include <vector>

namespace dreamscope {
namespace {

using graph_build::GraphBuildState;
using graph_build::process_of;

std::vector<ResourceId> scanned_streams(const GraphBuildState& s, ResourceId thread) {
  std::vector<ResourceId> out;
  const ProcessId p = process_of(s.trace, thread);
  for (ResourceId r = 0; r < s.tasks.resource_count(); ++r) {
    if (!s.tasks.is_stream(r)) continue;
    const std::uint32_t sp = process_of(s.trace, r);
    if (sp == p || sp == kNoIndex || p == kNoIndex) out.push_back(r);
  }
  return out;
}

TEST(ProcessStreams, OwnAndUnknownProcessesStreamsInResourceOrderAndTheFirstOfAnId) {
  TraceBuilder b;
  const ProcessId pa = b.add_process({.pid = 1, .name = "a"});
  const ProcessId pb = b.add_process({.pid = 2, .name = "b"});
  const DeviceId da = b.add_device({.process = pa, .name = "gpu a"});
  const DeviceId db = b.add_device({.process = pb, .name = "gpu b"});
  const DeviceId du = b.add_device({.process = kNoIndex, .name = "gpu of no known process"});
  // Interleaved, so that a process's streams and the unknown ones alternate in resource order,
  // and stream ids 7 and 9 are both a process's own and an unknown device's.
  const std::vector<TrackId> streams = {b.stream_track(du, 7), b.stream_track(da, 7), b.stream_track(db, 9),
                                        b.stream_track(da, 8), b.stream_track(du, 9), b.stream_track(db, 7)};
  const std::vector<TrackId> threads = {b.thread_track(pa, 1), b.thread_track(pb, 2), b.thread_track(pa, 3)};
  TimeNs at = 0;
  for (TrackId s : streams) {
    b.add(GpuOpRecord{.track = s, .kind = GpuOpKind::Kernel, .start = at, .end = at + 10, .name = b.intern("k")});
    at += 20;
  }
  for (TrackId t : threads) {
    b.add(CudaApiRecord{.track = t, .start = at, .end = at + 5, .name = b.intern("cudaLaunchKernel")});
    at += 20;
  }
  const Trace trace = std::move(b).build();
  GraphBuildState st = graph_build::run_passes(trace, "tasks");
  for (ResourceId r = 0; r < st.tasks.resource_count(); ++r) {
    if (st.tasks.is_stream(r)) continue;
    const std::vector<ResourceId> expected = scanned_streams(st, r);
    EXPECT_EQ(graph_build::streams_of_process(st, r), expected) << "thread " << r;
    EXPECT_EQ(expected.size(), 4u); // its process's 2 and the unknown device's 2
    for (std::int64_t id : {std::int64_t{7}, std::int64_t{8}, std::int64_t{9}, std::int64_t{10}, kNoValue}) {
      ResourceId first = kNoIndex;
      for (ResourceId s : expected) {
        if (id != kNoValue && trace.tracks()[s].stream == id) {
          first = s;
          break;
        }
      }
      EXPECT_EQ(graph_build::find_stream(st, r, id), first) << "thread " << r << ", stream id " << id;
    }
  }
}

} // namespace
} // namespace dreamscope
