#include "dreamscope/storage/exporters.h"
#include "dreamscope/storage/trace_file.h"
#include "importers/kineto/kineto_format.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace dreamscope {

namespace {

// Buffered output that fails with the file's name.
class JsonOut {
 public:
  explicit JsonOut(const std::filesystem::path& path) : path_(path) {
    file_ = std::fopen(path.c_str(), "wb");
    if (!file_) fail(std::string("cannot create: ") + std::strerror(errno));
    buf_.reserve(kFlushAt + 4096);
  }
  ~JsonOut() {
    if (file_) std::fclose(file_);
  }

  JsonOut& operator<<(std::string_view s) {
    buf_.append(s);
    if (buf_.size() >= kFlushAt) flush();
    return *this;
  }
  JsonOut& operator<<(char c) {
    buf_.push_back(c);
    return *this;
  }
  JsonOut& operator<<(std::int64_t v) {
    char tmp[24];
    int n = std::snprintf(tmp, sizeof tmp, "%lld", static_cast<long long>(v));
    buf_.append(tmp, static_cast<std::size_t>(n));
    return *this;
  }

  void string(std::string_view s) {
    buf_.push_back('"');
    for (char c : s) {
      switch (c) {
        case '"': buf_ += "\\\""; break;
        case '\\': buf_ += "\\\\"; break;
        case '\n': buf_ += "\\n"; break;
        case '\r': buf_ += "\\r"; break;
        case '\t': buf_ += "\\t"; break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            char tmp[8];
            std::snprintf(tmp, sizeof tmp, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
            buf_ += tmp;
          } else {
            buf_.push_back(c);
          }
      }
    }
    buf_.push_back('"');
  }

  // ns as µs with three decimals: exact, so that re-importing gives the same ns.
  void micros(TimeNs ns) {
    if (ns < 0) {
      buf_.push_back('-');
      ns = -ns;
    }
    char tmp[32];
    int n = std::snprintf(tmp, sizeof tmp, "%lld.%03lld", static_cast<long long>(ns / 1000),
                          static_cast<long long>(ns % 1000));
    buf_.append(tmp, static_cast<std::size_t>(n));
  }

  void flush() {
    if (!buf_.empty() && std::fwrite(buf_.data(), 1, buf_.size(), file_) != buf_.size()) {
      fail(std::string("cannot write: ") + std::strerror(errno));
    }
    buf_.clear();
  }

  void close() {
    flush();
    if (std::fclose(file_) != 0) {
      file_ = nullptr;
      fail(std::string("cannot write: ") + std::strerror(errno));
    }
    file_ = nullptr;
  }

 private:
  static constexpr std::size_t kFlushAt = 1 << 20;
  [[noreturn]] void fail(const std::string& what) const { throw TraceError(path_.string() + ": " + what); }

  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
  std::string buf_;
};

// Where a track goes in the Chrome trace: a (pid, tid) row.
struct Row {
  std::int64_t pid = 0;
  std::int64_t tid = 0;
};

class ChromeExporter {
 public:
  ChromeExporter(const Trace& trace, JsonOut& out) : t_(trace), out_(out) {}

  void run() {
    assign_rows();
    out_ << "{\"displayTimeUnit\":\"ns\",\"dreamscope_source\":";
    out_.string(t_.meta_value("source"));
    out_ << ",\"traceEvents\":[\n";
    write_metadata();
    write_cuda_api();
    write_gpu_ops();
    write_annotations();
    write_flows();
    write_memory_events();
    out_ << "\n]}\n";
  }

