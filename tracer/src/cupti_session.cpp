#include "cupti_session.h"

#include "cupti_decoder.h"
#include "recorder.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <unistd.h>
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
// Buffers kept zeroed and ready for CUPTI's requests. CUPTI zeroes a buffer it is handed on
// the thread that asked (a traced thread) unless told the buffers come zeroed: on the H200,
// 26 such requests cost PyTorch's threads 27 ms in a 60-step run of ~3 ms steps (CUPTI's
// own overhead records, activity_buffer_request). The writer zeroes them instead.
constexpr std::size_t kReadyBuffers = 4;

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
  std::vector<std::uint8_t*> free; // every one zeroed
  std::size_t allocated = 0;
  std::vector<Completed> completed;
  std::atomic<bool> active{false};
  bool system_thread_ids = false;
  bool all_api = false;
  std::chrono::steady_clock::time_point started;
  // The thread that timed CUPTI's cost per call: its calls are left out of the trace.
  std::atomic<std::uint64_t> calibration_thread{0};
  std::atomic<bool> calibrated{false};
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
    // The writer keeps ready ones; this is a burst it did not keep up with.
    *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, kBufferBytes));
    if (*buffer) {
      std::memset(*buffer, 0, kBufferBytes);
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

// Sets CUPTI's recording of every runtime and driver call whose name `matches` to `record`;
// returns how many calls CUPTI agreed to.
template <class Matches>
int set_recording_of_calls(Matches matches, bool record) {
  int set = 0;
  for (CUpti_CallbackId cbid = 1; cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE; ++cbid) {
    const std::string name = CuptiDecoder::api_display_name(callback_name(CUPTI_CB_DOMAIN_RUNTIME_API, cbid));
    if (matches(name) && cuptiActivityEnableRuntimeApi(cbid, record) == CUPTI_SUCCESS) ++set;
  }
  for (CUpti_CallbackId cbid = 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid) {
    const std::string name = CuptiDecoder::api_display_name(callback_name(CUPTI_CB_DOMAIN_DRIVER_API, cbid));
    if (matches(name) && cuptiActivityEnableDriverApi(cbid, record) == CUPTI_SUCCESS) ++set;
  }
  return set;
}

// CUPTI records a call only to have the decoder skip it: told not to record it at all, the
// traced thread is spared the record (docs/tracing.md, "What CUDA recording costs").
int stop_recording_noisy_api() { return set_recording_of_calls(CuptiDecoder::is_noisy_api, false); }

// The calls an analysis reads, asked for one by one with neither API kind enabled: CUPTI
// then need not record (nor, where it can tell, intercept) the hundreds of other calls a
// framework makes per step. Returns how many calls it agreed to record.
int record_used_api_only() { return set_recording_of_calls(CuptiDecoder::is_used_api, true); }

void start() {
  CuptiState& st = state();
  if (st.active.load() || !tracer_start() || !tracer_config().cuda) return;
  {
    // Every buffer this library hands CUPTI is zeroed (kReadyBuffers). A CUPTI that does not
    // know the attribute zeroes them again itself: slower, never wrong.
    std::uint8_t zeroed = 1;
    std::size_t size = sizeof(zeroed);
    cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &size, &zeroed);
  }
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
  st.all_api = tracer_config().cuda_api_all;
  const bool used_only = !st.all_api && tracer_config().cuda_api_used_only;
  r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r == CUPTI_SUCCESS && !used_only) r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME);
  if (r != CUPTI_SUCCESS) {
    // Another profiler holding CUPTI's one subscriber, no permission, no device: degrade.
    tracer_add_warning("CUPTI refused activity tracing (" + result_text(r) + "): recording NVTX and the CPU side only");
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_RUNTIME);
    return;
  }
  const CUpti_ActivityKind optional[] = {
      CUPTI_ACTIVITY_KIND_MEMCPY,   CUPTI_ACTIVITY_KIND_MEMSET,      CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
      CUPTI_ACTIVITY_KIND_OVERHEAD, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_DEVICE,
      CUPTI_ACTIVITY_KIND_CONTEXT,  CUPTI_ACTIVITY_KIND_CUDA_EVENT};
  for (auto kind : optional) {
    r = cuptiActivityEnable(kind);
    if (r != CUPTI_SUCCESS) {
      tracer_add_warning("CUPTI activity kind " + std::to_string(static_cast<int>(kind)) + " not recorded: " +
                         result_text(r));
    }
  }
  // The API calls, after the kinds: enabling a kind overrides what was set per call before it.
  if (used_only && record_used_api_only() == 0) {
    tracer_add_warning("CUPTI cannot record single CUDA API calls: recording every call but the frequent cheap ones");
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME);
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER);
    stop_recording_noisy_api();
  } else if (!used_only) {
    r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER);
    if (r != CUPTI_SUCCESS) tracer_add_warning("CUPTI does not record CUDA driver calls: " + result_text(r));
    if (!st.all_api) stop_recording_noisy_api();
  }
  st.started = std::chrono::steady_clock::now();
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
  st.decoder->set_calibration_thread(st.calibration_thread.load());
  std::uint64_t dropped = 0;
  for (const auto& c : work) {
    if (c.buffer && c.valid > 0) st.decoder->decode_buffer(c.buffer, c.valid, next_record);
    dropped += c.dropped;
    if (c.buffer) std::memset(c.buffer, 0, kBufferBytes); // CUPTI takes it back as zeroed
    std::lock_guard lock(st.mu);
    if (c.buffer) st.free.push_back(c.buffer);
  }
  if (final) st.decoder->finish();
  return dropped;
}

