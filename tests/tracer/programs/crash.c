/* Records N ranges, then ends the way it is told to.
 * usage: crash N segv|abort|hang|exit:CODE [PIDFILE]
 * "hang" writes the pid to PIDFILE once the ranges are recorded and sleeps, to be killed. */
#include <nvtx3/nvToolsExt.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: crash N segv|abort|hang|exit:CODE [PIDFILE]\n");
    return 2;
  }
  int n = atoi(argv[1]);
  for (int i = 0; i < n; ++i) {
    nvtxRangePushA("work");
    nvtxRangePop();
  }
  const char* how = argv[2];
  if (strcmp(how, "segv") == 0) {
    volatile int* p = NULL;
    *p = 1;
  } else if (strcmp(how, "abort") == 0) {
    abort();
  } else if (strcmp(how, "hang") == 0) {
    /* Longer than the tracer's flush interval, so the ranges are on disk when we are killed. */
    usleep(500 * 1000);
    if (argc > 3) {
      FILE* f = fopen(argv[3], "w");
      fprintf(f, "%d\n", (int)getpid());
      fclose(f);
    }
    for (;;) pause();
  } else if (strncmp(how, "exit:", 5) == 0) {
    return atoi(how + 5);
  }
  return 0;
}
