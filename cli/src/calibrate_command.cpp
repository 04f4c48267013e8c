// `dreamscope calibrate [--apply TRACE]`: measures what the tracer adds to each recorded
// event on this machine, more thoroughly than the tracer's self-calibration at start, and
// optionally writes the figures into a trace's calibration table for overhead correction.
//
// The same measurement runs twice in a child process (this executable, re-run): once with
// no NVTX tool attached, once under libdreamscope-tracer.so. The cost of an event kind is
// the difference of the two medians: exactly what tracing added to the calling thread.
// Calls come in batches with pauses for the tracer's writer thread, which drains each batch
// and recycles its chunks, so the figure is the recording path that a real job sees. Where a
// CUDA device is, kernel launches are timed the same way (cuda_launch_timing.h): on a GPU the
// tracer's largest cost per event is CUPTI's instrumentation of each launch.
#include "commands.h"
#include "cuda_launch_timing.h"

#include <dreamscope/annotate.h>
#include <dreamscope/storage/trace_file.h>
#include <dreamscope/storage/tracer_environment.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

namespace dreamscope::cli {

namespace {

namespace fs = std::filesystem;

constexpr const char* kChildVariable = "DREAMSCOPE_CALIBRATE_CHILD";

struct CalibrateOptions {
  std::vector<std::string> apply;
  int rounds = 21;
  int batch = 10000;
  bool json = false;
  bool cuda = true;
  bool cuda_only = false; // kernel launches alone: a GPU trace's missing cuda_launch, quickly
};

// Launches a batch: enough to time well, few enough that the GPU's queue never fills (a full
// queue makes a launch wait for the GPU, which is not the launch's cost).
constexpr int kLaunchBatch = 256;

// A child's answer: one "<event kind> <ns>" line per measured kind; "# <key> <text>" lines
// are notes: "# cuda_launch <why>" for a kind this machine could not measure, "# device
// <name>" for the GPU the launches ran on.
struct ChildAnswer {
  std::map<std::string, double> costs;
  std::map<std::string, std::string> notes;
};

// In the child: per event kind, the median over `rounds` batches of the cost of one call.
int measure(int rounds, int batch, bool cuda, bool nvtx) {
  const ds_string_t registered = ds_register_string("calibrate");
  using clock = std::chrono::steady_clock;
  auto median_ns = [&](auto&& call) {
    std::vector<double> per_call;
    for (int r = 0; r < rounds; ++r) {
      const auto t0 = clock::now();
      for (int i = 0; i < batch; ++i) call(i);
      per_call.push_back(std::chrono::duration<double, std::nano>(clock::now() - t0).count() / batch);
      // Let the tracer's writer drain the batch before the next one.
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::sort(per_call.begin(), per_call.end());
    return per_call[per_call.size() / 2];
  };
  if (nvtx) {
    const double range = median_ns([](int i) {
      ds_range_push(DS_CATEGORY_OPERATION, "calibrate", i);
      ds_range_pop();
    });
    const double range_registered = median_ns([&](int i) {
      ds_range_push_registered(DS_CATEGORY_OPERATION, registered, i);
      ds_range_pop();
    });
    const double mark = median_ns([](int i) { ds_mark(DS_CATEGORY_OPERATION, "calibrate", i); });
    std::printf("nvtx_range %.3f\nnvtx_range_registered %.3f\nnvtx_mark %.3f\n", range, range_registered, mark);
  }
  if (cuda) {
    std::fflush(stdout);
    const auto launches = time_cuda_launches(rounds, kLaunchBatch);
    if (const auto* t = std::get_if<CudaLaunchTiming>(&launches)) {
      std::printf("cuda_launch %.3f\n# device %s\n", t->launch_ns, t->device.c_str());
    } else {
      std::printf("# cuda_launch %s\n", std::get<std::string>(launches).c_str());
    }
  }
  return 0;
}

fs::path tracer_library() {
  if (const char* env = std::getenv("DREAMSCOPE_LIB_DIR"); env && *env) return fs::path(env) / "libdreamscope-tracer.so";
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return exe.parent_path().parent_path() / "lib" / "libdreamscope-tracer.so";
}

ChildAnswer run_child(const CalibrateOptions& o, bool traced, const fs::path& parts) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    setenv(kChildVariable, "1", 1);
    if (traced) {
      const std::string lib = tracer_library().string();
      setenv("LD_PRELOAD", lib.c_str(), 1);
      setenv("NVTX_INJECTION64_PATH", lib.c_str(), 1);
      setenv(tracer_environment::kOutputDir, parts.c_str(), 1);
      // CUPTI starts at the driver's cuInit when the driver is told to inject the tracer.
      if (o.cuda || o.cuda_only) setenv("CUDA_INJECTION64_PATH", lib.c_str(), 1);
      setenv(tracer_environment::kSources, o.cuda || o.cuda_only ? "nvtx,cuda" : "nvtx", 1);
    } else {
      unsetenv("LD_PRELOAD");
      unsetenv("NVTX_INJECTION64_PATH");
      unsetenv("CUDA_INJECTION64_PATH");
    }
    const std::string rounds = std::to_string(o.rounds), batch = std::to_string(o.batch);
    std::vector<const char*> argv = {"dreamscope", "calibrate", "--rounds", rounds.c_str(), "--batch", batch.c_str(),
                                     o.cuda ? "--cuda" : "--no-cuda"};
    if (o.cuda_only) argv.push_back("--cuda-only");
    argv.push_back(nullptr);
    execv("/proc/self/exe", const_cast<char* const*>(argv.data()));
    _exit(127);
  }
  close(fds[1]);
  std::string out;
  char buf[512];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error(fmt::format("the {} measurement failed", traced ? "traced" : "untraced"));
  }
  ChildAnswer answer;
  std::size_t at = 0;
  while (at < out.size()) {
    const std::size_t end = out.find('\n', at);
    std::string line = out.substr(at, end == std::string::npos ? std::string::npos : end - at);
    const bool note = line.starts_with("# ");
    if (note) line.erase(0, 2);
    const std::size_t space = line.find(' ');
    if (space != std::string::npos) {
      const std::string kind = line.substr(0, space);
      if (note) {
        answer.notes[kind] = line.substr(space + 1);
      } else {
        answer.costs[kind] = std::atof(line.c_str() + space + 1);
      }
    }
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return answer;
}

int run_calibrate(const CalibrateOptions& o) {
  if (std::getenv(kChildVariable)) return measure(o.rounds, o.batch, o.cuda || o.cuda_only, !o.cuda_only);
  if (!fs::exists(tracer_library())) {
    std::fprintf(stderr, "dreamscope calibrate: %s not found (set DREAMSCOPE_LIB_DIR)\n", tracer_library().c_str());
    return kExitError;
  }
  char tmpl[] = "/tmp/dreamscope-calibrate-XXXXXX";
  const char* made = mkdtemp(tmpl);
  if (!made) {
    std::fprintf(stderr, "dreamscope calibrate: cannot create a temporary folder\n");
    return kExitError;
  }
  const fs::path parts = made;
  ChildAnswer untraced_answer, traced_answer;
  try {
    untraced_answer = run_child(o, false, parts);
    traced_answer = run_child(o, true, parts);
  } catch (const std::exception& e) {
    fs::remove_all(parts);
    std::fprintf(stderr, "dreamscope calibrate: %s\n", e.what());
    return kExitError;
  }
  fs::remove_all(parts);
  auto& untraced = untraced_answer.costs;
  const auto& traced = traced_answer.costs;

  const std::string method = fmt::format(
      "dreamscope calibrate: median of {} batches of {} calls, traced minus untraced", o.rounds, o.batch);
  std::vector<CalibrationRecord> records;
  for (const auto& [kind, cost] : traced) {
    // A kind measured in one child only (a device that one of them could not open) is no figure.
    if (!untraced.count(kind)) continue;
    const bool launches = kind == "cuda_launch";
    const std::string device = launches && untraced_answer.notes.count("device") ? untraced_answer.notes.at("device") : "";
    records.push_back(CalibrationRecord{
        kind, std::max(cost - untraced.at(kind), 0.0), static_cast<std::int64_t>(o.rounds) * (launches ? kLaunchBatch : o.batch),
        launches ? fmt::format("dreamscope calibrate: median of {} batches of {} empty-kernel launches on {}, traced "
                               "minus untraced (what recording adds to a kernel launch call)",
                               o.rounds, kLaunchBatch, device)
                 : method});
  }
  // Why a kind is missing, as the untraced child found it (else the traced one).
  std::map<std::string, std::string> skipped = traced_answer.notes;
  for (const auto& [kind, why] : untraced_answer.notes) skipped[kind] = why;
  skipped.erase("device");
  for (const auto& [kind, why] : skipped) {
    std::fprintf(stderr, "dreamscope calibrate: %s not measured: %s\n", kind.c_str(), why.c_str());
  }
  if (records.empty()) {
    std::fprintf(stderr, "dreamscope calibrate: nothing measured%s\n", o.apply.empty() ? "" : ", nothing written");
    return kExitError;
  }
  if (o.json) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& r : records) {
      j.push_back({{"event_kind", r.event_kind}, {"cost_ns", r.cost_ns}, {"traced_ns", traced.at(r.event_kind)},
                   {"untraced_ns", untraced[r.event_kind]}, {"samples", r.samples}});
    }
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::printf("%-24s%12s%12s%12s\n", "event", "untraced", "traced", "cost");
    for (const auto& r : records) {
      std::printf("%-24s%9.1f ns%9.1f ns%9.1f ns\n", r.event_kind.c_str(), untraced[r.event_kind],
                  traced.at(r.event_kind), r.cost_ns);
    }
  }
  for (const std::string& trace : o.apply) {
    replace_calibration(trace, records);
    std::fprintf(stderr, "dreamscope calibrate: wrote %zu costs into %s\n", records.size(), trace.c_str());
  }
  return kExitOk;
}

