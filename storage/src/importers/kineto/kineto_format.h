// Reading the PyTorch profiler's (Kineto's) Chrome-trace JSON: what each category means,
// and the number and time formats of every profiler version since PyTorch 1.8 (numbers or
// numeric strings, integer or fractional microseconds, "stream 7" thread ids).
// Private to the storage library; the importer is import_kineto.cpp.
#pragma once

#include "dreamscope/storage/trace.h"

#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace dreamscope::kineto {

namespace od = simdjson::ondemand;

// The largest |time| in ns a trace may hold: ±4e18 ns is ±127 years around its clock's
// zero, so that any end minus any start fits in 64 bits (docs/importers.md, "Limits").
inline constexpr TimeNs kMaxAbsTimeNs = 4'000'000'000'000'000'000;

// What an X event becomes, by its cat.
enum class EventClass : std::uint8_t {
  CpuAnnotation, // cpu_op, user_annotation, python_function, Operator, and unknown CPU cats
  RuntimeApi,    // cuda_runtime, Runtime, mtia_runtime, *_runtime
  DriverApi,     // cuda_driver, *_driver
  GpuKernel,     // kernel, Kernel, mtia_ccp_events
  GpuMemcpy,     // gpu_memcpy, Memcpy
  GpuMemset,     // gpu_memset, Memset
  GpuSync,       // cuda_sync
  GpuAnnotation, // gpu_user_annotation, cuda_profiler_range, unknown cats with a device or stream
  ProfilerSpan,  // Trace: the profiler's own span, dropped as HTA does
  Unknown,       // decided per event: GPU annotation if it names a device or stream, else CPU
};

EventClass classify_category(std::string_view cat);


// A JSON scalar or raw JSON text as found in the input; views into simdjson's buffers,
// which live as long as the parser's document.
struct JsonValue {
  od::json_type type = od::json_type::null;
  std::string_view text; // numbers and compound values: the JSON text; strings: unescaped
  bool present = false;
};

std::string_view trim(std::string_view s);
bool is_integer_text(std::string_view s);
std::optional<std::int64_t> parse_int(std::string_view s);
std::optional<double> parse_double(std::string_view s);
// A JSON number of microseconds as exact nanoseconds (see kineto_format.cpp).
std::optional<TimeNs> parse_us_as_ns(std::string_view s);
// "[512, 1, 1]" → {512, 1, 1}; missing entries stay 0.
void parse_dim3(std::string_view s, std::int32_t out[3]);
// JSON's number grammar, strictly (simdjson's on-demand parser types 512c as a number).
bool is_json_number(std::string_view s);
// Whether raw JSON text (an array or object as found in args) is JSON by its grammar: its
// numbers by is_json_number, its strings' escapes and characters, commas and colons where
// they belong. Exporters write such an arg as it is, so nothing less may pass.
bool is_valid_json_text(std::string_view s);
CopyKind copy_kind_from_text(std::string_view s);
SyncKind sync_kind_from_text(std::string_view s);

struct RawArg {
  std::string_view key;
  JsonValue value;
};

// One traceEvents element, as read.
struct RawEvent {
  std::string_view ph, cat, name, bp;
  JsonValue pid, tid, ts, dur, id;
  std::vector<RawArg> args;
  bool args_not_object = false;

  void clear() {
    ph = cat = name = bp = {};
    pid = tid = ts = dur = id = JsonValue{};
    args.clear();
    args_not_object = false;
  }
  // A key written twice in one args object has its last value, as Python's json (which the
  // TensorBoard plugin and HTA read these files with) and JavaScript keep it.
  const JsonValue* arg(std::string_view key) const {
    for (auto it = args.rbegin(); it != args.rend(); ++it) {
      if (it->key == key) return &it->value;
    }
    return nullptr;
  }
};

// PyTorch without Kineto (USE_KINETO=0, Debian's python3-torch): the autograd profiler's own
// exporter (torch/autograd/profiler_util.py, EventList.export_chrome_trace) writes a bare array
// of X events without cat on the pseudo-processes "CPU functions" (operators and
// record_function ranges, tid the profiler's thread number) and, in older releases with
// use_cuda, "CUDA functions" (kernels, tid the device index); forks write "NPU functions".
enum class LegacyRow : std::uint8_t { None, Cpu, Device };
// Which of those rows a pid is: a string "<NAME> functions", NAME letters ("CPU": the host).
LegacyRow legacy_row(const JsonValue& pid);
// A remote (RPC) event's tid as the exporter writes it: " node_id:1, thread_id:4 ".
struct RemoteThread {
  std::int64_t node = 0, thread = 0;
};
std::optional<RemoteThread> legacy_remote_tid(const JsonValue& tid);
// The exporter writes no category: an operator (cpu_op) or a record_function range
// (user_annotation), told by PyTorch's naming. Operators are namespaced ("aten::mm",
// "autograd::engine::evaluate_function: AddmmBackward0", "torch::autograd::AccumulateGrad", a
// remote op "rpc_sync#f(w0 -> w1)#remote_op: aten::add") or autograd nodes ("AddmmBackward0");
// everything else is a range (the user's, ProfilerStep#N, Optimizer.step#SGD.step), as are
// the few operators named otherwise (TorchScript functions, "detach"), which the file does not
// tell apart.
std::string_view legacy_category(std::string_view name);

// A number, or (as PyTorch 1.8-1.10 wrote pid, tid and flow ids) a string of digits.
std::optional<std::int64_t> as_id(const JsonValue& v);

std::optional<std::int64_t> as_int(const JsonValue& v);
inline std::optional<std::int64_t> as_int(const JsonValue* v) { return v ? as_int(*v) : std::nullopt; }

// The type and number of an arg for the side table: integers Int, other numbers Double,
// strings String, arrays, objects, booleans and null Json (its text is the caller's to
// intern). A number token or JSON text that is not valid JSON (simdjson types 512c as a
// number without checking it) becomes a String, so that `export --chrome` writes valid JSON:
// false then.
bool type_arg(const JsonValue& v, EventArg& arg);

// The args of a "[memory]" instant event, as every PyTorch version writes them: "Device Type",
// "Device Id" and "Bytes" (1.9 on), "Addr", "Total Allocated" and "Total Reserved" (1.10 on).
// A key that is absent or null is absent (Bytes: 0, as the TensorBoard plugin reads it); an
// address may be unsigned 64-bit. nullopt when a key holds anything but an integer (the bytes
// and totals within +-limits::kMaxAbsBytes), and `bad_key` then names it. Track and time are
// the caller's.
std::optional<MemoryEventRecord> memory_event_args(const RawEvent& e, std::string_view& bad_key);

} // namespace dreamscope::kineto
