// Every kind of dreamscope annotation once, from C and C++: what annotations_test checks
// in the trace.
#include <dreamscope/annotate.h>
#include <dreamscope/annotate.hpp>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <thread>

int main() {
  for (int i = 0; i < 3; ++i) {
    dreamscope::Scope step = dreamscope::Scope::step(i);
    {
      ds_wait_push(100 + i);
      ds_range_pop();
    }
    DREAMSCOPE_SCOPE(DS_CATEGORY_OPERATION, "forward");
    {
      dreamscope::Scope inner(DS_CATEGORY_OPERATION, "matmul");
    }
  }
  {
    // Waiting on storage: 5 ms asleep, next to no CPU time.
    dreamscope::Scope f = dreamscope::Scope::fetch(7);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ds_prep_push(7);
  {
    // Decoding: at least 5 ms of this thread's CPU time.
    timespec from{}, now{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &from);
    volatile double x = 1;
    do {
      for (int k = 0; k < 1000; ++k) x = x * 1.0000001 + 1e-9;
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    } while ((now.tv_sec - from.tv_sec) * 1'000'000'000 + (now.tv_nsec - from.tv_nsec) < 5'000'000);
  }
  ds_range_pop();
  ds_mark(DS_CATEGORY_OPERATION, "checkpoint", 42);
  // A range that starts here and ends on another thread.
  const uint64_t id = ds_range_start(DS_CATEGORY_OPERATION, "handoff", 9);
  std::thread([id] { ds_range_end(id); }).join();
  std::printf("%s\n", ds_is_traced() ? "traced" : "untraced");
  return 0;
}
