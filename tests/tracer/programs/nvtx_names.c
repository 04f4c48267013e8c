/* Threads named through NVTX (nvtxNameOsThread), one after its first range was recorded and
 * one, by another thread, before it records anything: usage nvtx_names. */
#include <nvtx3/nvToolsExt.h>

#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static long g_worker_tid;
static int g_named;

static void sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

static void* worker(void* arg) {
  (void)arg;
  pthread_mutex_lock(&g_mu);
  g_worker_tid = syscall(SYS_gettid);
  pthread_cond_broadcast(&g_cv);
  while (!g_named) pthread_cond_wait(&g_cv, &g_mu);
  pthread_mutex_unlock(&g_mu);
  nvtxRangePushA("load");
  nvtxRangePop();
  return NULL;
}

int main(void) {
  nvtxRangePushA("setup");
  nvtxRangePop();
  /* Past the writer's next drain: the main thread's track is written with the OS's name. */
  sleep_ms(150);
  nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), "trainer");

  pthread_t t;
  pthread_create(&t, NULL, worker, NULL);
  pthread_mutex_lock(&g_mu);
  while (g_worker_tid == 0) pthread_cond_wait(&g_cv, &g_mu);
  nvtxNameOsThreadW((uint32_t)g_worker_tid, L"loader \u00e9 0");
  g_named = 1;
  pthread_cond_broadcast(&g_cv);
  pthread_mutex_unlock(&g_mu);
  pthread_join(t, NULL);
  nvtxRangePushA("step");
  nvtxRangePop();
  return 0;
}
