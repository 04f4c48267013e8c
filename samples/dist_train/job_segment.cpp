#include "job_segment.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>

namespace dist_train {

namespace {

constexpr std::uint32_t kMagic = 0x64697374; // "dist"
constexpr std::int64_t kCheckEveryNs = 100'000'000;

static_assert(std::atomic<std::uint32_t>::is_always_lock_free && std::atomic<std::int32_t>::is_always_lock_free,
              "futexes and shared atomics need lock-free 32-bit atomics");

std::size_t round_up(std::size_t n) { return (n + 63) / 64 * 64; }

std::int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Not FUTEX_PRIVATE: the word is shared between processes.
void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected, std::int64_t ns) {
  timespec slice{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT, expected, &slice, nullptr, 0);
}

void futex_wake_all(std::atomic<std::uint32_t>& word) {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

struct Layout {
  std::size_t pids, steps, contributions, result, total;
};

Layout layout(const JobShape& s) {
  Layout l{};
  std::size_t at = round_up(sizeof(SegmentHeader));
  l.pids = at;
  at += round_up(sizeof(std::int32_t) * s.world_size);
  l.steps = at;
  at += round_up(sizeof(std::int64_t) * s.world_size * s.steps);
  l.contributions = at;
  at += round_up(s.bucket_bytes) * s.world_size;
  l.result = at;
  at += round_up(s.bucket_bytes);
  l.total = at;
  return l;
}

// A peer that exited and was not yet waited for by its parent is a zombie: as gone as one
// that was.
bool process_gone(std::int32_t pid) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0) return errno == ESRCH;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
}

int cores() {
  cpu_set_t set;
  return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
}

[[noreturn]] void die(const std::string& who, const std::string& why) {
  std::fprintf(stderr, "dist_train %s: %s\n", who.c_str(), why.c_str());
  std::exit(1);
}

} // namespace

std::size_t segment_bytes(const JobShape& shape) { return layout(shape).total; }

std::string segment_name(const std::string& job_id, std::string& why) {
  if (job_id.empty() || job_id.size() > 200) {
    why = "a job id is 1 to 200 characters";
    return {};
  }
  for (char c : job_id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                    c == '_' || c == '.';
    if (!ok) {
      why = "job id '" + job_id + "' has a character other than letters, digits, '-', '_' and '.'";
      return {};
    }
  }
  return "/dist_train-" + job_id;
}

JobSegment::JobSegment(JobSegment&& o) noexcept
    : name_(std::move(o.name_)), shape_(o.shape_), rank_(o.rank_), timeout_s_(o.timeout_s_), spin_(o.spin_),
      bytes_(o.bytes_), base_(o.base_), header_(o.header_), pids_(o.pids_), steps_(o.steps_),
      contributions_(o.contributions_), result_(o.result_) {
  o.base_ = nullptr;
}

JobSegment::~JobSegment() {
  if (base_) munmap(base_, bytes_);
}

namespace {

unsigned char* map_shared(int fd, std::size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | (fd < 0 ? MAP_ANONYMOUS : 0), fd, 0);
  return p == MAP_FAILED ? nullptr : static_cast<unsigned char*>(p);
}

} // namespace

JobSegment JobSegment::create(const std::string& job_id, const JobShape& shape) {
  std::string why;
  JobSegment s;
  s.name_ = segment_name(job_id, why);
  if (s.name_.empty()) die("launcher", why);
  s.shape_ = shape;
  const Layout l = layout(shape);
  s.bytes_ = l.total;
  shm_unlink(s.name_.c_str()); // a segment left by an earlier job of the same id
  const int fd = shm_open(s.name_.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) die("launcher", "cannot create shared memory /dev/shm" + s.name_ + ": " + std::strerror(errno));
  if (ftruncate(fd, static_cast<off_t>(l.total)) != 0) {
    const int err = errno;
    close(fd);
    shm_unlink(s.name_.c_str());
    die("launcher", "cannot size /dev/shm" + s.name_ + " to " + std::to_string(l.total) + " bytes: " + std::strerror(err));
  }
  s.base_ = map_shared(fd, l.total);
  close(fd);
  if (!s.base_) die("launcher", "cannot map /dev/shm" + s.name_ + ": " + std::strerror(errno));
  s.header_ = new (s.base_) SegmentHeader{};
  s.header_->magic = kMagic;
  s.header_->shape = shape;
  s.header_->state.store(2, std::memory_order_release);
  s.pids_ = reinterpret_cast<std::atomic<std::int32_t>*>(s.base_ + l.pids);
  return s;
}

