/* Ranges of two NVTX domains on one thread, interleaved as PyTorch's autograd thread does
 * with --python-ops: an operator range (default domain) is open when the framework's
 * `backward` (its own domain) is pushed, and is popped first. NVTX keeps one stack per
 * domain, so each pop ends its own domain's range: usage nvtx_domains. */
#include <nvtx3/nvToolsExt.h>

#include <time.h>

static void sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

int main(void) {
  nvtxDomainHandle_t framework = nvtxDomainCreateA("framework");
  nvtxEventAttributes_t backward = {0};
  backward.version = NVTX_VERSION;
  backward.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  backward.messageType = NVTX_MESSAGE_TYPE_ASCII;
  backward.message.ascii = "backward";

  nvtxRangePushA("evaluate_function");
  sleep_ms(2);
  nvtxDomainRangePushEx(framework, &backward);
  sleep_ms(2);
  nvtxRangePop(); /* ends evaluate_function, not backward */
  for (int i = 0; i < 3; ++i) {
    nvtxRangePushA("op");
    sleep_ms(2);
    nvtxRangePop();
  }
  sleep_ms(2);
  nvtxDomainRangePop(framework); /* ends backward, after every op */
  nvtxDomainRangePop(framework); /* unbalanced: nothing of its domain is open */
  nvtxRangePushA("after");
  nvtxRangePop();
  return 0;
}
