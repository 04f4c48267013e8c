// fork() while the tracer runs: every tracer lock is taken before the fork, so that the
// child never finds one held by a thread it does not have (the writer mid-flush, CUPTI
// handing a buffer over), and the child starts a part file of its own.
#include "cupti_session.h"
#include "recording_pause.h"
#include "tracer_state.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

namespace dreamscope::tracer {

namespace {

// The order the writer takes them in: the CUPTI flush lock before the work lock, the CUPTI
// queue lock after it.
void fork_prepare() {
  if (!g_tracer) return;
  cupti_flush_mutex().lock();
  g_tracer->work_mu.lock();
  cupti_queue_mutex().lock();
  g_tracer->registry_mu.lock();
  g_tracer->pool->mutex().lock();
  g_tracer->strings.mutex().lock();
  g_tracer->domains.mutex().lock();
  g_tracer->warnings_mu.lock();
  g_tracer->thread_names_mu.lock();
  pauses_mutex().lock();
}

void fork_parent() {
  if (!g_tracer) return;
  pauses_mutex().unlock();
  g_tracer->thread_names_mu.unlock();
  g_tracer->warnings_mu.unlock();
  g_tracer->domains.mutex().unlock();
  g_tracer->strings.mutex().unlock();
  g_tracer->pool->mutex().unlock();
  g_tracer->registry_mu.unlock();
  cupti_queue_mutex().unlock();
  g_tracer->work_mu.unlock();
  cupti_flush_mutex().unlock();
}

// The child: the parent's part file and writer thread belong to the parent. Leak them
// untouched (closing would write the parent's buffered records into the parent's file a
// second time), keep only the forking thread's buffer, emptied, and start a part file of
// our own. The other threads' chunks go back to the pool.
void fork_child() {
  if (!g_tracer) return;
  Tracer& t = *g_tracer;
  fork_parent();
  const std::int64_t parent = t.session ? t.session->info.pid : getppid();
  // The old Session is leaked whole: its std::thread names a thread that does not exist here.
  t.session = nullptr;
  // A cost probe of the parent's writer, caught on: the child's writer schedules its own.
  g_hot.cost_probe.store(false, std::memory_order_relaxed);
  {
    std::lock_guard lock(t.registry_mu);
    ThreadBuffer* mine = registered_thread_buffer();
    std::vector<Chunk*> orphans;
    for (ThreadBuffer* b : t.buffers) {
      if (b == mine) continue;
      for (Chunk* c : b->take_chunks()) orphans.push_back(c);
      delete b;
    }
    std::sort(orphans.begin(), orphans.end());
    orphans.erase(std::unique(orphans.begin(), orphans.end()), orphans.end());
    for (Chunk* c : orphans) t.pool->release(c);
    t.buffers.clear();
    t.retired_dropped = 0;
    if (mine) {
      mine->reset_after_fork(gettid_now());
      t.buffers.push_back(mine);
    }
  }
  t.extra_dropped.store(0);
  t.thread_names.clear(); // the parent's threads; the child's own have other ids
  t.flush_requested.store(0);
  t.flush_done.store(0);
  t.writer_tid.store(0);
  cupti_forget_after_fork();
  t.session = open_session(parent);
}

} // namespace

void install_fork_handlers() { pthread_atfork(fork_prepare, fork_parent, fork_child); }

} // namespace dreamscope::tracer
