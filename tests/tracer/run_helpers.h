// Running programs under `dreamscope trace` from tests, and reading what they left.
#pragma once

#include <dreamscope/storage/trace_file.h>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace dreamscope::test {

struct RunResult {
  int exit_code = -1; // the process's exit code, or 128 + signal
  std::string output; // stdout and stderr together
};

// Where the built programs are: the build tree, unless the environment says otherwise (a copy
// of the binaries on another machine, e.g. scripts/device-bundle.sh's for a GPU machine).
inline std::string from_env_or(const char* variable, const char* built_in) {
  const char* v = std::getenv(variable);
  return v && *v ? v : built_in;
}
inline std::string bin(const std::string& name) { return from_env_or("DREAMSCOPE_TEST_BIN_DIR", DREAMSCOPE_BIN_DIR) + "/" + name; }
inline std::string program(const std::string& name) {
  return from_env_or("DREAMSCOPE_TEST_PROGRAMS", TRACER_TEST_PROGRAMS) + "/" + name;
}

// Runs argv with extra environment variables; output is captured through a file so that
// a program that leaves children holding the pipe cannot block the test.
inline RunResult run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {},
                     pid_t* started = nullptr) {
  const std::filesystem::path out_file =
      std::filesystem::temp_directory_path() / ("ds-test-out-" + std::to_string(getpid()) + ".txt");
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(out_file.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  if (started) *started = pid;
  int status = 0;
  waitpid(pid, &status, 0);
  RunResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  FILE* f = fopen(out_file.c_str(), "r");
  if (f) {
    char buf[4096];
    std::size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) r.output.append(buf, n);
    fclose(f);
  }
  std::filesystem::remove(out_file);
  return r;
}

// A fresh folder for one test's files.
inline std::filesystem::path scratch_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("dreamscope-test-" + name + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline std::vector<std::string> traced(const std::filesystem::path& out, std::vector<std::string> cmd,
                                       std::vector<std::string> options = {}) {
  std::vector<std::string> argv{bin("dreamscope"), "trace", "-f", "-o", out.string()};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back("--");
  argv.insert(argv.end(), cmd.begin(), cmd.end());
  return argv;
}

// Annotation rows as (name, category, payload, thread tid) for easy counting.
struct Row {
  std::string name, domain, category;
  std::int64_t payload;
  std::int64_t tid;
  std::int64_t pid;
  TimeNs start, end;
};

inline std::vector<Row> annotation_rows(const Trace& t) {
  std::vector<Row> rows;
  const auto& a = t.annotations();
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto& track = t.tracks()[a.track[i]];
    const std::int64_t pid = track.process == kNoIndex ? 0 : t.processes()[track.process].pid;
    rows.push_back(Row{std::string(t.str(a.name[i])), std::string(t.str(a.domain[i])),
                       std::string(t.str(a.category[i])), a.payload[i], track.tid, pid, a.start[i], a.end[i]});
  }
  return rows;
}

} // namespace dreamscope::test
