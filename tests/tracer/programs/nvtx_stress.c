/* Nested NVTX ranges from many threads at once: usage nvtx_stress THREADS RANGES_PER_THREAD.
 * Each iteration is an outer range with one nested inside (2 ranges); RANGES_PER_THREAD
 * should be even. */
#include <nvtx3/nvToolsExt.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static long g_ranges;

static void* worker(void* arg) {
  (void)arg;
  for (long i = 0; i < g_ranges / 2; ++i) {
    nvtxRangePushA("outer");
    nvtxRangePushA("inner");
    nvtxRangePop();
    nvtxRangePop();
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: nvtx_stress THREADS RANGES_PER_THREAD\n");
    return 2;
  }
  int threads = atoi(argv[1]);
  g_ranges = atol(argv[2]);
  pthread_t* t = calloc((size_t)threads, sizeof *t);
  for (int i = 0; i < threads; ++i) pthread_create(&t[i], NULL, worker, NULL);
  for (int i = 0; i < threads; ++i) pthread_join(t[i], NULL);
  free(t);
  return 0;
}
