// The ranks of one dist_train job on one machine, meeting in a POSIX shared-memory segment:
// a barrier on a futex, the gradient all-reduce, each rank's step times, and the job's
// abort flag.
//
// Ranks that wait sleep in the kernel (after a short spin, only when every rank has a core
// of its own): 8 ranks on 2 cores make progress. A rank that fails, exits or is killed never
// leaves the others waiting forever: the launcher raises the abort flag when one of its
// ranks ends badly, every waiting rank checks every 100 ms whether its peers are still alive,
// and gives up after the job's timeout, each with a message that says which rank and why.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace dist_train {

// What every rank of a job must agree on: the segment's size and layout follow from it.
struct JobShape {
  std::uint32_t world_size = 1;
  std::uint32_t buckets = 1;
  std::uint64_t bucket_bytes = 4;
  std::uint32_t steps = 1;

  bool operator==(const JobShape&) const = default;
};

// The segment's first bytes. Zero-filled memory is a valid "fresh" header: ranks that start
// without a launcher create the segment together, and the first to arrive fills it in.
struct SegmentHeader {
  std::atomic<std::uint32_t> state;   // 0: fresh, 1: being filled in, 2: ready
  std::uint32_t magic;
  JobShape shape;
  std::atomic<std::uint32_t> joined;  // ranks that attached
  std::atomic<std::uint32_t> left;    // ranks that finished
  std::atomic<std::uint32_t> aborted; // non-zero: stop, a rank failed
  std::atomic<std::int32_t> failed_rank;
  alignas(64) std::atomic<std::uint32_t> arrived;    // ranks in the current barrier
  alignas(64) std::atomic<std::uint32_t> generation; // the futex word: +1 per completed barrier
};

std::size_t segment_bytes(const JobShape& shape);

// A rank's view of the job (or the launcher's, with rank -1).
class JobSegment {
 public:
  // Creates a fresh segment named after the job (removing a stale one): the launcher.
  static JobSegment create(const std::string& job_id, const JobShape& shape);
  // Creates or opens the job's segment and joins as `rank`: a rank. With world size 1, a
  // private segment and no name.
  static JobSegment join(const std::string& job_id, const JobShape& shape, int rank, double timeout_s);

  JobSegment(JobSegment&& other) noexcept;
  JobSegment& operator=(JobSegment&&) = delete;
  ~JobSegment();

  // Blocks until every rank has called it as often. `what` names the wait in messages.
  void barrier(const char* what);
  // The mean of every rank's `data[0, floats)`, in place, through the shared buffers: each
  // rank copies its contribution in, waits for all, reduces its share of the elements, waits
  // for all again, and copies the result out.
  void all_reduce_mean(float* data, std::size_t floats);

  void record_step(std::uint32_t step, std::int64_t ns);
  std::int64_t step_ns(int rank, std::uint32_t step) const;

  // Rank `rank` ended badly (said by the launcher, or by a rank that saw it): wake everybody
  // and make them stop. The first rank named is the one every message names.
  void abort_job(int rank);
  // The last rank to finish removes the segment's name (the launcher removes it anyway).
  void leave();
  void unlink_name();

  int rank() const { return rank_; }
  const JobShape& shape() const { return shape_; }

 private:
  JobSegment() = default;
  // Says why this rank stops, makes the others stop too (naming `culprit`), and exits 1.
  [[noreturn]] void fail(const std::string& why, int culprit);
  void stop_if_aborted();
  void check_peers(const char* what, std::int64_t waited_ns);

  std::string name_; // "/dist_train-<job id>"; "" for a private segment
  JobShape shape_;
  int rank_ = -1;
  double timeout_s_ = 60;
  int spin_ = 0; // pause iterations before sleeping in a barrier
  std::size_t bytes_ = 0;
  unsigned char* base_ = nullptr;
  SegmentHeader* header_ = nullptr;
  std::atomic<std::int32_t>* pids_ = nullptr; // [world]
  std::int64_t* steps_ = nullptr;             // [world][steps]
  float* contributions_ = nullptr;            // [world][bucket floats]
  float* result_ = nullptr;                   // [bucket floats]
};

// The name of the job's segment in /dev/shm, or "" with `why` set when the id cannot name one.
std::string segment_name(const std::string& job_id, std::string& why);

} // namespace dist_train
