// `dreamscope trace [options] -- CMD ARGS...`: runs CMD with the tracer preloaded and
// merges every traced process of the job into one trace file (docs/tracing.md).
//
// Each process the job starts (fork, exec, spawn) writes its own part file, a trace log
// (dreamscope/storage/trace_log.h), into OUTPUT.d/; when the whole job has ended, the parts are
// merged (merge_part_logs, dreamscope/storage/trace_merge.h) into OUTPUT and the folder is removed.
// The tracer is configured through the variables of dreamscope/storage/tracer_environment.h.
//
// With --per-rank, this process is one rank of a job started by srun or mpirun on many
// machines, and writes that rank's trace: the output names the rank (%r) from the same
// launcher variables the tracer reads (dreamscope/tracer/rank_environment.h).
#include "commands.h"
#include "output.h"

#include <dreamscope/tracer/rank_environment.h>
#include <dreamscope/storage/trace_file.h>
#include <dreamscope/storage/trace_merge.h>
#include <dreamscope/storage/trace_summary.h>
#include <dreamscope/storage/tracer_environment.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <memory>
#include <optional>
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
  std::string cuda_api = "used";
  double delay_s = 0;
  double duration_s = -1;
  bool output_given = false;
  bool force = false;
  bool keep_parts = false;
  bool per_rank = false;
  int buffer_mb = 512;
  std::string cost_probe = "0";
  int cost_probe_steps = tracer_environment::kDefaultCostProbeSteps;
  bool cost_probe_steps_given = false;
  std::string python = "on";
  int python_modules = 1;
  bool python_ops = false;
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
  fs::path tracer, annotate, python, python_boot;
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
      return Runtime{dir / "libdreamscope-tracer.so", dir / "libdreamscope-annotate.so", dir / "python",
                     dir / "python-boot"};
    }
  }
  why = "libdreamscope-tracer.so not found in";
  for (const auto& d : libs) why += " " + d.string();
  why += " (set DREAMSCOPE_LIB_DIR to its folder)";
  return std::nullopt;
}