 private:
  // CPU rows keep their pid and tid, unless two processes share a pid (the ranks of a job on
  // several machines) or one has none (the pseudo-process "CPU functions" of PyTorch's exporter
  // without Kineto): then each process is numbered by its place in the trace. A GPU gets a
  // pseudo-process after every process (Kineto uses the device ordinal, which can collide with
  // a pid), and each stream a row numbered by its stream id; streams without an id get rows
  // past the largest one.
  void assign_rows() {
    std::set<std::int64_t> pids;
    for (const auto& p : t_.processes()) pids.insert(p.pid);
    pid_of_process_.resize(t_.processes().size());
    for (ProcessId p{0}; p < t_.processes().size(); ++p) {
      pid_of_process_[p] = pids.size() == t_.processes().size() && !pids.contains(kNoValue) ? t_.processes()[p].pid
                                                                                               : std::int64_t{p} + 1;
    }
    std::int64_t max_pid = 0, max_stream = 0;
    for (std::int64_t pid : pid_of_process_) max_pid = std::max(max_pid, pid);
    for (const auto& tr : t_.tracks()) {
      if (tr.kind == TrackKind::GpuStream && tr.stream != kNoValue) max_stream = std::max(max_stream, tr.stream);
    }
    gpu_pid_base_ = max_pid + 1;
    std::int64_t next_streamless = max_stream + 1;
    rows_.resize(t_.tracks().size());
    for (TrackId i{0}; i < t_.tracks().size(); ++i) {
      const TrackInfo& tr = t_.tracks()[i];
      if (tr.kind == TrackKind::CpuThread) {
        rows_[i].pid = tr.process == kNoIndex ? 0 : pid_of_process_[tr.process];
        rows_[i].tid = tr.tid == kNoValue ? 0 : tr.tid;
      } else {
        rows_[i].pid = gpu_pid_base_ + (tr.device == kNoIndex ? 0 : tr.device);
        rows_[i].tid = tr.stream != kNoValue ? tr.stream : next_streamless++;
      }
    }
  }

  void begin_event() {
    if (!first_) out_ << ",\n";
    first_ = false;
  }

  void metadata(std::string_view what, std::int64_t pid, std::int64_t tid, std::string_view key, std::string_view value) {
    begin_event();
    out_ << "{\"ph\":\"M\",\"name\":\"" << what << "\",\"pid\":" << pid << ",\"tid\":" << tid << ",\"args\":{\"" << key
         << "\":";
    out_.string(value);
    out_ << "}}";
  }

  void write_metadata() {
    for (ProcessId i{0}; i < t_.processes().size(); ++i) {
      const ProcessInfo& p = t_.processes()[i];
      std::string name = p.name.empty() ? p.command : p.name;
      if (p.is_rank()) name = "rank " + std::to_string(p.rank) + ": " + name;
      metadata("process_name", pid_of_process_[i], 0, "name", name);
      metadata("process_labels", pid_of_process_[i], 0, "labels", p.is_rank() ? "CPU, rank " + std::to_string(p.rank) : "CPU");
      // Ranks sort by rank in the viewers, as in `dreamscope info`.
      if (p.is_rank()) {
        begin_event();
        out_ << "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" << pid_of_process_[i]
             << ",\"tid\":0,\"args\":{\"sort_index\":" << p.rank << "}}";
      }
    }
    for (DeviceId d{0}; d < t_.devices().size(); ++d) {
      const DeviceInfo& dev = t_.devices()[d];
      const std::string label = "GPU " + std::to_string(dev.ordinal) + (dev.name.empty() ? "" : " (" + dev.name + ")");
      metadata("process_name", gpu_pid_base_ + d, 0, "name", label);
      metadata("process_labels", gpu_pid_base_ + d, 0, "labels", "GPU " + std::to_string(dev.ordinal));
    }
    for (TrackId i{0}; i < t_.tracks().size(); ++i) {
      const TrackInfo& tr = t_.tracks()[i];
      // Unnamed threads stay unnamed (the viewers show their tid); streams always say what they are.
      std::string name = tr.name;
      if (name.empty() && tr.kind == TrackKind::GpuStream) {
        name = tr.stream == kNoValue ? std::string("GPU (no stream)") : "stream " + std::to_string(tr.stream);
      }
      if (!name.empty()) metadata("thread_name", rows_[i].pid, rows_[i].tid, "name", name);
    }
  }

