/* A small process tree: the parent records ranges, forks a child that records its own and
 * then execs this program again in "exec'd" mode, which records more and exits 0.
 * usage: fork_exec [--execd] */
#include <nvtx3/nvToolsExt.h>

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void ranges(const char* name, int n) {
  for (int i = 0; i < n; ++i) {
    nvtxRangePushA(name);
    nvtxRangePop();
  }
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "--execd") == 0) {
    ranges("execd", 30);
    return 0;
  }
  ranges("parent-before", 10);
  pid_t child = fork();
  if (child == 0) {
    ranges("child", 20);
    execl("/proc/self/exe", argv[0], "--execd", (char*)NULL);
    perror("execl");
    _exit(99);
  }
  ranges("parent-after", 5);
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
