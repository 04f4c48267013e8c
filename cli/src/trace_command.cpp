// `dreamscope trace [options] -- CMD ARGS...`: runs CMD with the tracer preloaded and
// merges every traced process of the job into one trace file (docs/tracing.md).
//
// Each process the job starts (fork, exec, spawn) writes its own part file, a trace log
// (dreamscope/trace_log.h), into OUTPUT.d/; when the whole job has ended, the parts are
// merged, in start order, into OUTPUT and the folder is removed. A part whose process was
// killed is still merged (it holds what the tracer flushed, at most 100 ms short) and
// makes the result incomplete.
#include "commands.h"

#include <dreamscope/steps.h>
#include <dreamscope/trace_file.h>
#include <dreamscope/trace_log.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sched.h>
#include <unistd.h>

namespace dreamscope::cli {

namespace {

namespace fs = std::filesystem;

struct TraceOptions {
  std::string output = "dreamscope-%n.db";
  std::string sources = "cuda,nvtx";
  std::string cuda_api = "default";
  double delay_s = 0;
  double duration_s = -1;
  bool force = false;
  bool keep_parts = false;
  int buffer_mb = 512;
  std::vector<std::string> command;
};

std::int64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// The tracer, the annotation library and the Python module sit in lib/ next to bin/, in
// the build tree and in an install alike.
struct Runtime {
  fs::path tracer, annotate, python;
};

std::optional<Runtime> find_runtime(std::string& why) {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  std::vector<fs::path> libs;
  if (const char* env = std::getenv("DREAMSCOPE_LIB_DIR"); env && *env) libs.emplace_back(env);
  if (!ec) {
    libs.push_back(exe.parent_path().parent_path() / "lib");
    libs.push_back(exe.parent_path().parent_path() / "lib" / "dreamscope");
  }
  for (const auto& dir : libs) {
    if (fs::exists(dir / "libdreamscope-tracer.so", ec)) {
      return Runtime{dir / "libdreamscope-tracer.so", dir / "libdreamscope-annotate.so", dir / "python"};
    }
  }
  why = "libdreamscope-tracer.so not found in";
  for (const auto& d : libs) why += " " + d.string();
  why += " (set DREAMSCOPE_LIB_DIR to its folder)";
  return std::nullopt;
}

// %p: the CLI's pid, %h: host, %t: local time (YYYYmmdd-HHMMSS), %n: the first number
// that makes a file name not taken yet.
std::string expand_output(const std::string& pattern) {
  auto expand = [&](int n) {
    std::string out;
    for (std::size_t i = 0; i < pattern.size(); ++i) {
      if (pattern[i] != '%' || i + 1 == pattern.size()) {
        out += pattern[i];
        continue;
      }
      const char c = pattern[++i];
      if (c == 'p') {
        out += std::to_string(getpid());
      } else if (c == 'h') {
        char host[256] = {};
        gethostname(host, sizeof host - 1);
        out += host;
      } else if (c == 't') {
        char buf[32];
        std::time_t now = std::time(nullptr);
        std::tm tm{};
        localtime_r(&now, &tm);
        std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
        out += buf;
      } else if (c == 'n') {
        out += std::to_string(n);
      } else {
        out += '%';
        out += c;
      }
    }
    return out;
  };
  if (pattern.find("%n") == std::string::npos) return expand(0);
  std::error_code ec;
  for (int n = 1;; ++n) {
    std::string candidate = expand(n);
    if (!fs::exists(candidate, ec)) return candidate;
  }
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : std::to_string(sig);
}

std::string join(const std::vector<std::string>& args) {
  std::string out;
  for (const auto& a : args) {
    if (!out.empty()) out += ' ';
    const bool quote = a.empty() || a.find_first_of(" \t'\"$\\") != std::string::npos;
    out += quote ? "'" + a + "'" : a;
  }
  return out;
}

// The CLI's own fate must not cut the job short: Ctrl-C goes to the whole foreground
// process group (the job handles it), and SIGTERM/SIGHUP sent to the CLI are passed on.
pid_t g_child = 0;
void forward_signal(int sig) {
  if (g_child > 0) kill(g_child, sig);
}

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// ------------------------------------------------------------------------------------
// Merging the parts.

struct MergeResult {
  std::size_t parts = 0;
  std::size_t processes = 0;
  std::size_t events = 0;
  bool complete = true;
  std::vector<std::string> warnings;
};

// Where each batch was produced (end of its last prep) and consumed (end of its wait), from
// the dreamscope data-pipeline annotations of every process.
struct BatchEnds {
  std::map<std::int64_t, std::pair<TrackId, TimeNs>> produced, consumed;
};

void add_part(TraceBuilder& out, const Trace& part, std::int64_t root_pid, int root_status, bool last_root_image,
              bool& have_calibration, BatchEnds& batches) {
  std::vector<StringId> s(part.strings().size());
  for (std::size_t i = 0; i < s.size(); ++i) s[i] = out.intern(part.strings()[i]);

  std::vector<std::uint32_t> procs;
  for (ProcessInfo p : part.processes()) {
    // The root's wait status is known only here; an image that exec'ed has no status.
    if (p.pid == root_pid && last_root_image && p.exit_status == kNoValue) p.exit_status = root_status;
    if (p.pid == root_pid && last_root_image && p.exit_status != kNoValue && root_status > 128) {
      p.exit_status = root_status;
    }
    procs.push_back(out.add_process(std::move(p)));
  }
  auto proc = [&](std::uint32_t p) { return p == kNoIndex || p >= procs.size() ? kNoIndex : procs[p]; };
  std::vector<std::uint32_t> devs;
  for (DeviceInfo d : part.devices()) {
    d.process = proc(d.process);
    devs.push_back(out.add_device(std::move(d)));
  }
  std::vector<TrackId> tracks;
  for (TrackInfo t : part.tracks()) {
    t.process = proc(t.process);
    t.device = t.device == kNoIndex || t.device >= devs.size() ? kNoIndex : devs[t.device];
    tracks.push_back(out.add_track(std::move(t)));
  }

  const auto& api = part.cuda_api();
  for (std::size_t i = 0; i < api.size(); ++i) {
    CudaApiRecord r = api.row(i);
    r.track = tracks[r.track];
    r.name = s[r.name];
    out.add(r);
  }
  const auto& ops = part.gpu_ops();
  for (std::size_t i = 0; i < ops.size(); ++i) {
    GpuOpRecord r{.track = tracks[ops.track[i]], .kind = ops.kind[i], .subkind = ops.subkind[i],
                  .start = ops.start[i], .end = ops.end[i], .name = s[ops.name[i]],
                  .correlation = ops.correlation[i], .bytes = ops.bytes[i], .event = ops.event[i]};
    if (ops.launch[i] != 0) r.launch = part.launch_configs()[ops.launch[i]];
    out.add(r);
  }
  const auto& ann = part.annotations();
  for (std::size_t i = 0; i < ann.size(); ++i) {
    AnnotationRecord r = ann.row(i);
    r.track = tracks[r.track];
    r.name = s[r.name];
    r.domain = s[r.domain];
    r.category = s[r.category];
    out.add(r);
    if (r.payload != kNoValue && part.str(ann.domain[i]) == "dreamscope") {
      const std::string_view category = part.str(ann.category[i]);
      if (category == annotation_category::kPrep || category == annotation_category::kWait) {
        auto& ends = category == annotation_category::kPrep ? batches.produced : batches.consumed;
        auto [it, fresh] = ends.try_emplace(r.payload, r.track, r.end);
        if (!fresh && r.end > it->second.second) it->second = {r.track, r.end};
      }
    }
  }
  for (FlowRecord f : part.flows()) {
    f.kind = s[f.kind];
    f.from_track = tracks[f.from_track];
    f.to_track = tracks[f.to_track];
    out.add(f);
  }
  for (OverheadRecord o : part.overheads()) {
    o.track = tracks[o.track];
    o.kind = s[o.kind];
    out.add(o);
  }
  // Every process measures the same machine; the first part's calibration stands for all.
  if (!have_calibration && !part.calibration().empty()) {
    for (const auto& c : part.calibration()) out.add(c);
    have_calibration = true;
  }
}

struct Part {
  fs::path path;
  Trace trace;
  std::int64_t start = 0;
  std::int64_t pid = 0;
  bool exec_ended = false;
};

MergeResult merge_parts(const fs::path& dir, const fs::path& output, const std::string& command,
                        const std::string& root_name, pid_t root_pid, int root_status, const std::string& job_warning) {
  MergeResult result;
  if (!job_warning.empty()) result.warnings.push_back(job_warning);
  std::vector<Part> parts;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".dslog") continue;
    try {
      Part p{.path = entry.path(), .trace = read_trace_log(entry.path())};
      p.start = std::atoll(p.trace.meta_value("start", "0").c_str());
      p.pid = p.trace.processes().empty() ? 0 : p.trace.processes().front().pid;
      p.exec_ended = p.trace.meta_value("ended_by") == "exec";
      parts.push_back(std::move(p));
    } catch (const std::exception& e) {
      result.warnings.push_back(fmt::format("part {} could not be read and is left out: {}", entry.path().string(), e.what()));
      result.complete = false;
    }
  }
  std::sort(parts.begin(), parts.end(), [](const Part& a, const Part& b) { return a.start < b.start; });

