/* Paced NVTX load: THREADS threads each recording RATE/THREADS ranges per second for
 * SECONDS seconds, in bursts of 1000. usage: tracer_rate THREADS RATE SECONDS
 * bench/tracer/sustained_rate.py finds the highest rate the tracer takes without drops. */
#include <nvtx3/nvToolsExt.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double g_per_thread_rate;
static double g_seconds;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void* worker(void* arg) {
  (void)arg;
  const double start = now();
  long done = 0;
  for (;;) {
    const double t = now() - start;
    if (t >= g_seconds) break;
    const long due = (long)(t * g_per_thread_rate);
    if (done >= due) {
      struct timespec pause = {0, 200000};
      nanosleep(&pause, NULL);
      continue;
    }
    for (int i = 0; i < 1000; ++i) {
      nvtxRangePushA("load");
      nvtxRangePop();
    }
    done += 1000;
  }
  printf("%ld\n", done);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: tracer_rate THREADS RATE SECONDS\n");
    return 2;
  }
  const int threads = atoi(argv[1]);
  g_per_thread_rate = atof(argv[2]) / threads;
  g_seconds = atof(argv[3]);
  pthread_t t[256];
  for (int i = 0; i < threads && i < 256; ++i) pthread_create(&t[i], NULL, worker, NULL);
  for (int i = 0; i < threads && i < 256; ++i) pthread_join(t[i], NULL);
  return 0;
}
