// Every kind of dreamscope annotation once, from C and C++: what annotations_test checks
// in the trace.
#include <dreamscope/annotate.h>
#include <dreamscope/annotate.hpp>

#include <cstdio>
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
    dreamscope::Scope f = dreamscope::Scope::fetch(7);
  }
  ds_prep_push(7);
  ds_range_pop();
  ds_mark(DS_CATEGORY_OPERATION, "checkpoint", 42);
  // A range that starts here and ends on another thread.
  const uint64_t id = ds_range_start(DS_CATEGORY_OPERATION, "handoff", 9);
  std::thread([id] { ds_range_end(id); }).join();
  std::printf("%s\n", ds_is_traced() ? "traced" : "untraced");
  return 0;
}
