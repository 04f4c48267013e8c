// The C API on NVTX v3. The domain and its category names are created on first use, so
// a process that never annotates never touches NVTX.
#include "dreamscope/annotate.h"

#include <nvtx3/nvToolsExt.h>

#include <atomic>
#include <cstdlib>
#include <ctime>

namespace {

nvtxDomainHandle_t make_domain(const char* name) {
  nvtxDomainHandle_t h = nvtxDomainCreateA(name);
  nvtxDomainNameCategoryA(h, DS_CATEGORY_STEP, "step");
  nvtxDomainNameCategoryA(h, DS_CATEGORY_OPERATION, "operation");
  nvtxDomainNameCategoryA(h, DS_CATEGORY_FETCH, "fetch");
  nvtxDomainNameCategoryA(h, DS_CATEGORY_PREP, "prep");
  nvtxDomainNameCategoryA(h, DS_CATEGORY_WAIT, "wait");
  nvtxDomainNameCategoryA(h, DS_CATEGORY_CPU, "cpu");
  nvtxDomainNameCategoryA(h, DS_CATEGORY_COLLECTIVE, "collective");
  return h;
}

nvtxDomainHandle_t domain() {
  static const nvtxDomainHandle_t d = make_domain("dreamscope");
  return d;
}

// The ranges dreamscope's own Python instrumentation makes (ds_auto_*): the same categories
// in a domain of their own, so that the merge can let a program's own annotations of a kind
// replace the automatic ones of that kind (docs/tracing.md, "Python and PyTorch").
nvtxDomainHandle_t auto_domain() {
  static const nvtxDomainHandle_t d = make_domain(DS_AUTO_DOMAIN);
  return d;
}

nvtxEventAttributes_t attributes(int category, int64_t payload) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.category = static_cast<uint32_t>(category);
  if (payload != DS_NO_PAYLOAD) {
    a.payloadType = NVTX_PAYLOAD_TYPE_INT64;
    a.payload.llValue = payload;
  }
  return a;
}

nvtxEventAttributes_t ascii(int category, const char* name, int64_t payload) {
  nvtxEventAttributes_t a = attributes(category, payload);
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = name;
  return a;
}

// The thread CPU time at the push of each open range of this thread, for fetch and prep
// ranges (-1 for others), so that their pop can say how much of the range was CPU work. A
// syscall per fetch or prep, and only when a tool is attached: these ranges are per batch.
// Read after the push is recorded and before the pop is, so that the CPU interval lies inside
// the range (a thread's first push also registers its buffer, which is not the range's work).
constexpr int kMaxDepth = 64;
thread_local int t_depth = 0;
thread_local int64_t t_cpu_at_push[kMaxDepth];
thread_local bool t_auto_at_push[kMaxDepth];

int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Recording paused (ds_tracing_pause): a paused annotation must cost what an untraced one
// does, so nothing is noted then. Each pause also starts a new epoch: the tracer ends every
// range open at a pause there and ignores the pops of ranges pushed before it, and a thread's
// first push or pop in a new epoch empties its stack of open ranges the same way.
std::atomic<bool> g_paused{false};
std::atomic<uint32_t> g_epoch{0};
thread_local uint32_t t_epoch = 0;

// Whether this thread notes open ranges now (after emptying its stack in a new epoch).
bool noting() {
  if (!ds_is_traced() || g_paused.load(std::memory_order_relaxed)) return false;
  const uint32_t epoch = g_epoch.load(std::memory_order_relaxed);
  if (t_epoch != epoch) {
    t_epoch = epoch;
    t_depth = 0;
  }
  return true;
}

void note_push(int category, bool automatic) {
  if (!noting()) return;
  if (t_depth < kMaxDepth) {
    t_cpu_at_push[t_depth] = category == DS_CATEGORY_FETCH || category == DS_CATEGORY_PREP ? thread_cpu_ns() : -1;
    t_auto_at_push[t_depth] = automatic;
  }
  ++t_depth;
}

// Registered handles for the shorthands: their names never need copying.
struct Names {
  nvtxStringHandle_t step, fetch, prep, wait;
};

