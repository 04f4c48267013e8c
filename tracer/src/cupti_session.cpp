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
  CUcontext context;
  std::uint32_t stream;
};

std::mutex g_mu; // the pool and the completed queue; never held across a CUPTI call
// Held across the writer's periodic flush; the exit handler takes it to stop them before
// the CUDA runtime tears down.
std::mutex g_flush_mu;
bool g_exiting = false;
std::vector<std::uint8_t*> g_free;
std::size_t g_allocated = 0;
std::vector<Completed> g_completed;
std::atomic<bool> g_active{false};
std::unique_ptr<CuptiDecoder> g_decoder;
TraceTarget* g_decoder_target = nullptr;

std::string result_text(CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return s ? s : ("CUPTI error " + std::to_string(static_cast<int>(r)));
}

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  *max_records = 0;
  std::lock_guard lock(g_mu);
  if (!g_free.empty()) {
    *buffer = g_free.back();
    g_free.pop_back();
    *size = kBufferBytes;
    return;
  }
  if (g_allocated < kMaxBuffers) {
    *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, kBufferBytes));
    if (*buffer) {
      ++g_allocated;
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
  std::lock_guard lock(g_mu);
  g_completed.push_back(Completed{buffer, valid, context, stream});
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
  if (g_active.load() || !tracer_start() || !tracer_config().cuda) return;
  CUptiResult r = cuptiActivityRegisterTimestampCallback(timestamp);
  if (r != CUPTI_SUCCESS) {
    tracer_add_warning("CUPTI refused the tracer's clock (" + result_text(r) +
                       "): GPU times are on CUPTI's clock and may be offset from CPU times");
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
  g_active.store(true);
  // As CUPTI's own injection sample does: flush while the CUDA runtime is still up, since
  // its exit handlers, registered after the tracer's, run before the tracer's final close.
  std::atexit([] {
    {
      std::lock_guard lock(g_flush_mu);
      g_exiting = true;
    }
    cupti_flush_all();
  });
  g_hot.external_push.store(external_push);
  g_hot.external_pop.store(external_pop);
}

} // namespace

std::uint64_t cupti_drain(TraceTarget& target, bool all_api, bool final) {
  std::vector<Completed> work;
  {
    std::lock_guard lock(g_mu);
    work.swap(g_completed);
  }
  if (work.empty()) {
    if (final && g_decoder && g_decoder_target == &target) g_decoder->finish();
    return 0;
  }
  if (!g_decoder || g_decoder_target != &target) {
    g_decoder = std::make_unique<CuptiDecoder>(target, CuptiDecoderOptions{all_api, callback_name});
    g_decoder_target = &target;
  }
  std::uint64_t dropped = 0;
  for (const auto& c : work) {
    if (c.buffer && c.valid > 0) g_decoder->decode_buffer(c.buffer, c.valid, next_record);
    std::size_t n = 0;
    if (cuptiActivityGetNumDroppedRecords(c.context, c.stream, &n) == CUPTI_SUCCESS) dropped += n;
    std::lock_guard lock(g_mu);
    if (c.buffer) g_free.push_back(c.buffer);
  }
  if (final) g_decoder->finish();
  return dropped;
}

void cupti_flush_all() {
  if (g_active.load()) cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

void cupti_flush_completed() {
  std::lock_guard lock(g_flush_mu);
  if (g_active.load() && !g_exiting) cuptiActivityFlushAll(0);
}

bool cupti_active() { return g_active.load(); }

std::mutex& cupti_flush_mutex() { return g_flush_mu; }
std::mutex& cupti_queue_mutex() { return g_mu; }

void cupti_forget_after_fork() {
  g_active.store(false);
  g_hot.external_push.store(nullptr);
  g_hot.external_pop.store(nullptr);
  std::lock_guard lock(g_mu);
  g_completed.clear();
  g_decoder.release(); // bound to the parent's part file
  g_decoder_target = nullptr;
}

} // namespace dreamscope::tracer

// Called by the CUDA driver at cuInit when CUDA_INJECTION64_PATH names this library: the
// moment this process starts using CUDA.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  dreamscope::tracer::start();
  return 1;
}