JobSegment JobSegment::join(const std::string& job_id, const JobShape& shape, int rank, double timeout_s) {
  const std::string who = "rank " + std::to_string(rank);
  JobSegment s;
  s.shape_ = shape;
  s.rank_ = rank;
  s.timeout_s_ = timeout_s;
  // Spinning only pays when every rank has a core; otherwise it takes the core the rank we
  // wait for needs.
  s.spin_ = static_cast<int>(shape.world_size) <= cores() ? 4000 : 0;
  const Layout l = layout(shape);
  s.bytes_ = l.total;
  int fd = -1;
  if (shape.world_size > 1) {
    std::string why;
    s.name_ = segment_name(job_id, why);
    if (s.name_.empty()) die(who, why);
    fd = shm_open(s.name_.c_str(), O_RDWR | O_CREAT, 0600);
    if (fd < 0) die(who, "cannot open shared memory /dev/shm" + s.name_ + ": " + std::strerror(errno));
    struct stat st{};
    if (fstat(fd, &st) != 0) die(who, "cannot stat /dev/shm" + s.name_ + ": " + std::strerror(errno));
    // Ranks that start together all size it; a size of its own says that a rank was started
    // with other options, or that the segment is left from another job.
    if (st.st_size == 0 && ftruncate(fd, static_cast<off_t>(l.total)) != 0) {
      die(who, "cannot size /dev/shm" + s.name_ + ": " + std::strerror(errno));
    }
    if (st.st_size != 0 && static_cast<std::size_t>(st.st_size) != l.total) {
      die(who, "/dev/shm" + s.name_ + " is " + std::to_string(st.st_size) + " bytes, not " + std::to_string(l.total) +
                   ": the ranks were started with different options, or it is left from an earlier job of the "
                   "same id (remove it)");
    }
  }
  s.base_ = map_shared(fd, l.total);
  if (fd >= 0) close(fd);
  if (!s.base_) die(who, std::string("cannot map the job's shared memory: ") + std::strerror(errno));
  s.header_ = reinterpret_cast<SegmentHeader*>(s.base_);
  s.pids_ = reinterpret_cast<std::atomic<std::int32_t>*>(s.base_ + l.pids);
  s.steps_ = reinterpret_cast<std::int64_t*>(s.base_ + l.steps);
  s.contributions_ = reinterpret_cast<float*>(s.base_ + l.contributions);
  s.result_ = reinterpret_cast<float*>(s.base_ + l.result);
  SegmentHeader& h = *s.header_;
  std::uint32_t fresh = 0;
  if (h.state.compare_exchange_strong(fresh, 1)) {
    h.magic = kMagic;
    h.shape = shape;
    h.state.store(2, std::memory_order_release);
    futex_wake_all(h.state);
  } else {
    const std::int64_t deadline = now_ns() + static_cast<std::int64_t>(timeout_s * 1e9);
    while (h.state.load(std::memory_order_acquire) != 2) {
      if (now_ns() > deadline) die(who, "the job's shared memory /dev/shm" + s.name_ + " was never filled in");
      futex_wait(h.state, 1, kCheckEveryNs);
    }
  }
  if (h.magic != kMagic || !(h.shape == shape)) {
    die(who, "the job's shared memory /dev/shm" + s.name_ +
                 " describes another job (world size, buckets, bucket bytes or steps differ): the ranks were "
                 "started with different options, or it is left from an earlier job of the same id (remove it)");
  }
  if (h.joined.fetch_add(1) >= shape.world_size) {
    die(who, "more ranks joined /dev/shm" + s.name_ + " than the world size " + std::to_string(shape.world_size) +
                 ": it is left from an earlier job of the same id (remove it)");
  }
  std::int32_t none = 0;
  if (!s.pids_[rank].compare_exchange_strong(none, static_cast<std::int32_t>(getpid()))) {
    die(who, "rank " + std::to_string(rank) + " of /dev/shm" + s.name_ + " is taken by pid " + std::to_string(none) +
                 ": two ranks have the same RANK, or it is left from an earlier job of the same id (remove it)");
  }
  return s;
}