const Names& names() {
  static const Names n{nvtxDomainRegisterStringA(domain(), "step"), nvtxDomainRegisterStringA(domain(), "fetch"),
                       nvtxDomainRegisterStringA(domain(), "prep"), nvtxDomainRegisterStringA(domain(), "wait")};
  return n;
}

void push_registered(int category, nvtxStringHandle_t name, int64_t payload) {
  nvtxEventAttributes_t a = attributes(category, payload);
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = name;
  nvtxDomainRangePushEx(domain(), &a);
  note_push(category, false);
}

void note_pop() {
  if (!noting() || t_depth == 0) return;
  --t_depth;
  if (t_depth >= kMaxDepth || t_cpu_at_push[t_depth] < 0) return;
  nvtxEventAttributes_t a = attributes(DS_CATEGORY_CPU, thread_cpu_ns() - t_cpu_at_push[t_depth]);
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = "cpu";
  nvtxDomainMarkEx(t_auto_at_push[t_depth] ? auto_domain() : domain(), &a);
}

// A range and a mark of either domain: the program's own (ds_*) and the Python layer's (ds_auto_*).
void push_ascii(bool automatic, int category, const char* name, int64_t payload) {
  nvtxEventAttributes_t a = ascii(category, name, payload);
  nvtxDomainRangePushEx(automatic ? auto_domain() : domain(), &a);
  note_push(category, automatic);
}

void pop(bool automatic) {
  note_pop();
  nvtxDomainRangePop(automatic ? auto_domain() : domain());
}

void mark_ascii(bool automatic, int category, const char* name, int64_t payload) {
  nvtxEventAttributes_t a = ascii(category, name, payload);
  nvtxDomainMarkEx(automatic ? auto_domain() : domain(), &a);
}

} // namespace

extern "C" {

ds_string_t ds_register_string(const char* name) { return nvtxDomainRegisterStringA(domain(), name); }

void ds_range_push(int category, const char* name, int64_t payload) { push_ascii(false, category, name, payload); }

void ds_range_push_registered(int category, ds_string_t name, int64_t payload) {
  // A null handle (no tool attached when it was registered) still makes a valid range.
  push_registered(category, static_cast<nvtxStringHandle_t>(const_cast<void*>(name)), payload);
}

void ds_range_pop(void) { pop(false); }

uint64_t ds_range_start(int category, const char* name, int64_t payload) {
  nvtxEventAttributes_t a = ascii(category, name, payload);
  return nvtxDomainRangeStartEx(domain(), &a);
}

void ds_range_end(uint64_t id) { nvtxDomainRangeEnd(domain(), id); }

void ds_mark(int category, const char* name, int64_t payload) { mark_ascii(false, category, name, payload); }

void ds_step_push(int64_t step) { push_registered(DS_CATEGORY_STEP, names().step, step); }
void ds_fetch_push(int64_t batch_id) { push_registered(DS_CATEGORY_FETCH, names().fetch, batch_id); }
void ds_prep_push(int64_t batch_id) { push_registered(DS_CATEGORY_PREP, names().prep, batch_id); }
void ds_wait_push(int64_t batch_id) { push_registered(DS_CATEGORY_WAIT, names().wait, batch_id); }

void ds_auto_range_push(int category, const char* name, int64_t payload) { push_ascii(true, category, name, payload); }
void ds_auto_range_pop(void) { pop(true); }
void ds_auto_mark(int category, const char* name, int64_t payload) { mark_ascii(true, category, name, payload); }

void ds_tracing_pause(void) {
  g_paused.store(true, std::memory_order_relaxed);
  g_epoch.fetch_add(1, std::memory_order_relaxed);
  ds_mark(DS_CATEGORY_CONTROL, "pause", DS_NO_PAYLOAD);
}

void ds_tracing_resume(void) {
  ds_mark(DS_CATEGORY_CONTROL, "resume", DS_NO_PAYLOAD);
  g_paused.store(false, std::memory_order_relaxed);
}

int ds_is_traced(void) {
  static const int traced = [] {
    const char* p = std::getenv("NVTX_INJECTION64_PATH");
    return p && *p ? 1 : 0;
  }();
  return traced;
}

} // extern "C"
