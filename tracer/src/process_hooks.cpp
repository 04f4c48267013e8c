// How the tracer follows the traced process: it starts when the library loads, closes its
// part file at exit, _exit and exec (a process image that ends cleanly leaves a complete
// part), starts a new part after a failed exec, and on a fatal signal asks the writer to
// flush before the signal's original behaviour runs.
#include "recorder.h"

#include <dreamscope/storage/tracer_environment.h>

#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern char** environ;

namespace dreamscope::tracer {
namespace {

// The process that owns the tracer state. A vfork child shares our memory but has its own
// pid: it must not touch the tracer at all.
pid_t g_owner = 0;
bool owner() { return g_owner != 0 && getpid() == g_owner; }

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT, SIGHUP};
struct sigaction g_previous[NSIG];

void on_signal(int sig, siginfo_t* info, void* context) {
  const struct sigaction& prev = g_previous[sig];
  // The program's own handler decides what the signal means; we stay out of the way.
  if ((prev.sa_flags & SA_SIGINFO) && prev.sa_sigaction) {
    prev.sa_sigaction(sig, info, context);
    return;
  }
  if (!(prev.sa_flags & SA_SIGINFO) && prev.sa_handler == SIG_IGN) return;
  if (!(prev.sa_flags & SA_SIGINFO) && prev.sa_handler != SIG_DFL) {
    prev.sa_handler(sig);
    return;
  }
  // A crash leaves the part flushed but incomplete; a request to terminate closes it.
  const bool terminate = sig == SIGTERM || sig == SIGINT || sig == SIGHUP;
  if (owner()) tracer_flush_from_signal(terminate ? sig : 0);
  sigaction(sig, &prev, nullptr);
  // A fault raised by the CPU happens again when we return, now with the default action;
  // anything else is re-raised and delivered as soon as this handler returns.
  const bool hardware_fault = (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL) && info &&
                              info->si_code > 0;
  if (!hardware_fault) raise(sig);
}

void install_signal_handlers() {
  for (int sig : kFatalSignals) {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    struct sigaction old;
    if (sigaction(sig, nullptr, &old) != 0) continue;
    // A signal the parent process ignored stays ignored (nohup, background jobs).
    if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN) continue;
    g_previous[sig] = old;
    sigaction(sig, &sa, nullptr);
  }
}

void on_process_exit(int status, void*) {
  if (owner()) tracer_end_session(true, status, "exit", false);
}

void after_fork_child() { g_owner = getpid(); }

__attribute__((constructor)) void load() {
  if (!tracer_start()) return;
  g_owner = getpid();
  on_exit(on_process_exit, nullptr);
  pthread_atfork(nullptr, nullptr, after_fork_child);
  install_signal_handlers();
}

template <class F>
F real(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

// The variables that make a process traced; a program that execs with its own environment
// keeps them, so its child is traced too.
std::vector<char*> environment_with_tracer(char* const envp[], std::vector<std::string>& storage) {
  static const char* const kKeep[] = {"LD_PRELOAD=", "NVTX_INJECTION64_PATH=", "CUDA_INJECTION64_PATH=",
                                      tracer_environment::kPrefix, "PYTHONPATH="};
  std::vector<char*> out;
  for (char* const* e = envp; e && *e; ++e) out.push_back(*e);
  for (char** e = environ; e && *e; ++e) {
    bool ours = false;
    for (const char* k : kKeep) ours = ours || std::strncmp(*e, k, std::strlen(k)) == 0;
    if (!ours) continue;
    const char* eq = std::strchr(*e, '=');
    const std::size_t key_len = eq ? static_cast<std::size_t>(eq - *e) + 1 : std::strlen(*e);
    bool present = false;
    for (char* x : out) present = present || std::strncmp(x, *e, key_len) == 0;
    if (!present) storage.emplace_back(*e);
  }
  for (auto& s : storage) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

void before_exec() {
  if (owner()) tracer_end_session(true, INT64_MIN, "exec", true);
}

void after_failed_exec() {
  if (owner()) tracer_restart_session();
}

} // namespace
} // namespace dreamscope::tracer

using namespace dreamscope::tracer;

extern "C" {

__attribute__((visibility("default"))) void _exit(int status) {
  static auto next = real<void (*)(int)>("_exit");
  if (owner()) tracer_end_session(true, status, "_exit", false);
  next(status);
  __builtin_unreachable();
}

__attribute__((visibility("default"))) void _Exit(int status) {
  static auto next = real<void (*)(int)>("_Exit");
  if (owner()) tracer_end_session(true, status, "_exit", false);
  next(status);
  __builtin_unreachable();
}

__attribute__((visibility("default"))) int execve(const char* path, char* const argv[], char* const envp[]) {
  static auto next = real<int (*)(const char*, char* const[], char* const[])>("execve");
  if (!owner()) return next(path, argv, envp);
  std::vector<std::string> storage;
  std::vector<char*> env = environment_with_tracer(envp, storage);
  before_exec();
  const int rc = next(path, argv, env.data());
  const int saved = errno;
  after_failed_exec();
  errno = saved;
  return rc;
}

__attribute__((visibility("default"))) int execvpe(const char* file, char* const argv[], char* const envp[]) {
  static auto next = real<int (*)(const char*, char* const[], char* const[])>("execvpe");
  if (!owner()) return next(file, argv, envp);
  std::vector<std::string> storage;
  std::vector<char*> env = environment_with_tracer(envp, storage);
  before_exec();
  const int rc = next(file, argv, env.data());
  const int saved = errno;
  after_failed_exec();
  errno = saved;
  return rc;
}

__attribute__((visibility("default"))) int execv(const char* path, char* const argv[]) {
  static auto next = real<int (*)(const char*, char* const[])>("execv");
  if (!owner()) return next(path, argv);
  before_exec();
  const int rc = next(path, argv);
  const int saved = errno;
  after_failed_exec();
  errno = saved;
  return rc;
}

__attribute__((visibility("default"))) int execvp(const char* file, char* const argv[]) {
  static auto next = real<int (*)(const char*, char* const[])>("execvp");
  if (!owner()) return next(file, argv);
  before_exec();
  const int rc = next(file, argv);
  const int saved = errno;
  after_failed_exec();
  errno = saved;
  return rc;
}

namespace {
std::vector<char*> collect(const char* first, va_list ap, char*** envp_out) {
  std::vector<char*> args{const_cast<char*>(first)};
  while (char* a = va_arg(ap, char*)) args.push_back(a);
  args.push_back(nullptr);
  if (envp_out) *envp_out = va_arg(ap, char**);
  return args;
}
} // namespace

__attribute__((visibility("default"))) int execl(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  std::vector<char*> args = collect(arg, ap, nullptr);
  va_end(ap);
  return execv(path, args.data());
}

__attribute__((visibility("default"))) int execlp(const char* file, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  std::vector<char*> args = collect(arg, ap, nullptr);
  va_end(ap);
  return execvp(file, args.data());
}

__attribute__((visibility("default"))) int execle(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  char** envp = nullptr;
  std::vector<char*> args = collect(arg, ap, &envp);
  va_end(ap);
  return execve(path, args.data(), envp);
}

} // extern "C"