// %p: the CLI's pid, %h: host, %t: local time (YYYYmmdd-HHMMSS), %r: the rank (given only
// with --per-rank, where it is known), %%: a percent sign, %n: the first number that makes a
// file name not taken yet.
std::string expand_output(const std::string& pattern, std::int64_t rank) {
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
      } else if (c == 'r' && rank != kNoValue) {
        out += std::to_string(rank);
      } else if (c == '%') {
        out += '%';
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

// Whether `pattern` uses the conversion %c (not a literal "%%c").
bool uses(const std::string& pattern, char c) {
  for (std::size_t i = 0; i + 1 < pattern.size(); ++i) {
    if (pattern[i] != '%') continue;
    if (pattern[i + 1] == c) return true;
    ++i; // "%%" and any other conversion: skip its letter
  }
  return false;
}

// The rank a --per-rank trace is of, or an error (printed) and kNoValue.
std::optional<std::int64_t> per_rank_output_rank(const TraceOptions& o, const std::string& pattern) {
  if (!o.per_rank) {
    if (uses(pattern, 'r')) {
      std::fprintf(stderr, "dreamscope trace: -o %s: %%r is the rank of a --per-rank trace (add --per-rank)\n",
                   pattern.c_str());
      return std::nullopt;
    }
    return kNoValue;
  }
  const RankPlacement place = rank_from_environment();
  for (const auto& w : place.warnings) std::fprintf(stderr, "dreamscope trace: %s\n", w.c_str());
  if (!uses(pattern, 'r') && !uses(pattern, 'p')) {
    std::fprintf(stderr,
                 "dreamscope trace: --per-rank -o %s: the output must name the rank (%%r) or the pid (%%p), "
                 "or every rank writes the same file\n",
                 pattern.c_str());
    return std::nullopt;
  }
  if (uses(pattern, 'r') && !place.is_rank()) {
    std::fprintf(stderr,
                 "dreamscope trace: --per-rank -o %s: no rank in the environment (%s is not set): run it "
                 "under the job's launcher (srun, mpirun), or use %%p\n",
                 pattern.c_str(), rank_variable_names().c_str());
    return std::nullopt;
  }
  return place.rank;
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

void prepend_path(const char* var, const std::string& value, char sep) {
  const char* old = std::getenv(var);
  std::string v = value;
  if (old && *old) v += sep + std::string(old);
  setenv(var, v.c_str(), 1);
}

// A job that recorded no event still has its trace written (its processes, its meta, and why:
// meta.no_events); said after "wrote", so that it is not taken for a recording to analyze.
void say_if_empty(const MergedJob& m, const fs::path& output) {
  if (m.no_events.empty()) return;
  std::fprintf(stderr, "dreamscope trace: %s: %s: %s\n", output.c_str(), kNoEventsText, m.no_events.c_str());
  std::fprintf(stderr,
               "dreamscope trace: analyze, whatif, replay, diff and export refuse it (--allow-empty goes on). To "
               "record something: NVTX ranges in the program (docs/annotations.md; in Python, the dreamscope module "
               "or torch.cuda.nvtx), or its CUDA work on a machine with a driver (docs/tracing.md, \"A trace with no "
               "events\")\n");
}

int run_trace(const TraceOptions& o) {
  if (o.command.empty()) {
    std::fprintf(stderr, "dreamscope trace: no command given (usage: dreamscope trace [options] -- CMD ARGS...)\n");
    return kExitUsage;
  }
  const std::string pattern = o.per_rank && !o.output_given ? std::string("dreamscope-rank%r.db") : o.output;
  const std::optional<std::int64_t> rank = per_rank_output_rank(o, pattern);
  if (!rank) return kExitUsage;
  const fs::path output = expand_output(pattern, *rank);
  std::error_code ec;
  try {
    check_replaceable_output(output);
  } catch (const TraceError& e) {
    std::fprintf(stderr, "dreamscope trace: %s\n", e.what());
    return kExitError;
  }
  if (fs::exists(output, ec) && !o.force) {
    std::fprintf(stderr, "dreamscope trace: %s exists (use --force to replace it)\n", output.c_str());
    return kExitUsage;
  }
  std::string why;
  const auto runtime = find_runtime(why);
  if (!runtime) {
    std::fprintf(stderr, "dreamscope trace: %s\n", why.c_str());
    return kExitError;
  }

  // The parts go next to the output. An output that cannot be written is known before the
  // program starts: running it would cost the user a job whose trace goes nowhere.
  std::optional<std::string> output_problem = cli::output_problem(output);
  const fs::path parts = output.string() + ".d";
  if (!output_problem) {
    fs::remove_all(parts, ec);
    fs::create_directories(parts, ec);
    if (ec) output_problem = fmt::format("cannot create {}: {}", parts.string(), ec.message());
  }
  if (output_problem) {
    std::fprintf(stderr, "dreamscope trace: cannot write %s: %s\n", output.c_str(), output_problem->c_str());
    return kExitError;
  }

  const std::string command = join(o.command);
  const bool cuda = o.sources.find("cuda") != std::string::npos;
  // Degrade, never fail: without a driver the job still runs and NVTX is still recorded.
  JobFacts job{.command = command, .root_program = o.command.front()};
  job.sources = o.sources;
  if (cuda) {
    if (void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL)) {
      dlclose(driver);
    } else {
      job.cuda_driver = false;
      job.warnings.push_back(
          "no CUDA driver on this machine (libcuda.so.1 not loadable): recording NVTX and the CPU side only");
    }
  }
  namespace env = tracer_environment;
  prepend_path("LD_PRELOAD", runtime->tracer.string(), ':');
  setenv("NVTX_INJECTION64_PATH", runtime->tracer.c_str(), 1);
  if (cuda) setenv("CUDA_INJECTION64_PATH", runtime->tracer.c_str(), 1);
  prepend_path("PYTHONPATH", runtime->python.string(), ':');
  // With the Python instrumentation on, every Python process of the job runs
  // python-boot/sitecustomize.py first, which records PyTorch's layer once torch is imported.
  if (o.python == "on") prepend_path("PYTHONPATH", runtime->python_boot.string(), ':');
  setenv(env::kPythonModules, std::to_string(o.python_modules).c_str(), 1);
  setenv(env::kPythonOps, o.python_ops ? "1" : "0", 1);
  setenv(env::kAnnotateLib, runtime->annotate.c_str(), 1);
  setenv(env::kOutputDir, fs::absolute(parts).c_str(), 1);
  setenv(env::kSources, o.sources.c_str(), 1);
  setenv(env::kCudaApi, o.cuda_api.c_str(), 1);
  setenv(env::kBufferMb, std::to_string(o.buffer_mb).c_str(), 1);
  setenv(env::kCostProbe, o.cost_probe.c_str(), 1);
  // Time-window probes asked for take the place of the default probe steps.
  const bool windows_instead = !o.cost_probe_steps_given && o.cost_probe != "0";
  setenv(env::kCostProbeSteps, std::to_string(windows_instead ? 0 : o.cost_probe_steps).c_str(), 1);
  setenv(env::kCommand, command.c_str(), 1);
  setenv(env::kJobStartNs, std::to_string(monotonic_ns()).c_str(), 1);
  setenv(env::kDelayNs, std::to_string(static_cast<std::int64_t>(o.delay_s * 1e9)).c_str(), 1);
  setenv(env::kDurationNs,
         std::to_string(o.duration_s < 0 ? -1 : static_cast<std::int64_t>(o.duration_s * 1e9)).c_str(), 1);

  // Orphans of the job (a daemonized loader, a grandchild whose parent died) are
  // re-parented to us, so that "the job has ended" means every process of it has.
  prctl(PR_SET_CHILD_SUBREAPER, 1);

  std::vector<char*> argv;
  for (const auto& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // The child reports a failed exec through this pipe (closed on a successful one), so that
  // a program that could not be started is told apart from one that exited 127 itself.
  int exec_report[2];
  if (pipe2(exec_report, O_CLOEXEC) != 0) {
    std::fprintf(stderr, "dreamscope trace: cannot start %s: pipe: %s\n", argv[0], std::strerror(errno));
    fs::remove_all(parts, ec);
    return kExitError;
  }
  const pid_t child = fork();
  if (child < 0) {
    std::fprintf(stderr, "dreamscope trace: cannot start %s: fork: %s\n", argv[0], std::strerror(errno));
    fs::remove_all(parts, ec);
    return kExitError;
  }
  if (child == 0) {
    close(exec_report[0]);
    execvp(argv[0], argv.data());
    const int err = errno;
    [[maybe_unused]] const auto written = write(exec_report[1], &err, sizeof err);
    _exit(127);
  }
  close(exec_report[1]);
  int exec_errno = 0;
  ssize_t got;
  while ((got = read(exec_report[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR) {
  }
  close(exec_report[0]);
  if (got == static_cast<ssize_t>(sizeof exec_errno)) {
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    // As a shell says it: 127 for a program not found, 126 for one found but not runnable.
    std::fprintf(stderr, "dreamscope trace: cannot run %s: %s; no trace written\n", argv[0],
                 std::strerror(exec_errno));
    fs::remove_all(parts, ec);
    return exec_errno == ENOENT ? 127 : 126;
  }
  // Said once the program runs: for a program that could not start, its one line is all.
  for (const auto& w : job.warnings) std::fprintf(stderr, "dreamscope trace: %s\n", w.c_str());
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

  try {
    job.root_pid = child;
    job.root_exit_status = exit_code;
    // The cores the job could run on: what a what-if that adds threads shares (`cores=`).
    if (cpu_set_t cpus; sched_getaffinity(0, sizeof cpus, &cpus) == 0) job.cpu_cores = CPU_COUNT(&cpus);
    const MergedJob m = merge_part_logs(parts, job);
    for (const auto& w : m.warnings) std::fprintf(stderr, "dreamscope trace: %s\n", w.c_str());
    write_trace(m.trace, output);
    if (!o.keep_parts) fs::remove_all(parts, ec);
    std::fprintf(stderr, "dreamscope trace: wrote %s (%zu process%s, %zu events%s)\n", output.c_str(),
                 m.processes, m.processes == 1 ? "" : "es", m.events, m.complete ? "" : ", incomplete");
    say_if_empty(m, output);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dreamscope trace: cannot write %s: %s; the parts are kept in %s\n", output.c_str(),
                 e.what(), parts.c_str());
  }
  return exit_code;
}

const CommandRegistration trace_command(10, "trace", [](CLI::App& app) -> CommandAction {
  auto o = std::make_shared<TraceOptions>();
  auto* cmd = app.add_subcommand("trace", "Run a command with the tracer and write one trace of all its processes");
  auto* output = cmd->add_option("-o,--output", o->output,
                  "Trace file; %n: first free number, %p: pid, %h: host, %t: date-time, %r: rank (with "
                  "--per-rank), %%: a percent sign (default with --per-rank: dreamscope-rank%r.db)")
      ->capture_default_str();
  cmd->add_flag("-f,--force", o->force, "Replace the output file if it exists");
  cmd->add_option("--trace", o->sources, "What to record: cuda, nvtx, or both (cuda,nvtx)")->capture_default_str();
  cmd->add_option("--cuda-api", o->cuda_api,
                  "Which CUDA API calls to record. used: those an analysis reads (launches, copies, memsets, "
                  "syncs, events, allocations, graphs); most: all but the frequent ones that launch no GPU work "
                  "(cudaGetDevice, cuKernelGetName, ...); all: every call")
      ->check(CLI::IsMember({"used", "most", "all"}))
      ->capture_default_str();
  cmd->add_option("--delay", o->delay_s, "Seconds after the start before recording (events starting earlier are dropped)");
  cmd->add_option("--duration", o->duration_s, "Seconds to record after the delay (the job itself runs to its end)");
  cmd->add_option("--buffer-mb", o->buffer_mb,
                  "Memory per process for events not yet written; past it events are dropped (and counted)")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  cmd->add_option("--cost-probe", o->cost_probe,
                  "GAP_MS[:LENGTH_MS]: every GAP_MS on average, for LENGTH_MS (default 5), count the NVTX ranges "
                  "inside two open ones instead of recording them, so that --correct-overhead can scale the "
                  "calls' own timing to what recording cost the job where the cost landed (LENGTH/GAP of those "
                  "ranges go unrecorded; steps and their phases never). 150:5 is a start; 0: no probes")
      ->check([](const std::string& v) -> std::string {
        const auto colon = v.find(':');
        auto digits = [](std::string_view d) {
          return !d.empty() && d.size() <= 7 && d.find_first_not_of("0123456789") == std::string_view::npos;
        };
        if (digits(std::string_view(v).substr(0, colon)) &&
            (colon == std::string::npos || digits(std::string_view(v).substr(colon + 1)))) {
          return {};
        }
        return "expected GAP_MS or GAP_MS:LENGTH_MS (whole milliseconds), got " + v;
      })
      ->capture_default_str();
  auto* probe_steps = cmd->add_option("--cost-probe-steps", o->cost_probe_steps,
                  "N: one outermost range (a step) in N on average, on every thread, counts the NVTX ranges "
                  "inside two open ones instead of recording them and ends with a `cost probe step` mark; "
                  "--correct-overhead compares each such step with its recorded neighbours to learn what a "
                  "recorded range cost the job in wall time. The trace fills each such step with the ranges "
                  "of the nearest recorded step that ran as many (flagged filled_from, hatched in the GUI); "
                  "steps and phases are always recorded. 0: none, every range recorded. Takes the place of "
                  "--cost-probe; --cost-probe alone turns these off")
      ->check(CLI::Range(0, 1'000'000))
      ->capture_default_str();
  cmd->add_option("--python", o->python,
                  "on: record PyTorch's framework layer in every Python process with no code change (steps, "
                  "batch waits, DataLoader workers' fetch and collate, module forwards, backward, optimizer, "
                  "collectives); off: only what the program annotates itself")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  cmd->add_option("--python-modules", o->python_modules,
                  "How deep into the model forward ranges go: 0 the model's forward only, 1 also its direct "
                  "children, ...; -1 none")
      ->check(CLI::Range(-1, 64))
      ->capture_default_str();
  cmd->add_flag("--python-ops", o->python_ops,
                "Also record PyTorch's per-operator NVTX ranges (emit_nvtx) where CUDA is present");
  cmd->add_flag("--keep-parts", o->keep_parts, "Keep the per-process part files (OUTPUT.d/) after merging");
  cmd->add_flag("--per-rank", o->per_rank,
                "This is one rank of a job launched on many machines (srun, mpirun): write its own trace, "
                "named by its rank (%r) from RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID or PMI_RANK");
  cmd->add_option("command", o->command, "The command to trace, after --")->expected(-1);
  cmd->footer("Exit status: the command's own; 128+N when it was killed by signal N; 127 (not found) or 126\n"
              "(not runnable) when it could not be started, and 1 when OUTPUT cannot be written: both are\n"
              "found before anything runs, and no trace is written; 2 for a bad command line, or a --per-rank\n"
              "output with %r where no rank variable is set.\n"
              "A job that recorded no event (no NVTX range, CUDA API call or GPU work) is still written, and\n"
              "said so after \"wrote\" with why; the analyses refuse it (docs/tracing.md, \"A trace with no events\").\n"
              "Every process of the job is in the one trace, with its rank, local rank and world size\n"
              "when its launcher set them (torchrun's RANK, LOCAL_RANK, WORLD_SIZE; Open MPI's, Slurm's, PMI's).\n"
              "Example:\n  dreamscope trace -o run.db -- python train.py --epochs 1\n"
              "  dreamscope trace -o cpu.db -- cpu_train --steps 50 --workers 2\n"
              "  dreamscope trace -o job.db -- torchrun --nproc-per-node 4 train.py\n"
              "  dreamscope trace -o job.db -- dist_train --launch 4\n"
              "  srun -N 2 --ntasks-per-node 8 dreamscope trace --per-rank -o 'trace-%r.db' -- python train.py");
  return [o, output, probe_steps] {
    o->output_given = output->count() > 0;
    o->cost_probe_steps_given = probe_steps->count() > 0;
    return run_trace(*o);
  };
});

} // namespace
} // namespace dreamscope::cli