  TraceBuilder out;
  out.set_source(TraceSource::Tracer);
  std::int64_t dropped = 0, writer_cpu = 0, start = INT64_MAX, end = INT64_MIN;
  std::set<std::string> warnings;
  std::string host;
  bool have_calibration = false;
  BatchEnds batches;
  std::size_t last_root = parts.size();
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].pid == root_pid && !parts[i].exec_ended) last_root = i;
  }
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const Part& p = parts[i];
    add_part(out, p.trace, root_pid, root_status, i == last_root, have_calibration, batches);
    result.events += p.trace.event_count();
    result.processes += p.trace.processes().size();
    if (!p.trace.complete()) {
      result.complete = false;
      const std::int64_t pid = p.pid;
      result.warnings.push_back(fmt::format("process {} did not close its trace (killed or crashed): its events end "
                                            "at its last flush", pid));
    }
    dropped += p.trace.dropped_events();
    if (p.trace.tracer_writer_cpu_ns() != kNoValue) writer_cpu += p.trace.tracer_writer_cpu_ns();
    start = std::min(start, p.start);
    end = std::max<std::int64_t>(end, std::atoll(p.trace.meta_value("end", "0").c_str()));
    if (host.empty()) host = p.trace.meta_value("host");
    for (const char* key : {"window_from_ns", "window_to_ns", "clock"}) {
      if (std::string v = p.trace.meta_value(key); !v.empty()) out.set_meta(key, v);
    }
    std::string w = p.trace.meta_value("warnings");
    std::size_t from = 0;
    while (!w.empty() && from <= w.size()) {
      std::size_t to = w.find("; ", from);
      warnings.insert(w.substr(from, to == std::string::npos ? std::string::npos : to - from));
      if (to == std::string::npos) break;
      from = to + 2;
    }
  }
  result.parts = parts.size();
  // A flow per batch from the loader that prepared it to the step that waited for it, in
  // whichever threads and processes they ran.
  const StringId batch_flow = out.intern("batch");
  for (const auto& [batch, from] : batches.produced) {
    auto to = batches.consumed.find(batch);
    if (to == batches.consumed.end()) continue;
    out.add(FlowRecord{.kind = batch_flow, .from_track = from.first, .from_time = from.second,
                       .to_track = to->second.first, .to_time = to->second.second, .id = batch});
  }
  // A root process that recorded nothing left no part; it is still the job's process, with
  // the exit status the CLI saw.
  if (std::none_of(parts.begin(), parts.end(), [&](const Part& p) { return p.pid == root_pid; })) {
    out.add_process(ProcessInfo{.pid = root_pid, .name = fs::path(root_name).filename().string(),
                                .command = command, .exit_status = root_status});
    ++result.processes;
  }
  for (const auto& w : result.warnings) warnings.insert(w);
  std::string joined;
  for (const auto& w : warnings) joined += (joined.empty() ? "" : "; ") + w;

  out.set_meta("source", "tracer");
  out.set_meta("command", command);
  if (!host.empty()) out.set_meta("host", host);
  // The cores the job could run on: what a what-if that adds threads shares (`cores=`).
  if (cpu_set_t cpus; sched_getaffinity(0, sizeof cpus, &cpus) == 0) {
    out.set_meta("cpu_cores", std::to_string(CPU_COUNT(&cpus)));
  }
  out.set_meta("dropped_events", std::to_string(dropped));
  if (writer_cpu > 0) out.set_meta("tracer_writer_cpu_ns", std::to_string(writer_cpu));
  if (!joined.empty()) out.set_meta("warnings", joined);
  if (start != INT64_MAX) out.set_meta("start", std::to_string(start));
  if (end != INT64_MIN) out.set_meta("end", std::to_string(end));
  out.set_meta("parts", std::to_string(parts.size()));
  // A job with a process that never closed its part is not complete, merged or not.
  out.set_meta("complete", result.complete ? "1" : "0");
  write_trace(std::move(out).build(), output);
  return result;
}

