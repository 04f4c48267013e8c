// Threads that work without recording anything, as an OpenMP or BLAS pool does: the main
// thread records one NVTX range, and inside it two std::threads named spin-a and spin-b spin
// on the CPU until each used SPIN_MS of CPU time (default 100), without an NVTX call. Then
// they stay alive, blocked, until the process exits, so that the tracer's last read of them
// at exit has all they ran. Prints "NAME TID CPU_NS" for each. With LATE_RANGE=1, spin-b
// then records a range ("late") and spins SPIN_MS more inside it: a thread that begins
// recording after it worked unrecorded.
#include <nvtx3/nvToolsExt.h>

#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace {

std::int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

std::atomic<int> g_done{0};

void spin_until(std::int64_t cpu_ns) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  volatile std::uint64_t x = 1;
  while (thread_cpu_ns() < cpu_ns && std::chrono::steady_clock::now() < give_up) {
    for (int i = 0; i < 10000; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  }
}

void spin(const char* name, std::int64_t cpu_ns, bool late_range) {
  pthread_setname_np(pthread_self(), name);
  spin_until(cpu_ns);
  if (late_range) {
    nvtxRangePushA("late");
    spin_until(2 * cpu_ns);
    nvtxRangePop();
  }
  std::printf("%s %ld %lld\n", name, static_cast<long>(syscall(SYS_gettid)), static_cast<long long>(thread_cpu_ns()));
  std::fflush(stdout);
  g_done.fetch_add(1);
  for (;;) pause(); // alive, off the CPU, until the process exits
}

} // namespace

int main() {
  const char* ms = std::getenv("SPIN_MS");
  const std::int64_t cpu_ns = (ms ? std::atoll(ms) : 100) * 1'000'000;
  const char* late = std::getenv("LATE_RANGE");
  const bool late_range = late && std::atoi(late) == 1;
  nvtxRangePushA("main");
  // The tracer creates the trace on the first event and reads the threads from its next
  // drain (10 ms) on: the spinning begins after that.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::thread a(spin, "spin-a", cpu_ns, false);
  std::thread b(spin, "spin-b", cpu_ns, late_range);
  a.detach();
  b.detach();
  while (g_done.load() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  nvtxRangePop();
  return 0;
}
