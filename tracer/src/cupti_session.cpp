#include "cupti_session.h"

#include "cupti_decoder.h"
#include "recorder.h"

#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace dreamscope::tracer {
namespace {

// Kineto's numbers: 4 MB buffers, a bounded pool. Past the cap CUPTI is handed no buffer,
// drops the records and counts them, which we add to meta.dropped_events.
constexpr std::size_t kBufferBytes = 4 << 20;
constexpr std::size_t kMaxBuffers = 32;

struct Completed {
  std::uint8_t* buffer;
  std::size_t valid;
  std::size_t dropped; // asked for in the completion callback, while the context still exists
};

// Everything here outlives the process's static destructors, which is why it is allocated
// and never freed: at exit, CUPTI hands buffers over and the writer decodes them after the
// destructors of this library's statics have run (the exit handler that closes the part was
// registered before them). A destroyed vector still took the buffers and the writer decoded
// freed memory: every traced CUDA process died of SIGSEGV at exit on the first real GPU.
struct CuptiState {
  std::mutex mu; // the pool and the completed queue; never held across a CUPTI call
  // Held across the writer's periodic flush; the exit handler takes it to stop them before
  // the CUDA runtime tears down.
  std::mutex flush_mu;
  // Set once the last flush ran, from the exit handler that CUPTI's start registered: the
  // CUDA runtime's own exit handlers run after it, and no CUPTI call is made after them.
  bool exiting = false;
  std::vector<std::uint8_t*> free;
  std::size_t allocated = 0;
  std::vector<Completed> completed;
  std::atomic<bool> active{false};
  bool system_thread_ids = false;
  std::unique_ptr<CuptiDecoder> decoder;
  TraceTarget* decoder_target = nullptr;
};

CuptiState& state() {
  static CuptiState* s = new CuptiState;
  return *s;
}

std::string result_text(CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return s ? s : ("CUPTI error " + std::to_string(static_cast<int>(r)));
}

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  *max_records = 0;
  CuptiState& st = state();
  std::lock_guard lock(st.mu);
  if (!st.free.empty()) {
    *buffer = st.free.back();
    st.free.pop_back();
    *size = kBufferBytes;
    return;
  }
  if (st.allocated < kMaxBuffers) {
    *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, kBufferBytes));
    if (*buffer) {
      ++st.allocated;
      *size = kBufferBytes;
      return;
    }
  }
  *buffer = nullptr;
  *size = 0;
}

// CUPTI's thread: hand the buffer over and return; decoding happens on the writer thread.
void CUPTIAPI buffer_completed(CUcontext context, std::uint32_t stream, std::uint8_t* buffer, std::size_t,
                               std::size_t valid) {
  std::size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(context, stream, &dropped) != CUPTI_SUCCESS) dropped = 0;
  CuptiState& st = state();
  std::lock_guard lock(st.mu);
  st.completed.push_back(Completed{buffer, valid, dropped});
}

std::uint64_t CUPTIAPI timestamp() { return static_cast<std::uint64_t>(monotonic_ns()); }

void external_push(std::uint64_t id) { cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id); }
void external_pop() {
  std::uint64_t id = 0;
  cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &id);
}

std::string callback_name(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  const char* name = nullptr;
  if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || !name) return {};
  return name;
}

bool next_record(std::uint8_t* buffer, std::size_t valid, CUpti_Activity** record) {
  return cuptiActivityGetNextRecord(buffer, valid, record) == CUPTI_SUCCESS;
}

