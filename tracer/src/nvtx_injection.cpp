// The NVTX v3 injection entry point. NVTX (header-only, compiled into every library and
// program that annotates) loads NVTX_INJECTION64_PATH on its first call and asks it to
// fill its function tables; from then on every NVTX call in that module lands here.
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include "event_buffer.h"
#include "recorder.h"
#include "recording_pause.h"

#include <dreamscope/storage/tracer_environment.h>

#include <cstdint>
#include <cwchar>
#include <string>

namespace dreamscope::tracer {
namespace {

struct Attributes {
  std::uint32_t name = 0;
  std::uint32_t category = 0;
  std::int64_t payload = kNoPayload;
};

std::uint32_t intern_wide(const wchar_t* s) {
  if (!s) return 0;
  std::string utf8;
  for (; *s; ++s) {
    const auto c = static_cast<std::uint32_t>(*s);
    if (c < 0x80) {
      utf8 += static_cast<char>(c);
    } else if (c < 0x800) {
      utf8 += static_cast<char>(0xC0 | (c >> 6));
      utf8 += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      utf8 += static_cast<char>(0xE0 | (c >> 12));
      utf8 += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      utf8 += static_cast<char>(0x80 | (c & 0x3F));
    } else {
      utf8 += static_cast<char>(0xF0 | (c >> 18));
      utf8 += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      utf8 += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      utf8 += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return strings().intern(utf8);
}

// Registered strings and domains are handed out as their table index: a handle costs the
// hot path nothing to resolve.
std::uint32_t registered_id(nvtxStringHandle_t h) {
  return static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(h));
}
std::uint16_t domain_index(nvtxDomainHandle_t d) {
  return static_cast<std::uint16_t>(reinterpret_cast<std::uintptr_t>(d));
}

inline Attributes decode(const nvtxEventAttributes_t* a) {
  Attributes out;
  if (!a) return out;
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: out.name = intern_ascii(a->message.ascii); break;
    case NVTX_MESSAGE_TYPE_UNICODE: out.name = intern_wide(a->message.unicode); break;
    case NVTX_MESSAGE_TYPE_REGISTERED: out.name = registered_id(a->message.registered); break;
    default: break;
  }
  out.category = a->category;
  switch (a->payloadType) {
    case NVTX_PAYLOAD_TYPE_INT64: out.payload = a->payload.llValue; break;
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64: out.payload = static_cast<std::int64_t>(a->payload.ullValue); break;
    case NVTX_PAYLOAD_TYPE_INT32: out.payload = a->payload.iValue; break;
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32: out.payload = a->payload.uiValue; break;
    case NVTX_PAYLOAD_TYPE_DOUBLE: out.payload = static_cast<std::int64_t>(a->payload.dValue); break;
    case NVTX_PAYLOAD_TYPE_FLOAT: out.payload = static_cast<std::int64_t>(a->payload.fValue); break;
    default: break;
  }
  return out;
}

// Every entry point reads the clock first: that instant is the event's time, and on the calls
// the buffer samples (ThreadBuffer::sample_cost) the start of what the call cost.
inline std::uint64_t now() { return ticks(g_hot.use_tsc); }

inline Event make(std::uint64_t at, EventKind kind, std::uint32_t name, std::uint16_t domain, std::uint32_t category,
                  std::int64_t payload, std::uint64_t id = 0) {
  return Event{at, payload, id, name, domain, static_cast<std::uint8_t>(kind),
               static_cast<std::uint8_t>(category > 255 ? 255 : category)};
}

inline void sample_cost(ThreadBuffer& b, EventKind kind, std::uint64_t at) {
  b.sample_cost(kind, at, g_hot.use_tsc, g_hot.cost_sample_cap);
}

inline int push(std::uint64_t at, std::uint16_t domain, const Attributes& a) {
  ThreadBuffer& b = thread_buffer();
  if (auto ext = g_hot.external_push.load(std::memory_order_relaxed)) {
    ext((std::uint64_t{b.index()} << 40) | b.position());
  }
  b.push(make(at, EventKind::Push, a.name, domain, a.category, a.payload));
  sample_cost(b, EventKind::Push, at);
  return 0;
}

// The mark that ends a probe step (writer_thread.cpp, "Cost probes"), in the tracer's domain,
// its payload the pushes the step counted.
void mark_probe_step(ThreadBuffer& b, std::uint64_t at, std::uint32_t counted) {
  static const std::uint16_t domain =
      static_cast<std::uint16_t>(domains().create(tracer_environment::kTracerDomain));
  static const std::uint32_t name = intern_ascii(tracer_environment::kProbeStepMark);
  b.add(make(at, EventKind::Mark, name, domain, 0, counted));
}

void time_counted_ranges(ThreadBuffer& b);

// NVTX keeps one stack of pushed ranges per domain and thread: a pop ends the innermost range
// of its own domain (the writer matches it), whatever other domains pushed since.
inline int pop(std::uint64_t at, std::uint16_t domain) {
  ThreadBuffer& b = thread_buffer();
  b.pop(make(at, EventKind::Pop, 0, domain, 0, kNoPayload));
  if (auto ext = g_hot.external_pop.load(std::memory_order_relaxed)) ext();
  sample_cost(b, EventKind::Pop, at);
  // After the pop's own cost is sampled: the counted ranges timed here (about 2 us) are not
  // what a pop costs, and under the 5 us cap a sampled pop would carry them into its window.
  if (std::uint32_t counted = 0; b.probe_step_end(counted)) [[unlikely]] {
    mark_probe_step(b, at, counted);
    time_counted_ranges(b);
  }
  return 0;
}

inline nvtxRangeId_t start(std::uint64_t at, std::uint16_t domain, const Attributes& a) {
  ThreadBuffer& b = thread_buffer();
  const std::uint64_t id = (std::uint64_t{b.index()} << 40) | b.position();
  b.add(make(at, EventKind::Start, a.name, domain, a.category, a.payload, id));
  sample_cost(b, EventKind::Start, at);
  return id;
}

inline void end(std::uint64_t at, nvtxRangeId_t id) {
  ThreadBuffer& b = thread_buffer();
  b.add(make(at, EventKind::End, 0, 0, 0, kNoPayload, id));
  sample_cost(b, EventKind::End, at);
}

inline void mark(std::uint64_t at, std::uint16_t domain, const Attributes& a) {
  ThreadBuffer& b = thread_buffer();
  b.add(make(at, EventKind::Mark, a.name, domain, a.category, a.payload));
  sample_cost(b, EventKind::Mark, at);
}

Attributes named(std::uint32_t name) { return Attributes{.name = name}; }

// While a cost probe runs (writer_thread.cpp, "Cost probes"), a push inside two open ranges is
// counted and not recorded, and so is its pop, whenever it comes (the buffer marks its depth as
// it marks a refused push's): the thread's CPU time per call then, against the recorded windows
// beside it, is what recording costs the job. Checked before the clock is read and the name
// decoded, so that a counted call costs little more than an untraced one. A thread's two
// outermost levels (a step and its phases, a loader's fetch) are always recorded. Off, a load
// and a branch.
inline bool counted_push() {
  if (!g_hot.cost_probe.load(std::memory_order_relaxed)) [[likely]] return false;
  return thread_buffer().count_push(g_hot.cost_probe_steps.load(std::memory_order_relaxed));
}
// The pop of a push that was counted, or refused: nothing to record, no clock to read.
inline bool skipped_pop() { return thread_buffer().skip_pop(); }

// CORE module: the default domain.
void NVTX_API mark_ex(const nvtxEventAttributes_t* a) {
  const auto at = now();
  mark(at, 0, decode(a));
}
void NVTX_API mark_a(const char* m) {
  const auto at = now();
  mark(at, 0, named(intern_ascii(m)));
}
void NVTX_API mark_w(const wchar_t* m) {
  const auto at = now();
  mark(at, 0, named(intern_wide(m)));
}
nvtxRangeId_t NVTX_API start_ex(const nvtxEventAttributes_t* a) {
  const auto at = now();
  return start(at, 0, decode(a));
}
nvtxRangeId_t NVTX_API start_a(const char* m) {
  const auto at = now();
  return start(at, 0, named(intern_ascii(m)));
}
nvtxRangeId_t NVTX_API start_w(const wchar_t* m) {
  const auto at = now();
  return start(at, 0, named(intern_wide(m)));
}
void NVTX_API end_range(nvtxRangeId_t id) { end(now(), id); }
int NVTX_API push_ex(const nvtxEventAttributes_t* a) {
  if (counted_push()) return 0;
  const auto at = now();
  return push(at, 0, decode(a));
}
int NVTX_API push_a(const char* m) {
  if (counted_push()) return 0;
  const auto at = now();
  return push(at, 0, named(intern_ascii(m)));
}
int NVTX_API push_w(const wchar_t* m) {
  if (counted_push()) return 0;
  const auto at = now();
  return push(at, 0, named(intern_wide(m)));
}
int NVTX_API pop_range() { return skipped_pop() ? 0 : pop(now(), 0); }

// What a counted range costs this thread now: at the end of each probe step, kTimedCountedRanges
// counted pushes and pops back to back, through function pointers as NVTX calls them, about 2 us
// between two steps. Start-up calibration's figure (nvtx_range_counted) is taken at a moment that
// is often slower than the run (6.4 to 12.1 ns a range on the development VM, against 7.3 among
// the job's steps), and probe steps need it in the state they ran in (whatif/probe_steps.h). The
// interval is recorded as the tracer's own work on the thread, which correction removes.
void time_counted_ranges(ThreadBuffer& b) {
  int (*volatile push)(const char*) = push_a;
  int (*volatile pop)() = pop_range;
  const std::uint64_t start = now();
  b.begin_counted_timing();
  for (int i = 0; i < ThreadBuffer::kTimedCountedRanges; ++i) {
    push(nullptr);
    pop();
  }
  b.end_counted_timing();
  const std::uint64_t end = now();
  b.add(make(start, EventKind::CountedTiming, 0, 0, 0, static_cast<std::int64_t>(end)));
}
void NVTX_API name_category_a(std::uint32_t c, const char* n) { domains().name_category(0, c, n ? n : ""); }
void NVTX_API name_category_w(std::uint32_t c, const wchar_t* n) {
  domains().name_category(0, c, strings().get(intern_wide(n)));
}
void NVTX_API name_os_thread_a(std::uint32_t tid, const char* n) { tracer_name_os_thread(tid, n ? n : ""); }
void NVTX_API name_os_thread_w(std::uint32_t tid, const wchar_t* n) {
  tracer_name_os_thread(tid, std::string(strings().get(intern_wide(n))));
}

// CORE2 module: domains, registered strings.
// Also the way in of ds_tracing_pause and ds_tracing_resume (recording_pause.h): its slot
// stays filled while paused, and its other marks made then are dropped by the writer.
void NVTX_API domain_mark_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  const auto at = now();
  if (a && a->category == kControlCategory && a->messageType == NVTX_MESSAGE_TYPE_ASCII &&
      handle_control_mark(at, domain_index(d), a->message.ascii)) {
    return;
  }
  mark(at, domain_index(d), decode(a));
}
nvtxRangeId_t NVTX_API domain_start_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  const auto at = now();
  return start(at, domain_index(d), decode(a));
}
void NVTX_API domain_end(nvtxDomainHandle_t, nvtxRangeId_t id) { end(now(), id); }
int NVTX_API domain_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  if (counted_push()) return 0;
  const auto at = now();
  return push(at, domain_index(d), decode(a));
}
int NVTX_API domain_pop(nvtxDomainHandle_t d) { return skipped_pop() ? 0 : pop(now(), domain_index(d)); }
// Resources (names for memory, streams, ...) are not recorded; a non-null handle keeps
// callers that check for null working.
nvtxResourceHandle_t NVTX_API domain_resource_create(nvtxDomainHandle_t, nvtxResourceAttributes_t*) {
  static int dummy;
  return reinterpret_cast<nvtxResourceHandle_t>(&dummy);
}
void NVTX_API domain_resource_destroy(nvtxResourceHandle_t) {}
void NVTX_API domain_name_category_a(nvtxDomainHandle_t d, std::uint32_t c, const char* n) {
  domains().name_category(domain_index(d), c, n ? n : "");
}
void NVTX_API domain_name_category_w(nvtxDomainHandle_t d, std::uint32_t c, const wchar_t* n) {
  domains().name_category(domain_index(d), c, strings().get(intern_wide(n)));
}
nvtxStringHandle_t NVTX_API domain_register_string_a(nvtxDomainHandle_t, const char* s) {
  return reinterpret_cast<nvtxStringHandle_t>(static_cast<std::uintptr_t>(strings().intern(s ? s : "")));
}
nvtxStringHandle_t NVTX_API domain_register_string_w(nvtxDomainHandle_t, const wchar_t* s) {
  return reinterpret_cast<nvtxStringHandle_t>(static_cast<std::uintptr_t>(intern_wide(s)));
}
nvtxDomainHandle_t NVTX_API domain_create_a(const char* name) {
  return reinterpret_cast<nvtxDomainHandle_t>(static_cast<std::uintptr_t>(domains().create(name ? name : "")));
}
nvtxDomainHandle_t NVTX_API domain_create_w(const wchar_t* name) {
  return reinterpret_cast<nvtxDomainHandle_t>(
      static_cast<std::uintptr_t>(domains().create(strings().get(intern_wide(name)))));
}
void NVTX_API domain_destroy(nvtxDomainHandle_t) {}
void NVTX_API initialize(const void*) {}

