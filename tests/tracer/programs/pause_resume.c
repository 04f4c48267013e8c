/* Recording paused and resumed by the program, as ds_tracing_pause/resume do it: marks of
 * category 8 named "pause" and "resume" in the "dreamscope" domain. Ranges open across the
 * pauses on two threads, a started range across one, a range pushed while paused and popped
 * after the resume, and a second pause the process exits in. Prints what a push returned
 * while recording and while paused (NVTX's -2 when the tracer emptied the slot). */
#include <nvtx3/nvToolsExt.h>

#include <pthread.h>
#include <stdio.h>

static nvtxDomainHandle_t g_domain;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static int g_stage;

static void control(const char* what) {
  nvtxEventAttributes_t a = {0};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.category = 8;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = what;
  nvtxDomainMarkEx(g_domain, &a);
}

static void wait_stage(int stage) {
  pthread_mutex_lock(&g_mu);
  while (g_stage < stage) pthread_cond_wait(&g_cv, &g_mu);
  pthread_mutex_unlock(&g_mu);
}

static void set_stage(int stage) {
  pthread_mutex_lock(&g_mu);
  g_stage = stage;
  pthread_cond_broadcast(&g_cv);
  pthread_mutex_unlock(&g_mu);
}

static void* worker(void* arg) {
  (void)arg;
  nvtxRangePushA("worker-held");
  set_stage(1);
  wait_stage(2); /* recording paused and resumed meanwhile */
  nvtxRangePop(); /* ends worker-held: recorded as ending at the pause */
  nvtxRangePushA("worker-after");
  nvtxRangePop();
  return NULL;
}

int main(void) {
  g_domain = nvtxDomainCreateA("dreamscope");
  pthread_t t;
  pthread_create(&t, NULL, worker, NULL);
  wait_stage(1);

  const int recording = nvtxRangePushA("recorded-1");
  nvtxRangePop();
  nvtxRangePushA("open-at-pause");
  nvtxRangeId_t started = nvtxRangeStartA("started");
  control("pause");
  const int paused = nvtxRangePushA("paused-range");
  nvtxRangePop();
  nvtxMarkA("paused-mark");
  nvtxRangePop(); /* ends open-at-pause, unseen */
  nvtxRangePushA("spans-resume");
  control("resume");
  nvtxRangePushA("recorded-2");
  nvtxRangePop();
  nvtxRangePop(); /* ends spans-resume, pushed while paused: ignored */
  nvtxRangeEnd(started);
  set_stage(2);
  pthread_join(t, NULL);
  nvtxRangePushA("open-at-last-pause");
  control("pause");
  printf("push while recording %d, while paused %d\n", recording, paused);
  return 0; /* exits paused, inside open-at-last-pause */
}