void start() {
  CuptiState& st = state();
  if (st.active.load() || !tracer_start() || !tracer_config().cuda) return;
  CUptiResult r = cuptiActivityRegisterTimestampCallback(timestamp);
  if (r != CUPTI_SUCCESS) {
    tracer_add_warning("CUPTI refused the tracer's clock (" + result_text(r) +
                       "): GPU times are on CUPTI's clock and may be offset from CPU times");
  }
  // CUPTI's default thread id is pthread_self(), which names no thread in the trace: an API
  // call made before its thread recorded anything else (PyTorch's main thread initializing
  // CUDA) landed on a track of its own, away from the ranges around it, on the first H100.
  r = cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
  st.system_thread_ids = r == CUPTI_SUCCESS;
  if (r != CUPTI_SUCCESS) {
    tracer_add_warning("CUPTI cannot report system thread ids (" + result_text(r) +
                       "): CUDA API calls may be on tracks of their own, apart from their threads' ranges");
  }
  r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  if (r != CUPTI_SUCCESS) {
    tracer_add_warning("CUPTI is not available (" + result_text(r) + "): recording NVTX and the CPU side only");
    return;
  }
  const CUpti_ActivityKind required[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_RUNTIME};
  for (auto kind : required) {
    r = cuptiActivityEnable(kind);
    if (r != CUPTI_SUCCESS) {
      // Another profiler holding CUPTI's one subscriber, no permission, no device: degrade.
      tracer_add_warning("CUPTI refused activity tracing (" + result_text(r) +
                         "): recording NVTX and the CPU side only");
      for (auto k : required) cuptiActivityDisable(k);
      return;
    }
  }
  const CUpti_ActivityKind optional[] = {
      CUPTI_ACTIVITY_KIND_MEMCPY,   CUPTI_ACTIVITY_KIND_MEMSET,   CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
      CUPTI_ACTIVITY_KIND_DRIVER,   CUPTI_ACTIVITY_KIND_OVERHEAD, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
      CUPTI_ACTIVITY_KIND_DEVICE,   CUPTI_ACTIVITY_KIND_CONTEXT,  CUPTI_ACTIVITY_KIND_CUDA_EVENT};
  for (auto kind : optional) {
    r = cuptiActivityEnable(kind);
    if (r != CUPTI_SUCCESS) {
      tracer_add_warning("CUPTI activity kind " + std::to_string(static_cast<int>(kind)) + " not recorded: " +
                         result_text(r));
    }
  }
  st.active.store(true);
  // As CUPTI's own injection sample does: flush while the CUDA runtime is still up, since
  // its exit handlers, registered after the tracer's, run before the tracer's final close.
  std::atexit([] {
    CuptiState& s = state();
    std::lock_guard lock(s.flush_mu);
    if (s.exiting) return;
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    s.exiting = true;
  });
  g_hot.external_push.store(external_push);
  g_hot.external_pop.store(external_pop);
}

} // namespace

std::uint64_t cupti_drain(TraceTarget& target, bool all_api, bool final) {
  CuptiState& st = state();
  std::vector<Completed> work;
  {
    std::lock_guard lock(st.mu);
    work.swap(st.completed);
  }
  if (work.empty()) {
    if (final && st.decoder && st.decoder_target == &target) st.decoder->finish();
    return 0;
  }
  if (!st.decoder || st.decoder_target != &target) {
    st.decoder = std::make_unique<CuptiDecoder>(target, CuptiDecoderOptions{all_api, callback_name, st.system_thread_ids});
    st.decoder_target = &target;
  }
  std::uint64_t dropped = 0;
  for (const auto& c : work) {
    if (c.buffer && c.valid > 0) st.decoder->decode_buffer(c.buffer, c.valid, next_record);
    dropped += c.dropped;
    std::lock_guard lock(st.mu);
    if (c.buffer) st.free.push_back(c.buffer);
  }
  if (final) st.decoder->finish();
  return dropped;
}

// Once the exit handler's flush ran, the CUDA runtime may be gone: what CUPTI had is
// already handed over, and a flush now could crash the exiting process.
void cupti_flush_all() {
  CuptiState& st = state();
  std::lock_guard lock(st.flush_mu);
  if (st.active.load() && !st.exiting) cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

void cupti_flush_completed() {
  CuptiState& st = state();
  std::lock_guard lock(st.flush_mu);
  if (st.active.load() && !st.exiting) cuptiActivityFlushAll(0);
}

bool cupti_active() { return state().active.load(); }

std::mutex& cupti_flush_mutex() { return state().flush_mu; }
std::mutex& cupti_queue_mutex() { return state().mu; }

void cupti_forget_after_fork() {
  CuptiState& st = state();
  st.active.store(false);
  g_hot.external_push.store(nullptr);
  g_hot.external_pop.store(nullptr);
  std::lock_guard lock(st.mu);
  st.completed.clear();
  st.decoder.release(); // bound to the parent's part file
  st.decoder_target = nullptr;
}

} // namespace dreamscope::tracer

// Called by the CUDA driver at cuInit when CUDA_INJECTION64_PATH names this library: the
// moment this process starts using CUDA.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  dreamscope::tracer::start();
  return 1;
}