  void event_head(std::string_view cat, StringId name, TrackId track, TimeNs start, TimeNs end) {
    begin_event();
    out_ << "{\"ph\":\"X\",\"cat\":";
    out_.string(cat);
    out_ << ",\"name\":";
    out_.string(t_.str(name));
    out_ << ",\"pid\":" << rows_[track].pid << ",\"tid\":" << rows_[track].tid << ",\"ts\":";
    out_.micros(start);
    out_ << ",\"dur\":";
    out_.micros(end - start);
    out_ << ",\"args\":{";
    first_arg_ = true;
  }

  void arg_key(std::string_view key) {
    if (!first_arg_) out_ << ',';
    first_arg_ = false;
    out_.string(key);
    out_ << ':';
  }
  void arg(std::string_view key, std::int64_t v) {
    if (v == kNoValue) return;
    arg_key(key);
    out_ << v;
  }
  void arg_text(std::string_view key, std::string_view v) {
    arg_key(key);
    out_.string(v);
  }

  void extra_args(EventRow row) {
    for (const EventArg& a : t_.args_of(row)) {
      arg_key(t_.str(a.key));
      switch (a.type) {
        case ArgType::Int: out_ << a.int_value; break;
        case ArgType::Double: {
          // JSON has no NaN or infinity; a trace file may hold them all the same.
          if (!std::isfinite(a.double_value)) {
            out_ << "null";
            break;
          }
          char tmp[32];
          int n = std::snprintf(tmp, sizeof tmp, "%.17g", a.double_value);
          out_ << std::string_view(tmp, static_cast<std::size_t>(n));
          break;
        }
        case ArgType::String: out_.string(t_.str(a.text)); break;
        // Written as it is only once checked here: a trace file from elsewhere may call any
        // text JSON, and a file that does not parse is worse than a quoted arg.
        case ArgType::Json:
          if (json_text_valid(a.text)) {
            out_ << t_.str(a.text);
          } else {
            out_.string(t_.str(a.text));
          }
          break;
      }
    }
  }

  bool json_text_valid(StringId text) {
    if (text >= json_text_valid_.size()) json_text_valid_.resize(text + 1, -1);
    std::int8_t& v = json_text_valid_[text];
    if (v < 0) v = kineto::is_valid_json_text(t_.str(text)) ? 1 : 0;
    return v == 1;
  }

  void gpu_location(TrackId track) {
    const TrackInfo& tr = t_.tracks()[track];
    if (tr.device != kNoIndex) arg("device", t_.devices()[tr.device].ordinal);
    arg("stream", tr.stream);
  }

  void write_cuda_api() {
    const auto& a = t_.cuda_api();
    for (CudaApiIndex i{0}; i < a.size(); ++i) {
      event_head(a.kind[i] == ApiKind::Driver ? "cuda_driver" : "cuda_runtime", a.name[i], a.track[i], a.start[i],
                 a.end[i]);
      arg("External id", a.external_id[i]);
      if (a.cbid[i] != 0) arg("cbid", a.cbid[i]);
      arg("correlation", a.correlation[i]);
      arg("stream", a.stream[i]);
      if (a.result[i] != 0) arg("result", a.result[i]);
      arg("event", a.event[i]);
      extra_args(i);
      out_ << "}}";
    }
  }

  void write_gpu_ops() {
    const auto& g = t_.gpu_ops();
    for (GpuOpIndex i{0}; i < g.size(); ++i) {
      static constexpr std::string_view cats[] = {"kernel", "gpu_memcpy", "gpu_memset", "cuda_sync"};
      event_head(cats[static_cast<int>(g.kind[i])], g.name[i], g.track[i], g.start[i], g.end[i]);
      gpu_location(g.track[i]);
      arg("correlation", g.correlation[i]);
      if (g.kind[i] == GpuOpKind::Kernel && g.launch[i] != 0) {
        const LaunchConfig& c = t_.launch_configs()[g.launch[i]];
        arg_key("grid");
        out_ << '[' << std::int64_t{c.grid[0]} << ',' << std::int64_t{c.grid[1]} << ',' << std::int64_t{c.grid[2]} << ']';
        arg_key("block");
        out_ << '[' << std::int64_t{c.block[0]} << ',' << std::int64_t{c.block[1]} << ',' << std::int64_t{c.block[2]}
             << ']';
        arg("registers per thread", c.registers_per_thread);
        if (c.shared_memory_recorded()) arg("shared memory", c.shared_memory());
      }
      if (g.kind[i] == GpuOpKind::Memcpy || g.kind[i] == GpuOpKind::Memset) arg("bytes", g.bytes[i]);
      if (g.kind[i] == GpuOpKind::Memcpy && g.subkind[i] != 0) {
        arg_text("kind", to_string(static_cast<CopyKind>(g.subkind[i])));
      }
      if (g.kind[i] == GpuOpKind::Sync) arg("wait_on_cuda_event_id", g.event[i]);
      extra_args(i);
      out_ << "}}";
    }
  }