void JobSegment::fail(const std::string& why, int culprit) {
  std::fprintf(stderr, "dist_train rank %d: %s\n", rank_, why.c_str());
  std::fflush(stderr);
  abort_job(culprit);
  unlink_name(); // the job is over: its id is free for the next one
  std::exit(1);
}

void JobSegment::stop_if_aborted() {
  if (!header_->aborted.load()) return;
  const int failed = header_->failed_rank.load() - 1;
  fail(failed >= 0 ? "rank " + std::to_string(failed) + " failed; stopping" : std::string("the job was stopped"),
       failed);
}

void JobSegment::abort_job(int rank) {
  std::int32_t none = 0;
  header_->failed_rank.compare_exchange_strong(none, rank + 1);
  header_->aborted.store(1);
  futex_wake_all(header_->generation);
}

void JobSegment::check_peers(const char* what, std::int64_t waited_ns) {
  for (std::uint32_t r = 0; r < shape_.world_size; ++r) {
    if (static_cast<int>(r) == rank_) continue;
    const std::int32_t pid = pids_[r].load();
    if (process_gone(pid)) {
      stop_if_aborted(); // a rank that stopped because another failed: name the first
      fail("rank " + std::to_string(r) + " (pid " + std::to_string(pid) + ") ended while this rank waited in " +
               what + "; stopping",
           static_cast<int>(r));
    }
  }
  if (waited_ns > static_cast<std::int64_t>(timeout_s_ * 1e9)) {
    fail("waited " + std::to_string(static_cast<int>(timeout_s_)) + " s in " + what + " for the other ranks (" +
             std::to_string(header_->arrived.load()) + " of " + std::to_string(shape_.world_size) +
             " arrived, --timeout-s); stopping",
         rank_);
  }
}

void JobSegment::barrier(const char* what) {
  SegmentHeader& h = *header_;
  const std::uint32_t generation = h.generation.load(std::memory_order_acquire);
  if (h.arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == shape_.world_size) {
    // The last to arrive opens the next barrier and releases this one: a rank can only
    // arrive at the next one after it sees the new generation, and so the reset count.
    h.arrived.store(0, std::memory_order_relaxed);
    h.generation.fetch_add(1, std::memory_order_acq_rel);
    futex_wake_all(h.generation);
    return;
  }
  for (int i = 0; i < spin_; ++i) {
    if (h.generation.load(std::memory_order_acquire) != generation) return;
    cpu_relax();
  }
  const std::int64_t start = now_ns();
  while (h.generation.load(std::memory_order_acquire) == generation) {
    stop_if_aborted();
    futex_wait(h.generation, generation, kCheckEveryNs);
    if (h.generation.load(std::memory_order_acquire) != generation) break;
    stop_if_aborted();
    check_peers(what, now_ns() - start);
  }
}

void JobSegment::all_reduce_mean(float* data, std::size_t floats) {
  const std::size_t capacity = round_up(shape_.bucket_bytes) / sizeof(float);
  const std::size_t world = shape_.world_size;
  std::memcpy(contributions_ + capacity * static_cast<std::size_t>(rank_), data, floats * sizeof(float));
  barrier("all_reduce");
  // Each rank reduces its share of the elements over every rank's contribution.
  const std::size_t lo = floats * static_cast<std::size_t>(rank_) / world;
  const std::size_t hi = floats * (static_cast<std::size_t>(rank_) + 1) / world;
  std::memcpy(result_ + lo, contributions_ + lo, (hi - lo) * sizeof(float));
  for (std::size_t r = 1; r < world; ++r) {
    const float* c = contributions_ + capacity * r;
    for (std::size_t i = lo; i < hi; ++i) result_[i] += c[i];
  }
  const float scale = 1.0f / static_cast<float>(world);
  for (std::size_t i = lo; i < hi; ++i) result_[i] *= scale;
  barrier("all_reduce");
  std::memcpy(data, result_, floats * sizeof(float));
}

void JobSegment::record_step(std::uint32_t step, std::int64_t ns) {
  steps_[static_cast<std::size_t>(rank_) * shape_.steps + step] = ns;
}

std::int64_t JobSegment::step_ns(int rank, std::uint32_t step) const {
  return steps_[static_cast<std::size_t>(rank) * shape_.steps + step];
}

void JobSegment::leave() {
  if (header_->left.fetch_add(1) + 1 == shape_.world_size) unlink_name();
}

void JobSegment::unlink_name() {
  if (!name_.empty()) shm_unlink(name_.c_str());
}

} // namespace dist_train