// ------------------------------------------------------------------------------------

std::optional<std::string> can_write(const fs::path& output) {
  std::error_code ec;
  const fs::path dir = output.has_parent_path() ? output.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec)) return fmt::format("folder {} does not exist", dir.string());
  if (access(dir.c_str(), W_OK) != 0) return fmt::format("folder {}: {}", dir.string(), std::strerror(errno));
  if (fs::exists(output, ec) && access(output.c_str(), W_OK) != 0) {
    return fmt::format("{}: {}", output.string(), std::strerror(errno));
  }
  return std::nullopt;
}

void prepend_path(const char* var, const std::string& value, char sep) {
  const char* old = std::getenv(var);
  std::string v = value;
  if (old && *old) v += sep + std::string(old);
  setenv(var, v.c_str(), 1);
}

int run_trace(const TraceOptions& o) {
  if (o.command.empty()) {
    std::fprintf(stderr, "dreamscope trace: no command given (usage: dreamscope trace [options] -- CMD ARGS...)\n");
    return kExitUsage;
  }
  std::string why;
  const auto runtime = find_runtime(why);
  if (!runtime) {
    std::fprintf(stderr, "dreamscope trace: %s\n", why.c_str());
    return kExitError;
  }
  const fs::path output = expand_output(o.output);
  std::error_code ec;
  if (fs::exists(output, ec) && !o.force) {
    std::fprintf(stderr, "dreamscope trace: %s exists (use --force to replace it)\n", output.c_str());
    return kExitUsage;
  }

  // The parts go next to the output; if that folder cannot be written, the job still runs
  // and its parts are kept in a temporary folder so nothing is lost.
  std::optional<std::string> output_problem = can_write(output);
  fs::path parts = output.string() + ".d";
  if (!output_problem) {
    fs::remove_all(parts, ec);
    fs::create_directories(parts, ec);
    if (ec) output_problem = fmt::format("cannot create {}: {}", parts.string(), ec.message());
  }
  if (output_problem) {
    char tmpl[] = "/tmp/dreamscope-parts-XXXXXX";
    const char* made = mkdtemp(tmpl);
    parts = made ? made : "/tmp";
    std::fprintf(stderr,
                 "dreamscope trace: cannot write %s (%s); the program runs anyway and its trace parts go to %s\n",
                 output.c_str(), output_problem->c_str(), parts.c_str());
  }

  const std::string command = join(o.command);
  const bool cuda = o.sources.find("cuda") != std::string::npos;
  // Degrade, never fail: without a driver the job still runs and NVTX is still recorded.
  std::string job_warning;
  if (cuda) {
    if (void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL)) {
      dlclose(driver);
    } else {
      job_warning = "no CUDA driver on this machine (libcuda.so.1 not loadable): recording NVTX and the CPU side only";
      std::fprintf(stderr, "dreamscope trace: %s\n", job_warning.c_str());
    }
  }
  prepend_path("LD_PRELOAD", runtime->tracer.string(), ':');
  setenv("NVTX_INJECTION64_PATH", runtime->tracer.c_str(), 1);
  if (cuda) setenv("CUDA_INJECTION64_PATH", runtime->tracer.c_str(), 1);
  prepend_path("PYTHONPATH", runtime->python.string(), ':');
  setenv("DREAMSCOPE_ANNOTATE_LIB", runtime->annotate.c_str(), 1);
  setenv("DREAMSCOPE_OUTPUT_DIR", fs::absolute(parts).c_str(), 1);
  setenv("DREAMSCOPE_TRACE", o.sources.c_str(), 1);
  setenv("DREAMSCOPE_CUDA_API", o.cuda_api.c_str(), 1);
  setenv("DREAMSCOPE_BUFFER_MB", std::to_string(o.buffer_mb).c_str(), 1);
  setenv("DREAMSCOPE_COMMAND", command.c_str(), 1);
  setenv("DREAMSCOPE_JOB_START_NS", std::to_string(monotonic_ns()).c_str(), 1);
  setenv("DREAMSCOPE_DELAY_NS", std::to_string(static_cast<std::int64_t>(o.delay_s * 1e9)).c_str(), 1);
  setenv("DREAMSCOPE_DURATION_NS",
         std::to_string(o.duration_s < 0 ? -1 : static_cast<std::int64_t>(o.duration_s * 1e9)).c_str(), 1);

  // Orphans of the job (a daemonized loader, a grandchild whose parent died) are
  // re-parented to us, so that "the job has ended" means every process of it has.
  prctl(PR_SET_CHILD_SUBREAPER, 1);

  std::vector<char*> argv;
  for (const auto& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t child = fork();
  if (child < 0) {
    std::fprintf(stderr, "dreamscope trace: fork failed: %s\n", std::strerror(errno));
    return kExitError;
  }
  if (child == 0) {
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "dreamscope trace: cannot run %s: %s\n", argv[0], std::strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
  }
  g_child = child;
  signal(SIGINT, SIG_IGN);
  signal(SIGQUIT, SIG_IGN);
  signal(SIGTERM, forward_signal);
  signal(SIGHUP, forward_signal);

  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  const int exit_code = decode_status(status);
  // The rest of the job: children that outlived the command.
  for (;;) {
    int other = 0;
    const pid_t p = waitpid(-1, &other, 0);
    if (p < 0 && errno == EINTR) continue;
    if (p < 0) break;
  }
  if (WIFSIGNALED(status)) {
    std::fprintf(stderr, "dreamscope trace: %s was killed by signal %d (%s)%s; exit status %d\n", argv[0],
                 WTERMSIG(status), signal_name(WTERMSIG(status)).c_str(), WCOREDUMP(status) ? ", core dumped" : "",
                 exit_code);
  }

  if (output_problem) {
    std::fprintf(stderr, "dreamscope trace: no trace written to %s (%s); the parts are in %s\n", output.c_str(),
                 output_problem->c_str(), parts.c_str());
    return exit_code;
  }
  try {
    MergeResult m = merge_parts(parts, output, command, o.command.front(), child, exit_code, job_warning);
    for (const auto& w : m.warnings) {
      if (w != job_warning) std::fprintf(stderr, "dreamscope trace: %s\n", w.c_str());
    }
    if (!o.keep_parts) fs::remove_all(parts, ec);
    std::fprintf(stderr, "dreamscope trace: wrote %s (%zu process%s, %zu events%s)\n", output.c_str(),
                 m.processes, m.processes == 1 ? "" : "es", m.events, m.complete ? "" : ", incomplete");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dreamscope trace: cannot write %s: %s; the parts are kept in %s\n", output.c_str(),
                 e.what(), parts.c_str());
  }
  return exit_code;
}