template <class F>
void assign(NvtxFunctionTable table, unsigned size, unsigned id, F f) {
  if (id < size && table[id]) *table[id] = reinterpret_cast<NvtxFunctionPointer>(f);
}

// A slot whose function records an event: emptied while the program has paused recording.
template <class F>
void assign_recording(NvtxFunctionTable table, unsigned size, unsigned id, F f) {
  if (id < size && table[id]) keep_recording_slot(table[id], reinterpret_cast<NvtxFunctionPointer>(f));
}

} // namespace

// What NVTX's function tables call, for self-calibration to time the very same path.
int calibration_push(const char* name) { return push_a(name); }
int calibration_pop() { return pop_range(); }
void calibration_mark(const char* name) { mark_a(name); }

} // namespace dreamscope::tracer

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  using namespace dreamscope::tracer;
  // Returning 0 leaves every NVTX call of that module a no-op: what we want when tracing
  // could not start or NVTX was not asked for.
  if (!tracer_start() || !tracer_config().nvtx || !get_export_table) return 0;
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (!callbacks || !callbacks->GetModuleFunctionTable) return 0;

  NvtxFunctionTable core = nullptr;
  unsigned core_size = 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &core_size) || !core) return 0;
  assign_recording(core, core_size, NVTX_CBID_CORE_MarkEx, mark_ex);
  assign_recording(core, core_size, NVTX_CBID_CORE_MarkA, mark_a);
  assign_recording(core, core_size, NVTX_CBID_CORE_MarkW, mark_w);
  assign_recording(core, core_size, NVTX_CBID_CORE_RangeStartEx, start_ex);
  assign_recording(core, core_size, NVTX_CBID_CORE_RangeStartA, start_a);
  assign_recording(core, core_size, NVTX_CBID_CORE_RangeStartW, start_w);
  assign_recording(core, core_size, NVTX_CBID_CORE_RangeEnd, end_range);
  assign_recording(core, core_size, NVTX_CBID_CORE_RangePushEx, push_ex);
  assign_recording(core, core_size, NVTX_CBID_CORE_RangePushA, push_a);
  assign_recording(core, core_size, NVTX_CBID_CORE_RangePushW, push_w);
  assign_recording(core, core_size, NVTX_CBID_CORE_RangePop, pop_range);
  assign(core, core_size, NVTX_CBID_CORE_NameCategoryA, name_category_a);
  assign(core, core_size, NVTX_CBID_CORE_NameCategoryW, name_category_w);
  assign(core, core_size, NVTX_CBID_CORE_NameOsThreadA, name_os_thread_a);
  assign(core, core_size, NVTX_CBID_CORE_NameOsThreadW, name_os_thread_w);

  NvtxFunctionTable core2 = nullptr;
  unsigned core2_size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &core2_size) && core2) {
    assign(core2, core2_size, NVTX_CBID_CORE2_DomainMarkEx, domain_mark_ex);
    assign_recording(core2, core2_size, NVTX_CBID_CORE2_DomainRangeStartEx, domain_start_ex);
    assign_recording(core2, core2_size, NVTX_CBID_CORE2_DomainRangeEnd, domain_end);
    assign_recording(core2, core2_size, NVTX_CBID_CORE2_DomainRangePushEx, domain_push_ex);
    assign_recording(core2, core2_size, NVTX_CBID_CORE2_DomainRangePop, domain_pop);
    assign(core2, core2_size, NVTX_CBID_CORE2_DomainResourceCreate, domain_resource_create);
    assign(core2, core2_size, NVTX_CBID_CORE2_DomainResourceDestroy, domain_resource_destroy);
    assign(core2, core2_size, NVTX_CBID_CORE2_DomainNameCategoryA, domain_name_category_a);
    assign(core2, core2_size, NVTX_CBID_CORE2_DomainNameCategoryW, domain_name_category_w);
    assign(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringA, domain_register_string_a);
    assign(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringW, domain_register_string_w);
    assign(core2, core2_size, NVTX_CBID_CORE2_DomainCreateA, domain_create_a);
    assign(core2, core2_size, NVTX_CBID_CORE2_DomainCreateW, domain_create_w);
    assign(core2, core2_size, NVTX_CBID_CORE2_DomainDestroy, domain_destroy);
    assign(core2, core2_size, NVTX_CBID_CORE2_Initialize, initialize);
  }
  return 1;
}