const CommandRegistration calibrate_command(80, "calibrate", [](CLI::App& app) -> CommandAction {
  auto o = std::make_shared<CalibrateOptions>();
  auto* cmd = app.add_subcommand("calibrate", "Measure what the tracer adds per recorded event on this machine");
  cmd->add_option("--apply", o->apply,
                  "Write the measured costs into this trace's calibration table (repeat it for several traces: "
                  "one measurement, written into each)");
  cmd->add_option("--rounds", o->rounds, "Batches per event kind (the median is kept)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--batch", o->batch, "Calls per batch (the writer drains between batches)")
      ->check(CLI::Range(1, 15000))
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "Print JSON instead of a table");
  cmd->add_flag("--cuda,!--no-cuda", o->cuda,
                "Also time kernel launches on the first CUDA device, untraced and traced (cuda_launch); "
                "skipped, and said, where there is none")
      ->capture_default_str();
  cmd->add_flag("--cuda-only", o->cuda_only,
                "Time kernel launches only (a few seconds): with --apply, adds cuda_launch to GPU traces and leaves "
                "their other calibration rows as the tracer measured them");
  cmd->footer("Examples:\n  dreamscope calibrate\n  dreamscope calibrate --apply run.db\n"
              "  dreamscope calibrate --cuda-only --apply gpu_run.db --apply other_gpu_run.db");
  return [o] { return run_calibrate(*o); };
});

} // namespace
} // namespace dreamscope::cli