const CommandRegistration trace_command(10, "trace", [](CLI::App& app) -> CommandAction {
  auto o = std::make_shared<TraceOptions>();
  auto* cmd = app.add_subcommand("trace", "Run a command with the tracer and write one trace of all its processes");
  cmd->add_option("-o,--output", o->output,
                  "Trace file; %n: first free number, %p: pid, %h: host, %t: date-time")
      ->capture_default_str();
  cmd->add_flag("-f,--force", o->force, "Replace the output file if it exists");
  cmd->add_option("--trace", o->sources, "What to record: cuda, nvtx, or both (cuda,nvtx)")->capture_default_str();
  cmd->add_option("--cuda-api", o->cuda_api,
                  "default: skip frequent cheap CUDA API calls (cudaGetDevice, ...); all: keep every call")
      ->check(CLI::IsMember({"default", "all"}))
      ->capture_default_str();
  cmd->add_option("--delay", o->delay_s, "Seconds after the start before recording (events starting earlier are dropped)");
  cmd->add_option("--duration", o->duration_s, "Seconds to record after the delay (the job itself runs to its end)");
  cmd->add_option("--buffer-mb", o->buffer_mb,
                  "Memory per process for events not yet written; past it events are dropped (and counted)")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  cmd->add_flag("--keep-parts", o->keep_parts, "Keep the per-process part files (OUTPUT.d/) after merging");
  cmd->add_option("command", o->command, "The command to trace, after --")->expected(-1);
  cmd->footer("Exit status: the command's own; 128+N when it was killed by signal N.\n"
              "Example:\n  dreamscope trace -o run.db -- python train.py --epochs 1\n"
              "  dreamscope trace -o cpu.db -- cpu_train --steps 50 --workers 2");
  return [o] { return run_trace(*o); };
});

} // namespace
} // namespace dreamscope::cli
