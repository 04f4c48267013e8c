// PyTorch profiler (Kineto) Chrome-trace JSON → Trace: what the events mean. Reading the
// JSON is kineto_json_reader.h's: each traceEvents element arrives here as a RawEvent and
// becomes a row right away. Names of processes, threads and streams arrive in metadata
// events that Kineto writes after the events they name, and flows are paired by id, so both
// are resolved once the pass ends.
#include "dreamscope/storage/collectives.h"
#include "dreamscope/storage/importers.h"
#include "dreamscope/storage/limits.h"
#include "dreamscope/storage/steps.h"
#include "dreamscope/storage/trace_file.h"

#include "importers/common/import_input.h"
#include "importers/kineto/kineto_json_reader.h"
#include "importers/kineto/kineto_devices.h"
#include "importers/kineto/kineto_flows.h"
#include "importers/kineto/kineto_format.h"

#include <simdjson.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <unordered_map>
#include <utility>

namespace dreamscope {

namespace {

using namespace kineto;

class KinetoImporter final : public KinetoJsonSink {
 public:
  KinetoImporter(const std::filesystem::path& path, ImportStats& stats, const ImportProgressFn& progress,
                 ImportDetail detail)
      : path_(path), stats_(stats), progress_(progress), detail_(detail) {}

  // `streamed`: the text a piece at a time as it is read (open_input), else all at once.
  Trace run(bool streamed) {
    InputBuffer input = streamed ? open_input(path_, progress_) : read_input(path_, progress_);
    stats_.bytes = input.size;

    // A UTF-8 byte order mark, which some editors add, is not JSON: parse after it.
    std::size_t readable = input.ensure(4096);
    const std::size_t bom = readable >= 3 && std::memcmp(input.data(), "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
    std::size_t first = bom;
    for (; first < input.size; ++first) {
      if (first == readable) readable = input.ensure(2 * readable);
      if (!std::isspace(static_cast<unsigned char>(input.data()[first]))) break;
    }
    if (first == input.size) fail("empty file, not a trace");
    const char c = input.data()[first];
    if (c != '{' && c != '[') {
      fail(input.was_gzip ? "gzip data that is not JSON, so not a PyTorch profiler trace"
                          : "not JSON, so not a PyTorch profiler trace (and not SQLite either)");
    }

    builder_.set_source(TraceSource::Kineto);
    builder_.set_origin(path_.string());
    builder_.set_meta("kineto.file", path_.string());
    pytorch_ = builder_.intern("pytorch");
    // A Kineto event takes 150 to 250 bytes of JSON with 2 to 6 args: room for as many rows as
    // the file could hold at 128 bytes each. Rows never written cost address space, not memory.
    const std::size_t rows = input.size / 128;
    builder_.reserve(rows / 8, rows / 4, rows, rows * 2);

    if (!reader_.read(input, bom, first)) fail("no traceEvents array, so not a PyTorch profiler trace");
    finish();
    return std::move(builder_).build();
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw TraceError(path_.string() + ": " + what); }

  // KinetoJsonSink: the top-level fields but traceEvents, whose elements come to handle_event.
  void top_level_field(std::string_view key, od::value& value, od::document& doc) override {
    if (key == "deviceProperties" || key == "computeProperties") {
      // computeProperties: PyTorch 1.8-1.9's name for the same list.
      read_device_properties(value, doc);
    } else {
      read_top_level_meta(key, value, doc);
    }
  }

  std::string example() const {
    std::string e = "event #" + std::to_string(stats_.events_read);
    if (!event().name.empty()) e += " '" + std::string(event().name.substr(0, 80)) + "'";
    if (event().ts.present) e += " at ts " + std::string(event().ts.text);
    return e;
  }

  const RawEvent& event() const { return *event_; }

  void handle_event(const RawEvent& element) override {
    event_ = &element;
    const std::string_view ph = event().ph;
    if (ph == "X") return handle_complete();
    if (ph == "M") return handle_metadata();
    if (ph == "s" || ph == "f" || ph == "t") return handle_flow();
    if (ph.empty()) {
      stats_.note("kineto_event_without_ph", example());
    } else if (ph == "i" && event().name == "[memory]") {
      handle_memory(); // the TensorBoard plugin's test: phase and name, whatever the cat
    } else if (ph == "i" || ph == "I") {
      stats_.note("kineto_instant_event", example());
    } else {
      stats_.note("kineto_unknown_phase", "phase '" + std::string(ph.substr(0, 20)) + "' in " + example());
    }
  }

  // Flags float timestamps: HTA then rounds ts up and ends down to whole µs.
  void note_precision(const JsonValue& v) {
    if (!ns_precision_ && !is_integer_text(v.text)) ns_precision_ = true;
  }

  ProcessId process_index(std::int64_t pid) {
    auto [it, inserted] = processes_.try_emplace(pid, ProcessId{0});
    if (inserted) {
      // A pseudo-process has no pid, only its name.
      const auto label = pseudo_process_names_.find(pid);
      it->second = label == pseudo_process_names_.end()
                       ? builder_.add_process(ProcessInfo{.pid = pid})
                       : builder_.add_process(ProcessInfo{.pid = kNoValue, .name = std::string(label->second)});
    }
    return it->second;
  }

  // A pid as written: a number, a string of digits (PyTorch 1.8-1.10), or a pseudo-process of
  // the exporter without Kineto ("CPU functions").
  std::optional<std::int64_t> pid_of(const JsonValue& v) {
    if (auto pid = as_id(v)) return pid;
    if (legacy_row(v) != LegacyRow::None) return pseudo_process(v.text);
    return std::nullopt;
  }

  // The key of a pseudo-process, by its name: kNoValue + 1, + 2, ... in the order they come,
  // below any pid a file writes (kNoValue itself marks an unset origin).
  std::int64_t pseudo_process(std::string_view name) {
    auto it = pseudo_processes_.find(name);
    if (it == pseudo_processes_.end()) {
      const std::int64_t key = kNoValue + 1 + static_cast<std::int64_t>(pseudo_processes_.size());
      it = pseudo_processes_.emplace(std::string(name), key).first;
      pseudo_process_names_.emplace(key, it->first);
    }
    return it->second;
  }

  DeviceId device_index(std::int64_t ordinal) { return devices_.device_of_events(builder_, ordinal); }

  // A tid as Kineto wrote it: a number, a string of digits (PyTorch 1.8-1.10), or the GPU
  // row's "stream 7" (then `stream` is set too).
  static std::optional<std::int64_t> tid_of(const JsonValue& v, std::optional<std::int64_t>* stream = nullptr) {
    if (auto tid = as_id(v)) return tid;
    if (v.present && v.type == od::json_type::string && v.text.starts_with("stream ")) {
      auto s = parse_int(trim(v.text.substr(7)));
      if (stream) *stream = s;
      return s;
    }
    return std::nullopt;
  }

  // Memory allocation calls: ROCm starts a flow on them that no GPU event finishes.
  static bool runs_nothing_on_gpu(std::string_view name) {
    return (name.starts_with("hip") || name.starts_with("cuda")) &&
           (name.find("Malloc") != std::string_view::npos || name.find("Free") != std::string_view::npos);
  }

  static bool time_in_range(TimeNs t) { return t >= -kMaxAbsTimeNs && t <= kMaxAbsTimeNs; }

  void remember_origin(std::int64_t pid, std::int64_t tid, TrackId track) {
    origin_.try_emplace(PidTid{pid, tid}, track);
    if (track >= track_origin_.size()) track_origin_.resize(track + 1, PidTid{kNoValue, kNoValue});
    if (track_origin_[track].pid == kNoValue) track_origin_[track] = PidTid{pid, tid};
  }

  void handle_complete() {
    // PyTorch without Kineto writes no cat: the pseudo-process says what an event is.
    const LegacyRow legacy = event().cat.empty() ? legacy_row(event().pid) : LegacyRow::None;
    if (event().cat.empty() && legacy == LegacyRow::None) {
      return stats_.note("kineto_event_without_cat", example());
    }
    EventClass cls = legacy == LegacyRow::Cpu      ? EventClass::CpuAnnotation
                     : legacy == LegacyRow::Device ? EventClass::GpuKernel
                                                   : classify_category(event().cat);
    const std::string_view category = legacy == LegacyRow::Cpu ? legacy_category(event().name) : event().cat;
    if (legacy != LegacyRow::None) legacy_events_ = true;
    if (cls == EventClass::ProfilerSpan) {
      // Not an event of the run, but the TensorBoard plugin draws its GPU-utilization
      // timeline over the first profiler span ("PyTorch Profiler (0)"): keep where it lies.
      if (event().name == "PyTorch Profiler (0)" && event().ts.type == od::json_type::number &&
          event().dur.type == od::json_type::number) {
        auto ts = parse_us_as_ns(event().ts.text);
        auto dur = parse_us_as_ns(event().dur.text);
        if (ts && dur && *dur >= 0 && time_in_range(*ts) && time_in_range(*ts + *dur)) {
          builder_.set_meta("kineto.profiler_span_ns", std::to_string(*ts) + " " + std::to_string(*ts + *dur));
        }
      }
      return stats_.note("kineto_profiler_span", example());
    }
    // Which side of the file the event belongs to, so that an import that lost a whole side
    // says so (empty_import_problem) even when every such event was dropped below.
    if (cls == EventClass::Unknown) {
      const bool on_gpu = event().arg("device") != nullptr || event().arg("stream") != nullptr ||
                          (event().tid.type == od::json_type::string && event().tid.text.starts_with("stream "));
      stats_.note("kineto_unknown_category", "category '" + std::string(event().cat.substr(0, 80)) + "' in " + example());
      cls = on_gpu ? EventClass::GpuAnnotation : EventClass::CpuAnnotation;
    }
    const bool cpu_side =
        cls == EventClass::CpuAnnotation || cls == EventClass::RuntimeApi || cls == EventClass::DriverApi;
    ++(cpu_side ? input_cpu_events_ : input_gpu_events_);
    if (!event().dur.present) {
      return stats_.note("kineto_event_without_dur", example());
    }
    if (!event().ts.present) return stats_.note("kineto_event_without_ts", example());
    if (event().ts.type != od::json_type::number || event().dur.type != od::json_type::number) {
      return stats_.note("kineto_time_not_a_number", example());
    }
    auto ts = parse_us_as_ns(event().ts.text);
    auto dur = parse_us_as_ns(event().dur.text);
    if (!ts || !dur || !time_in_range(*ts) || !time_in_range(*dur) || !time_in_range(*ts + *dur)) {
      return stats_.note("kineto_time_out_of_range", example());
    }
    if (*dur < 0) return stats_.note("kineto_negative_dur", example());
    note_precision(event().ts);
    note_precision(event().dur);
    if (event().args_not_object) {
      stats_.note("kineto_args_not_object", example());
    }
    const TimeNs start = *ts, end = *ts + *dur;

    // PyTorch 1.8-1.10 wrote pid and tid as strings of digits ("tid": "25738").
    auto pid = pid_of(event().pid);
    std::optional<std::int64_t> tid_stream;
    std::optional<std::int64_t> tid = tid_of(event().tid, &tid_stream);
    if (!tid && legacy == LegacyRow::Cpu) {
      // A remote (RPC) event: a thread of the callee's process.
      if (const auto remote = legacy_remote_tid(event().tid)) {
        pid = pseudo_process("CPU functions, node_id:" + std::to_string(remote->node));
        tid = remote->thread;
      }
    }
    if (!pid || !tid) {
      return stats_.note("kineto_bad_pid_tid", example());
    }
    // Counted here, noted once the pass ends: an example string per event costs.
    if (legacy == LegacyRow::Cpu && legacy_categorized_++ == 0) legacy_category_example_ = example();

    if (cls == EventClass::CpuAnnotation && detail_ == ImportDetail::WithoutOperators &&
        !kept_without_operators(category, event().name)) {
      cpu_track(*pid, *tid); // its thread and process, as the event would have made them
      builder_.add_summarized(start, end);
      ++stats_.events_kept;
      return;
    }
    const StringId name = builder_.intern(event().name);
    consumed_.assign(event().args.size(), false);
    // The last value of a key written twice, as RawEvent::arg; the other copies go too.
    auto take = [&](std::string_view key) -> const JsonValue* {
      const JsonValue* value = nullptr;
      for (std::size_t i = 0; i < event().args.size(); ++i) {
        if (event().args[i].key == key) {
          consumed_[i] = true;
          value = &event().args[i].value;
        }
      }
      return value;
    };
    auto take_external_id = [&]() {
      auto v = as_int(take("External id"));
      if (!v) v = as_int(take("external id")); // the 2022 format
      return v.value_or(kNoValue);
    };

    EventRow row; // what add() returned, which says its table
    switch (cls) {
      case EventClass::CpuAnnotation: {
        TrackId track = cpu_track(*pid, *tid);
        AnnotationRecord a{.track = track, .start = start, .end = end, .name = name, .domain = pytorch_,
                           .category = builder_.intern(category)};
        a.external_id = take_external_id();
        row = builder_.add(a);
        break;
      }
      case EventClass::RuntimeApi:
      case EventClass::DriverApi: {
        TrackId track = cpu_track(*pid, *tid);
        CudaApiRecord r{.track = track, .start = start, .end = end, .name = name};
        if (runs_nothing_on_gpu(event().name)) flows_.note_call_without_gpu_work(*pid, *tid, start);
        r.kind = cls == EventClass::DriverApi ? ApiKind::Driver : ApiKind::Runtime;
        r.correlation = as_int(take("correlation")).value_or(kNoValue);
        r.external_id = take_external_id();
        if (auto cbid = as_int(event().arg("cbid"))) {
          take("cbid");
          r.cbid = static_cast<std::int32_t>(*cbid);
        }
        // AMD writes the stream as "0x0"; a non-numeric stream stays an arg.
        if (auto stream = as_int(event().arg("stream"))) {
          take("stream");
          r.stream = *stream;
        }
        row = builder_.add(r);
        break;
      }
      case EventClass::GpuAnnotation: {
        // Kineto draws GPU annotations on their stream's row without naming the stream in args.
        TrackId track = gpu_track(*pid, *tid, tid_stream ? tid_stream : tid);
        AnnotationRecord a{.track = track, .start = start, .end = end, .name = name,
                           .domain = event().cat == "cuda_profiler_range" ? builder_.intern("cupti") : pytorch_,
                           .category = builder_.intern(event().cat)};
        a.external_id = take_external_id();
        row = builder_.add(a);
        break;
      }
      default: {
        TrackId track = legacy == LegacyRow::Device ? legacy_gpu_track(*pid, *tid) : gpu_track(*pid, *tid, tid_stream);
        GpuOpRecord g{.track = track, .start = start, .end = end, .name = name};
        g.correlation = as_int(take("correlation")).value_or(kNoValue);
        if (cls == EventClass::GpuKernel) {
          if (const JsonValue* dir = event().arg("direction");
              dir && dir->type == od::json_type::string && event().name.starts_with("dma")) {
            // MTIA's DMA engine requests are copies: direction and size, no launch config.
            take("direction");
            g.kind = GpuOpKind::Memcpy;
            g.subkind = static_cast<std::uint8_t>(copy_kind_from_text(dir->text));
            if (auto size = as_int(event().arg("size"))) {
              take("size");
              g.bytes = *size;
            }
          } else {
            g.kind = GpuOpKind::Kernel;
            if (const JsonValue* grid = event().arg("grid"); grid && grid->type == od::json_type::array) {
              take("grid");
              parse_dim3(grid->text, g.launch.grid);
            }
            if (const JsonValue* block = event().arg("block"); block && block->type == od::json_type::array) {
              take("block");
              parse_dim3(block->text, g.launch.block);
            }
            if (auto regs = as_int(event().arg("registers per thread"))) {
              take("registers per thread");
              g.launch.registers_per_thread = static_cast<std::int32_t>(*regs);
            }
            // Kineto reports static + dynamic shared memory as one sum.
            if (auto shared = as_int(event().arg("shared memory"))) {
              take("shared memory");
              g.launch.shared_memory_static = static_cast<std::int32_t>(std::max<std::int64_t>(*shared, 0));
            } else if (g.launch != LaunchConfig{}) {
              g.launch.shared_memory_static = LaunchConfig::kNotRecorded;
            }
          }
        } else if (cls == EventClass::GpuMemcpy) {
          g.kind = GpuOpKind::Memcpy;
          CopyKind kind = copy_kind_from_text(event().name);
          if (kind == CopyKind::Unknown) {
            if (const JsonValue* k = event().arg("kind"); k && k->type == od::json_type::string) {
              kind = copy_kind_from_text(k->text);
              if (kind != CopyKind::Unknown) take("kind");
            }
          }
          g.subkind = static_cast<std::uint8_t>(kind);
          if (auto bytes = as_int(event().arg("bytes"))) {
            take("bytes");
            g.bytes = *bytes;
          }
        } else if (cls == EventClass::GpuMemset) {
          g.kind = GpuOpKind::Memset;
          if (auto bytes = as_int(event().arg("bytes"))) {
            take("bytes");
            g.bytes = *bytes;
          }
        } else {
          g.kind = GpuOpKind::Sync;
          g.subkind = static_cast<std::uint8_t>(sync_kind_from_text(event().name));
          if (auto ev = as_int(event().arg("wait_on_cuda_event_id")); ev && *ev >= 0) {
            take("wait_on_cuda_event_id");
            g.event = *ev;
          }
          // The calls of a wait on an event name neither the event nor the record waited on;
          // the wait's sync record names the record, by its correlation id, and its stream.
          // Each such record is an event of its own, named by that id (the wait is on that
          // record, whatever else recorded the same CUDA event): both calls get it as their
          // event, the record its stream, and the wait the stream it is on.
          const auto record = as_int(event().arg("wait_on_cuda_event_record_corr_id"));
          const auto on_stream = as_int(event().arg("wait_on_stream"));
          if (g.correlation != kNoValue && record && *record >= 0 && on_stream && *on_stream >= 0) {
            const std::int64_t waiting = builder_.tracks()[track].stream;
            call_targets_.push_back({.correlation = g.correlation,
                                     .stream = waiting >= 0 && waiting != kContextWideStream ? waiting : kNoValue,
                                     .event = *record});
            call_targets_.push_back({.correlation = *record, .stream = *on_stream, .event = *record});
          }
        }
        row = builder_.add(g);
        break;
      }
    }
    ++stats_.events_kept;
    for (std::size_t i = 0; i < event().args.size(); ++i) {
      if (!consumed_[i]) add_arg(row, event().args[i], i);
    }
  }

  // `position`: the arg's place among its event's args.
  void add_arg(EventRow row, const RawArg& a, std::size_t position) {
    EventArg arg{.key = arg_key(a.key, position)};
    bool well_formed = true;
    if (a.value.type == od::json_type::number || a.value.type == od::json_type::string) {
      well_formed = type_arg(a.value, arg);
      if (arg.type == ArgType::String) arg.text = builder_.intern(a.value.text);
    } else {
      // Arrays, objects and literals: the same few texts recur (shapes, types), so whether
      // a text is well-formed JSON is decided once per interned text.
      arg.text = builder_.intern(a.value.text);
      if (arg.text >= json_text_valid_.size()) json_text_valid_.resize(arg.text + 1, kUnchecked);
      std::int8_t& valid = json_text_valid_[arg.text];
      if (valid == kUnchecked) valid = is_valid_json_text(a.value.text) ? 1 : 0;
      well_formed = valid == 1;
      arg.type = well_formed ? ArgType::Json : ArgType::String;
    }
    if (!well_formed) {
      stats_.note("kineto_bad_number_token", "arg '" + std::string(a.key.substr(0, 80)) + "' = " +
                                                 std::string(a.value.text.substr(0, 40)) + " in " + example());
    }
    builder_.add_arg(row, arg);
  }

  // Events of a kind write the same keys in the same order: the key last seen at a position
  // is compared before the whole string table is searched.
  StringId arg_key(std::string_view key, std::size_t position) {
    if (position >= last_arg_keys_.size()) last_arg_keys_.resize(position + 1);
    auto& [text, id] = last_arg_keys_[position];
    if (key != text) {
      id = builder_.intern(key);
      text = key;
    }
    return id;
  }

  TrackId cpu_track(std::int64_t pid, std::int64_t tid) {
    if (last_cpu_.pid == pid && last_cpu_.tid == tid && last_cpu_track_ != kNoIndex) return last_cpu_track_;
    TrackId t = builder_.thread_track(process_index(pid), tid);
    remember_origin(pid, tid, t);
    last_cpu_ = PidTid{pid, tid};
    last_cpu_track_ = t;
    return t;
  }

  // Device: args.device, else the pid (Kineto's GPU rows are one pid per device). Stream:
  // args.stream, else the 2021 format's "stream N" tid; a GPU event with neither (MTIA's
  // DMA_REQUEST row) goes on its device's stream-less track, which HTA calls stream -1.
  TrackId gpu_track(std::int64_t pid, std::int64_t tid, std::optional<std::int64_t> tid_stream) {
    std::int64_t device = as_int(event().arg("device")).value_or(pid);
    if (event().arg("device")) consume("device");
    std::int64_t stream = kNoValue;
    if (auto s = as_int(event().arg("stream"))) {
      consume("stream");
      stream = *s;
    } else if (tid_stream) {
      stream = *tid_stream;
    }
    TrackId t = builder_.stream_track(device_index(device), stream);
    remember_origin(pid, tid, t);
    return t;
  }

  // The kernel rows of the exporter without Kineto: one per device (the tid), no stream.
  TrackId legacy_gpu_track(std::int64_t pid, std::int64_t device) {
    TrackId t = builder_.stream_track(device_index(device), kNoValue);
    remember_origin(pid, device, t);
    return t;
  }

  void consume(std::string_view key) {
    for (std::size_t i = 0; i < event().args.size(); ++i) {
      if (event().args[i].key == key) consumed_[i] = true;
    }
  }

  // An allocation or release (PyTorch's profile_memory): kept on the thread that made it.
  // Its ts does not decide kineto.ts_precision, which is HTA's, and HTA drops instant events.
  void handle_memory() {
    if (!event().ts.present) return stats_.note("kineto_event_without_ts", example());
    if (event().ts.type != od::json_type::number) return stats_.note("kineto_time_not_a_number", example());
    const auto ts = parse_us_as_ns(event().ts.text);
    if (!ts || !time_in_range(*ts)) return stats_.note("kineto_time_out_of_range", example());
    const auto pid = pid_of(event().pid);
    const auto tid = tid_of(event().tid);
    if (!pid || !tid) return stats_.note("kineto_bad_pid_tid", example());
    if (event().args_not_object) stats_.note("kineto_args_not_object", example());
    std::string_view bad;
    std::optional<MemoryEventRecord> m = memory_event_args(event(), bad);
    if (!m) return stats_.note("kineto_memory_event_bad_arg", "'" + std::string(bad) + "' of " + example());
    m->track = cpu_track(*pid, *tid);
    m->time = *ts;
    builder_.add(*m);
    ++stats_.events_kept;
  }

  void handle_metadata() {
    auto pid = as_id(event().pid);
    if (!pid) return; // Kineto's "Spans"/"Traces" pseudo-processes
    const JsonValue* name = event().arg("name");
    const JsonValue* labels = event().arg("labels");
    if (event().name == "process_name" && name && name->type == od::json_type::string) {
      process_names_.try_emplace(*pid, name->text);
    } else if (event().name == "process_labels" && labels && labels->type == od::json_type::string) {
      process_labels_.try_emplace(*pid, labels->text);
    } else if (event().name == "thread_name" && name && name->type == od::json_type::string) {
      if (auto tid = tid_of(event().tid)) thread_names_.try_emplace(PidTid{*pid, *tid}, name->text);
    }
  }

  // The sort indices are never read: only names and labels. For a rank summary, a CPU
  // operator's args only where it is a collective's (the others' External id included: no
  // summary links operators to launches by it). Where "ph", "cat" or "name" come after
  // "args", they are read.
  bool args_read(const RawEvent& e) const override {
    if (e.ph == "M") {
      return e.name.empty() || e.name == "process_name" || e.name == "process_labels" || e.name == "thread_name";
    }
    if (detail_ != ImportDetail::Full && e.ph == "X" && !e.name.empty() &&
        classify_category(e.cat) == EventClass::CpuAnnotation) {
      return collective_args_read(e.name);
    }
    return true;
  }

  // handle_metadata keeps the first name of each process and thread, and counts nothing.
  bool repeat_changes_nothing(const RawEvent& e) const override { return e.ph == "M"; }

  void handle_flow() {
    FlowEnd f;
    f.cat = event().cat;
    f.phase = event().ph[0];
    f.event_number = stats_.events_read;
    auto id = as_id(event().id);
    if (!id && event().id.present && event().id.type == od::json_type::string && !event().id.text.empty()) {
      // An id that is a string but not a number: both ends carry the same text.
      id = flows_.id_of_text(event().id.text);
    }
    auto pid = pid_of(event().pid);
    auto tid = tid_of(event().tid);
    std::optional<TimeNs> ts;
    if (event().ts.type == od::json_type::number) ts = parse_us_as_ns(event().ts.text);
    if (!id || !pid || !tid || !ts || !time_in_range(*ts)) return stats_.note("kineto_flow_without_id", example());
    if (f.phase == 't') return stats_.note("kineto_flow_step", example());
    f.id = *id;
    f.pid = *pid;
    f.tid = *tid;
    f.ts = *ts;
    flows_.add(f);
  }

  void read_device_properties(od::value& value, od::document& doc) {
    od::array devices;
    if (value.get_array().get(devices)) {
      stats_.note("kineto_device_properties_not_array");
      return;
    }
    for (auto element : devices) {
      od::object obj;
      if (element.get_object().get(obj)) {
        stats_.note("kineto_device_properties_entry_not_object");
        continue;
      }
      std::optional<std::int64_t> id;
      DeviceInfo d;
      std::int64_t memory_clock_khz = 0, bus_width = 0;
      for (auto field_result : obj) {
        od::field field;
        if (auto error = std::move(field_result).get(field)) return reader_.json_error(error, doc);
        std::string_view key;
        if (field.unescaped_key().get(key)) continue;
        od::value fv = field.value();
        JsonValue v;
        if (!reader_.read_value(fv, v)) continue;
        auto number = as_int(v);
        // computeProperties (PyTorch 1.8-1.9) says major, minor and multiProcessorCount.
        if (key == "id") id = as_id(v);
        else if (key == "name" && v.type == od::json_type::string) d.name = std::string(v.text);
        else if ((key == "numSms" || key == "multiProcessorCount") && number) d.sm_count = *number;
        else if (key == "totalGlobalMem" && number) d.global_memory_bytes = *number;
        else if ((key == "computeMajor" || key == "major") && number) d.compute_capability_major = *number;
        else if ((key == "computeMinor" || key == "minor") && number) d.compute_capability_minor = *number;
        else if (key == "clockRate" && number) d.core_clock_khz = *number;
        else if (key == "memoryClockRate" && number) memory_clock_khz = *number;
        else if (key == "memoryBusWidth" && number) bus_width = *number;
      }
      if (!id) {
        stats_.note("kineto_device_properties_without_id", d.name);
        continue;
      }
      d.memory_clock_khz = memory_clock_khz;
      d.memory_bus_width_bits = bus_width;
      // DDR: two transfers per clock.
      d.memory_bandwidth_bytes_per_s = memory_clock_khz * 1000 * 2 * (bus_width / 8);
      devices_.add_properties(*id, d);
    }
  }

  void read_top_level_meta(std::string_view key, od::value& value, od::document&) {
    JsonValue v;
    if (!reader_.read_value(value, v)) return;
    std::string text(v.text);
    if (key == "host_name" && v.type == od::json_type::string) builder_.set_meta("host", text);
    if (key == "distributedInfo" && v.type == od::json_type::object) distributed_info_ = text;
    builder_.set_meta("kineto." + std::string(key), std::move(text));
  }

  void finish() {
    flows_.pair(builder_, stats_, origin_);
    builder_.set_call_targets(std::move(call_targets_));

    // Names known only now. GPU rows carry Kineto's "stream 7 " names; keep them trimmed.
    for (auto& [pid, index] : processes_) {
      auto it = process_names_.find(pid);
      if (it != process_names_.end()) builder_.process(index).name = std::string(it->second);
    }
    for (TrackId t{0}; t < track_origin_.size(); ++t) {
      const PidTid origin = track_origin_[t];
      if (origin.pid == kNoValue) continue;
      auto it = thread_names_.find(origin);
      if (it != thread_names_.end()) builder_.track(t).name = std::string(trim(it->second));
      // Kineto files context-wide syncs under the pseudo-stream 2^32 - 1: say what it is.
      TrackInfo& track = builder_.track(t);
      if (track.kind == TrackKind::GpuStream && track.stream == kContextWideStream) {
        track.name = "context-wide sync (all streams)";
      }
    }
    devices_.resolve(builder_, stats_);
    const ProcessId only_process = processes_.size() == 1 ? processes_.begin()->second : ProcessId{kNoIndex};
    for (auto& [ordinal, index] : devices_.used()) {
      DeviceInfo& d = builder_.device(index);
      if (d.process == kNoIndex) d.process = only_process;
      if (d.name.empty()) {
        auto it = process_labels_.find(ordinal);
        if (it != process_labels_.end()) d.name = std::string(it->second);
      }
    }

    builder_.set_meta("kineto.ts_precision", ns_precision_ ? "ns" : "us");
    // Which exporter wrote the file, where it was not Kineto.
    if (legacy_events_) builder_.set_meta("kineto.exporter", "autograd_profiler");
    if (legacy_categorized_ > 0) {
      stats_.note("kineto_legacy_category_from_name", std::move(legacy_category_example_));
      stats_.issues.find("kineto_legacy_category_from_name")->second.count = legacy_categorized_;
    }
    // Complete as far as the file goes; a damaged file is not.
    builder_.set_meta("complete", reader_.stopped() ? "0" : "1");
    if (!distributed_info_.empty()) {
      // The rank, for multi-rank analyses; the full object stays in kineto.distributedInfo.
      simdjson::dom::parser p;
      simdjson::dom::element e;
      if (!p.parse(distributed_info_).get(e)) {
        // One file is one rank of the job: every process in it is that rank. A value outside
        // the limits is not a rank (the file still imports, as a single run).
        const auto in_range = [](std::int64_t v, std::int64_t least) { return v >= least && v < limits::kMaxWorldSize; };
        std::int64_t rank = 0, world_size = 0;
        if (!e["rank"].get(rank) && in_range(rank, 0)) {
          builder_.set_meta("rank", std::to_string(rank));
          if (e["world_size"].get(world_size) || !in_range(world_size, 1) || world_size <= rank) world_size = kNoValue;
          for (const auto& [pid, index] : processes_) {
            ProcessInfo& process = builder_.process(index);
            process.rank = rank;
            process.world_size = world_size;
          }
        }
      }
    }
    builder_.set_meta("import_events_read", std::to_string(stats_.events_read));
    builder_.set_meta("import_input_cpu_events", std::to_string(input_cpu_events_));
    builder_.set_meta("import_input_gpu_events", std::to_string(input_gpu_events_));
    if (!stats_.issues.empty()) {
      builder_.set_meta("import_warnings", stats_.summary());
      builder_.set_meta("import_issues", stats_.to_meta());
    }
  }

  const std::filesystem::path& path_;
  ImportStats& stats_;
  const ImportProgressFn& progress_;
  const ImportDetail detail_;
  const RawEvent* event_ = nullptr; // the event handle_event is given, while it runs
  KinetoJsonReader reader_{path_, stats_, progress_, *this};

  TraceBuilder builder_;
  StringId pytorch_ = 0;
  std::vector<bool> consumed_;
  std::vector<std::pair<std::string, StringId>> last_arg_keys_; // by position (arg_key)
  // By the StringId of a compound arg's text: 1 well-formed JSON, 0 not, kUnchecked not yet known.
  static constexpr std::int8_t kUnchecked = -1;
  std::vector<std::int8_t> json_text_valid_;
  bool ns_precision_ = false;
  std::int64_t input_cpu_events_ = 0, input_gpu_events_ = 0; // complete events by side, kept or not
  std::string distributed_info_;

  std::unordered_map<std::int64_t, ProcessId> processes_;
  // The exporter without Kineto's pseudo-processes: name → key, key → name.
  std::map<std::string, std::int64_t, std::less<>> pseudo_processes_;
  std::unordered_map<std::int64_t, std::string_view> pseudo_process_names_;
  bool legacy_events_ = false; // an event of the exporter without Kineto was read
  std::int64_t legacy_categorized_ = 0; // its CPU events kept, each categorized by its name
  std::string legacy_category_example_;
  DeviceTable devices_;
  std::unordered_map<PidTid, TrackId, PidTidHash> origin_; // Kineto's (pid, tid) → our track
  std::vector<PidTid> track_origin_;                       // our track → its first (pid, tid)
  PidTid last_cpu_{kNoValue, kNoValue};
  TrackId last_cpu_track_ = kNoIndex;

  // Copies: the text they come from is given back as it is read (read_event_array).
  std::unordered_map<std::int64_t, std::string> process_names_, process_labels_;
  std::unordered_map<PidTid, std::string, PidTidHash> thread_names_;
  FlowTable flows_;
  std::vector<CallTarget> call_targets_; // from GPU sync records, for their calls
};

} // namespace

bool kept_without_operators(std::string_view category, std::string_view name) {
  const bool operator_or_function =
      category == "cpu_op" || category == "Operator" || category == "python_function" || category == "Python";
  return !operator_or_function || name.starts_with(kProfilerStepPrefix) ||
         name.starts_with(kDataLoaderRangePrefix) || collective_args_read(name);
}

Trace import_kineto(const std::filesystem::path& path, ImportStats* stats, const ImportProgressFn& progress,
                    ImportDetail detail) {
  ImportStats local;
  ImportStats& s = stats ? *stats : local;
  s = ImportStats{};
  const auto t0 = std::chrono::steady_clock::now();
  Trace trace;
  try {
    trace = KinetoImporter(path, s, progress, detail).run(true);
  } catch (const StreamedInputMismatch&) {
    // The stream held other than its size said: all of it again, read whole, which decides.
    s = ImportStats{};
    trace = KinetoImporter(path, s, progress, detail).run(false);
  }
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return trace;
}

} // namespace dreamscope