std::optional<CalibrationRecord> cupti_calibrate_api_cost() {
  CuptiState& st = state();
  if (!st.active.load() || st.calibrated.load()) return std::nullopt;
  // Not while cuInit, which started CUPTI, may still be initializing the driver.
  if (std::chrono::steady_clock::now() - st.started < std::chrono::milliseconds(200)) return std::nullopt;
  st.calibrated.store(true);
  // The process's own driver, already loaded (it loaded this library): never a second one.
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!driver) return std::nullopt;
  using DriverGetVersion = int (*)(int*);
  auto get_version = reinterpret_cast<DriverGetVersion>(dlsym(driver, "cuDriverGetVersion"));
  if (!get_version) {
    dlclose(driver);
    return std::nullopt;
  }
  std::lock_guard lock(st.flush_mu);
  if (st.exiting) {
    dlclose(driver);
    return std::nullopt;
  }
  st.calibration_thread.store(static_cast<std::uint64_t>(gettid()));
  // The cheapest call the driver has, recorded and not in alternating rounds, so that a
  // change of the machine's state falls on both: the difference is what CUPTI's record of one
  // call costs the calling thread (its callback, two timestamps, the record, the external
  // correlation of the enclosing range where there is one).
  constexpr int kRounds = 9, kCalls = 500;
  const CUpti_CallbackId cbid = CUPTI_DRIVER_TRACE_CBID_cuDriverGetVersion;
  auto time_calls = [&] {
    int version = 0;
    const std::int64_t t0 = monotonic_ns();
    for (int i = 0; i < kCalls; ++i) get_version(&version);
    return static_cast<double>(monotonic_ns() - t0) / kCalls;
  };
  std::vector<double> costs;
  bool toggled = true;
  for (int r = 0; r < kRounds && toggled; ++r) {
    toggled = cuptiActivityEnableDriverApi(cbid, 1) == CUPTI_SUCCESS;
    const double recorded = time_calls();
    toggled = toggled && cuptiActivityEnableDriverApi(cbid, 0) == CUPTI_SUCCESS;
    const double plain = time_calls();
    costs.push_back(recorded - plain);
  }
  cuptiActivityEnableDriverApi(cbid, st.all_api ? 1 : 0);
  dlclose(driver);
  if (!toggled || costs.empty()) return std::nullopt;
  std::sort(costs.begin(), costs.end());
  const double cost = std::max(0.0, costs[costs.size() / 2]);
  return CalibrationRecord{"cuda_api", cost, std::int64_t{kRounds} * kCalls,
                           "self-calibration once CUDA started: 9 x 500 cuDriverGetVersion calls recorded by CUPTI, "
                           "less as many not recorded (median of rounds)"};
}

void cupti_keep_buffers_ready() {
  CuptiState& st = state();
  if (!st.active.load()) return;
  for (;;) {
    {
      std::lock_guard lock(st.mu);
      if (st.free.size() >= kReadyBuffers || st.allocated >= kMaxBuffers) return;
      ++st.allocated; // reserved: a request meanwhile cannot go past the cap
    }
    auto* b = static_cast<std::uint8_t*>(std::aligned_alloc(8, kBufferBytes));
    if (b) std::memset(b, 0, kBufferBytes); // every page touched here, not by a traced thread
    std::lock_guard lock(st.mu);
    if (!b) {
      --st.allocated;
      return;
    }
    st.free.push_back(b);
  }
}

std::uint64_t cupti_calibration_calls() { return state().decoder ? state().decoder->counts().calibration_api : 0; }

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
