// A job from the traces of its ranks: the files of a folder or glob, each
// file's rank, the collectives matched across ranks, and clocks put on one. The
// 8-rank DLRM job in shared/data/wild (one PyTorch-profiler file per rank, NCCL
// on V100s) is the real case.
#include "test_traces.h"

#include <dreamscope/storage/collectives.h>
#include <dreamscope/storage/importers.h>
#include <dreamscope/storage/job.h>
#include <dreamscope/storage/trace_copy.h>
#include <dreamscope/storage/trace_file.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>

namespace dreamscope {
namespace {

const std::filesystem::path kDlrm =
    std::filesystem::path(DREAMSCOPE_SHARED_DATA_DIR) / "wild" / "param-dlrm-v100x8-nccl";

std::vector<std::filesystem::path> dlrm_files() { return job_files({kDlrm.string()}); }

TEST(JobFiles, AFolderGivesItsTracesInNaturalOrderAndAGlobTheSame) {
  const auto files = dlrm_files();
  ASSERT_EQ(files.size(), 8u);
  for (std::size_t r = 0; r < files.size(); ++r) {
    EXPECT_TRUE(files[r].filename().string().starts_with("worker" + std::to_string(r))) << files[r];
    EXPECT_EQ(rank_from_file_name(files[r]), static_cast<std::int64_t>(r));
  }
  EXPECT_EQ(job_files({(kDlrm / "worker*.json").string()}), files);
  // A file named twice is one file.
  EXPECT_EQ(job_files({files[0].string(), files[0].string()}).size(), 1u);
  EXPECT_THROW(job_files({(kDlrm / "nothing-*.json").string()}), TraceError);
}

TEST(JobFiles, RankFromFileNames) {
  EXPECT_EQ(rank_from_file_name("rank-12.Apr_03.pt.trace.json"), 12);
  EXPECT_EQ(rank_from_file_name("inference_rank_1.json.gz"), 1);
  EXPECT_EQ(rank_from_file_name("run/RANK3.db"), 3);
  EXPECT_EQ(rank_from_file_name("worker_07.json"), 7);
  EXPECT_EQ(rank_from_file_name("trace.db"), kNoValue);
  EXPECT_EQ(rank_from_file_name("ranked.db"), kNoValue);
  EXPECT_EQ(rank_from_file_name("rank99999999999.db"),
            kNoValue); // past the limit
}

TEST(JobLoad, TheDlrmJobHasEightRanksWhoseCollectivesMatch) {
  const LoadedJob job = load_job(dlrm_files());
  EXPECT_TRUE(job.notes.empty()); // every file says its rank, all on one clock
  const auto ranks = job_ranks(job.trace);
  ASSERT_EQ(ranks.size(), 8u);
  for (std::int64_t r = 0; r < 8; ++r) EXPECT_EQ(ranks[static_cast<std::size_t>(r)].rank, r);

  const JobCollectives c = find_collectives(job.trace);
  EXPECT_EQ(c.calls.size(), 64u);
  EXPECT_EQ(c.unmatched_calls, 0u);
  EXPECT_EQ(c.mismatched_ops, 0u);
  ASSERT_EQ(c.instances.size(), 8u);
  std::vector<std::string> ops;
  for (const CollectiveInstance& inst : c.instances) {
    ops.push_back(inst.op);
    ASSERT_EQ(inst.calls.size(), 8u);
    EXPECT_EQ(inst.step, 10);
    // What makes them one collective: NCCL ends it on every rank at once (here
    // within a few microseconds), however far apart the ranks arrived.
    TimeNs lo = INT64_MAX, hi = INT64_MIN;
    for (std::uint32_t k : inst.calls) {
      lo = std::min(lo, c.calls[k].end);
      hi = std::max(hi, c.calls[k].end);
      EXPECT_LE(inst.wait_of(c.calls, k), c.calls[k].duration());
    }
    EXPECT_LT(hi - lo, 10'000) << inst.op << " " << inst.sequence;
  }
  // DLRM's forward all-to-alls of the embeddings and backward all-reduces of
  // the MLPs (NCCL runs the all-to-alls as SendRecv kernels; the operator
  // around the launch names them).
  EXPECT_EQ(ops, (std::vector<std::string>{"all_to_all", "all_to_all", "all_to_all", "all_to_all", "all_reduce",
                                           "all_to_all", "all_reduce", "all_reduce"}));
  // nccl:all_reduce's input, 394241 floats.
  EXPECT_EQ(c.calls[c.instances[4].calls[0]].bytes, 394241 * 4);
}

TEST(JobLoad, EveryLaunchOfAMergedJobIsOnItsKernelsRank) {
  // Each rank's file numbers its launches from its own counter: merged, every
  // kernel must still find its own launch, as many as in its file alone.
  auto linked_per_rank = [](const Trace& t) {
    const auto rank_of = track_ranks(t);
    std::map<std::int64_t, std::size_t> linked;
    for (GpuOpIndex i{0}; i < t.gpu_ops().size(); ++i) {
      if (t.gpu_ops().correlation[i] == kNoValue) continue;
      const auto api = t.cuda_api_with_correlation(t.gpu_ops().correlation[i]);
      if (!api) continue;
      EXPECT_EQ(rank_of[t.cuda_api().track[*api]], rank_of[t.gpu_ops().track[i]]) << "gpu op " << i;
      ++linked[rank_of[t.gpu_ops().track[i]]];
    }
    return linked;
  };
  std::map<std::int64_t, std::size_t> alone;
  for (const auto& f : dlrm_files()) {
    for (const auto& [rank, n] : linked_per_rank(load_trace(f))) alone[rank] += n;
  }
  ASSERT_EQ(alone.size(), 8u);
  EXPECT_EQ(linked_per_rank(load_job(dlrm_files()).trace), alone);
}

// Rank 1's file as if written on a machine whose clock is 5 ms ahead.
std::filesystem::path shifted_copy(const std::filesystem::path& file, TimeNs shift, const test::ScratchDir& dir) {
  const Trace in = load_trace(file);
  TraceBuilder b;
  for (const auto& [k, v] : in.meta()) b.set_meta(k, v);
  TraceCopyEdits e;
  e.process = [](ProcessInfo& p) { p.host = "node-b"; };
  e.cuda_api = [&](CudaApiIndex, CudaApiRecord& r) {
    r.start += shift;
    r.end += shift;
    return true;
  };
  e.gpu_op = [&](GpuOpIndex, GpuOpRecord& r) {
    r.start += shift;
    r.end += shift;
    return true;
  };
  e.annotation = [&](AnnotationIndex, AnnotationRecord& r) {
    r.start += shift;
    r.end += shift;
    return true;
  };
  append_trace_rows(b, in, append_trace_ids(b, in, e), e);
  const auto out = dir / "rank1-node-b.db";
  write_trace(std::move(b).build(), out);
  return out;
}

TEST(JobLoad, AnotherMachinesClockIsPutOnRankZerosByTheCollectives) {
  test::ScratchDir dir;
  const auto files = dlrm_files();
  const TimeNs ahead = 5'000'000;
  const std::vector<std::filesystem::path> job_files_ = {files[0], shifted_copy(files[1], ahead, dir)};

  const LoadedJob aligned = load_job(job_files_);
  TimeNs offset = 0;
  for (const ProcessInfo& p : aligned.trace.processes()) {
    if (p.rank == 1) offset = p.clock_offset;
    if (p.rank == 0) {
      EXPECT_EQ(p.clock_offset, 0);
    }
  }
  EXPECT_NEAR(static_cast<double>(offset), -static_cast<double>(ahead), 10'000.0);
  ASSERT_EQ(aligned.notes.size(), 1u);
  EXPECT_NE(aligned.notes[0].find("put on rank 0's by their collectives"), std::string::npos) << aligned.notes[0];
  const JobCollectives c = find_collectives(aligned.trace);
  ASSERT_EQ(c.instances.size(), 8u);
  for (const auto& inst : c.instances) {
    EXPECT_LT(std::abs(c.calls[inst.calls[0]].end - c.calls[inst.calls[1]].end), 10'000);
  }

  const LoadedJob raw = load_job(job_files_, JobLoadOptions{.align = ClockAlignment::Never});
  for (const ProcessInfo& p : raw.trace.processes()) EXPECT_EQ(p.clock_offset, 0);
  // Files on one clock are left alone: differences below the tolerance are not
  // another clock.
  const LoadedJob same = load_job({files[0], files[1]});
  for (const ProcessInfo& p : same.trace.processes()) EXPECT_EQ(p.clock_offset, 0);
}

TEST(JobLoad, TwoFilesOfOneRankAreRefusedNamingBoth) {
  const auto files = dlrm_files();
  test::ScratchDir dir;
  const auto copy = dir / "again.json";
  std::filesystem::copy_file(files[2], copy);
  try {
    (void)load_job({files[2], copy});
    FAIL() << "no error";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("are both rank 2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("again.json"), std::string::npos) << e.what();
  }
}

TEST(JobLoad, EachRankInTurnFromFilesOrFromOneMergedTrace) {
  const auto files = dlrm_files();
  std::mutex m;
  std::map<std::int64_t, std::size_t> events;
  for_each_rank(files, JobLoadOptions{.threads = 2}, [&](std::int64_t rank, Trace&& t, const std::filesystem::path&) {
    std::lock_guard lock(m);
    events[rank] = t.event_count();
  });
  ASSERT_EQ(events.size(), 8u);

  test::ScratchDir dir;
  write_trace(load_job(files).trace, dir / "job.db");
  std::map<std::int64_t, std::size_t> from_one;
  for_each_rank({dir / "job.db"}, {}, [&](std::int64_t rank, Trace&& t, const std::filesystem::path&) {
    std::lock_guard lock(m);
    from_one[rank] = t.event_count();
  });
  EXPECT_EQ(from_one, events);

  EXPECT_THROW(for_each_rank(files, {},
                             [](std::int64_t rank, Trace&&, const std::filesystem::path&) {
                               if (rank == 3) throw TraceError("rank 3 is bad");
                             }),
               TraceError);
}

// Two CPU ranks of dreamscope's own annotations: one all-reduce a step, rank 1
// late to each.
Trace cpu_job() {
  TraceBuilder b;
  const StringId ds = b.intern("dreamscope"), coll = b.intern("collective"), step = b.intern("step"),
                 ar = b.intern("all_reduce");
  for (std::int64_t r = 0; r < 2; ++r) {
    const auto p = b.add_process({.pid = 10 + r, .rank = r, .world_size = 2});
    const TrackId t = b.thread_track(p, 10 + r);
    for (std::int64_t s = 0; s < 3; ++s) {
      const TimeNs base = s * 1000;
      b.add(AnnotationRecord{
          .track = t, .start = base, .end = base + 900, .name = step, .domain = ds, .category = step, .payload = s});
      const TimeNs arrive = base + 500 + 200 * r;
      b.add(AnnotationRecord{
          .track = t, .start = arrive, .end = base + 800, .name = ar, .domain = ds, .category = coll, .payload = 4096});
    }
  }
  return std::move(b).build();
}

TEST(Collectives, DreamscopeCollectiveRangesOfCpuRanksMatchByStep) {
  const JobCollectives c = find_collectives(cpu_job());
  ASSERT_EQ(c.calls.size(), 6u);
  ASSERT_EQ(c.instances.size(), 3u);
  for (const auto& inst : c.instances) {
    EXPECT_EQ(inst.op, "all_reduce");
    EXPECT_EQ(inst.last_rank, 1);
    EXPECT_EQ(inst.last_arrival - inst.first_arrival, 200);
    const CollectiveCall& r0 = c.calls[inst.calls[0]];
    EXPECT_EQ(r0.rank, 0);
    EXPECT_EQ(r0.bytes, 4096);
    EXPECT_EQ(r0.table, EventTable::Annotation);
    EXPECT_EQ(inst.wait_of(c.calls, inst.calls[0]), 200);
    EXPECT_EQ(inst.wait_of(c.calls, inst.calls[1]), 0);
  }
  EXPECT_EQ(c.instances[2].step, 2);
  // Rank 0 waited 200 ns in each of three all-reduces, for rank 1.
  EXPECT_EQ(wait_caused_by_rank(c), (std::map<std::int64_t, TimeNs>{{1, 600}}));
  EXPECT_EQ(most_waited_for_rank(c), 1);
  EXPECT_EQ(most_waited_for_rank(JobCollectives{}), kNoValue);
}

TEST(Collectives, OperationNamesAndDtypes) {
  EXPECT_EQ(normalised_collective_op("ncclKernel_AllReduce_RING_LL_Sum_float("
                                     "ncclDevComm*, unsigned long, ncclWork*)"),
            "all_reduce");
  EXPECT_EQ(normalised_collective_op("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
            "all_gather");
  EXPECT_EQ(normalised_collective_op("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL"), "reduce_scatter");
  EXPECT_EQ(normalised_collective_op("multimem_all_reduce_kernel"), "all_reduce");
  EXPECT_EQ(normalised_collective_op("nccl:all_to_all"), "all_to_all");
  EXPECT_EQ(normalised_collective_op("c10d::allreduce_"), "all_reduce");
  EXPECT_EQ(normalised_collective_op("_allgather_base"), "all_gather");
  EXPECT_EQ(normalised_collective_op("ncclKernel_Broadcast_RING_LL_Sum_int8_t"), "broadcast");
  EXPECT_EQ(normalised_collective_op("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t"), "send_recv");
  EXPECT_EQ(normalised_collective_op("rcclGenericKernel"), "rcclGenericKernel");
  EXPECT_EQ(dtype_bytes("Float"), 4);
  EXPECT_EQ(dtype_bytes("c10::BFloat16"), 2);
  EXPECT_EQ(dtype_bytes("long int"), 8);
  EXPECT_EQ(dtype_bytes("quaternion"), 0);
}

} // namespace
} // namespace dreamscope