  void write_annotations() {
    const auto& n = t_.annotations();
    for (AnnotationIndex i{0}; i < n.size(); ++i) {
      const TrackInfo& tr = t_.tracks()[n.track[i]];
      std::string_view cat = t_.str(n.category[i]);
      if (cat.empty()) cat = tr.kind == TrackKind::GpuStream ? "gpu_user_annotation" : "user_annotation";
      event_head(cat, n.name[i], n.track[i], n.start[i], n.end[i]);
      if (tr.kind == TrackKind::GpuStream) gpu_location(n.track[i]);
      arg("External id", n.external_id[i]);
      if (n.domain[i] != 0) arg_text("domain", t_.str(n.domain[i]));
      arg("payload", n.payload[i]);
      extra_args(i);
      out_ << "}}";
    }
  }

  void write_flows() {
    std::int64_t next_id = 1;
    for (const FlowRecord& f : t_.flows()) {
      // Ids must pair one s with one f per cat; producers' ids may repeat, so number them.
      const std::int64_t id = next_id++;
      std::string_view cat = t_.str(f.kind);
      if (cat.empty()) cat = "flow";
      for (int end = 0; end < 2; ++end) {
        begin_event();
        const TrackId track = end ? f.to_track : f.from_track;
        out_ << "{\"ph\":\"" << (end ? "f" : "s") << "\",\"cat\":";
        out_.string(cat);
        out_ << ",\"name\":";
        out_.string(cat);
        out_ << ",\"id\":" << id << ",\"pid\":" << rows_[track].pid << ",\"tid\":" << rows_[track].tid << ",\"ts\":";
        out_.micros(end ? f.to_time : f.from_time);
        out_ << (end ? ",\"bp\":\"e\"}" : "}");
      }
    }
  }

  // As the PyTorch profiler writes them: instant events named "[memory]" on the thread.
  void write_memory_events() {
    for (const MemoryEventRecord& m : t_.memory_events()) {
      begin_event();
      out_ << "{\"ph\":\"i\",\"cat\":\"cpu_instant_event\",\"s\":\"t\",\"name\":\"[memory]\",\"pid\":"
           << rows_[m.track].pid << ",\"tid\":" << rows_[m.track].tid << ",\"ts\":";
      out_.micros(m.time);
      out_ << ",\"args\":{";
      first_arg_ = true;
      arg("Device Type", m.device_type);
      arg("Device Id", m.device_id);
      if (m.addr != kNoValue) {
        arg_key("Addr");
        out_ << std::to_string(static_cast<std::uint64_t>(m.addr)); // a pointer, unsigned as Kineto writes it
      }
      arg("Bytes", m.bytes);
      arg("Total Allocated", m.total_allocated);
      arg("Total Reserved", m.total_reserved);
      out_ << "}}";
    }
  }

  const Trace& t_;
  JsonOut& out_;
  std::vector<Row> rows_;
  std::vector<std::int8_t> json_text_valid_; // per string id: -1 unchecked, 0 no, 1 yes
  std::int64_t gpu_pid_base_ = 0;
  std::vector<std::int64_t> pid_of_process_;
  bool first_ = true;
  bool first_arg_ = true;
};

} // namespace

void export_chrome(const Trace& trace, const std::filesystem::path& path) {
  JsonOut out(path);
  ChromeExporter(trace, out).run();
  out.close();
}

} // namespace dreamscope
