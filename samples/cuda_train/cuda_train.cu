// cuda_train: a small MLP trained on the GPU with cuBLAS and a few hand-written kernels,
// fed by a host loader thread through pinned memory and a copy stream: the shape of a real
// training job, small enough to trace in seconds.
//
// Per step: the loader thread fills a pinned buffer (fetch: synthetic reads; prep: decode
// and normalize), the main thread waits for it (wait), copies it to the device on the copy
// stream, records an event, makes the compute stream wait on it, then forward (cuBLAS
// SGEMM + bias/ReLU kernel), loss (softmax cross-entropy kernel), backward (SGEMMs + ReLU
// mask kernel), optimizer (SGD kernel). dreamscope annotations mark every phase.
#include <dreamscope/annotate.hpp>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#define CUDA_CHECK(x)                                                                         \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "cuda_train: %s: %s\n", #x, cudaGetErrorString(e_));               \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)
#define CUBLAS_CHECK(x)                                                                       \
  do {                                                                                        \
    cublasStatus_t s_ = (x);                                                                  \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                        \
      std::fprintf(stderr, "cuda_train: %s: cuBLAS status %d\n", #x, static_cast<int>(s_));   \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

namespace {

struct Options {
  int steps = 50, batch = 256, input = 1024, hidden = 2048, classes = 16, prefetch = 2;
  int fetch_delay_us = 0;
  bool no_loading = false;
  float lr = 0.01f;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "cuda_train: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return std::atoi(argv[++i]);
    };
    if (a == "--steps") o.steps = next();
    else if (a == "--batch-size") o.batch = next();
    else if (a == "--input-dim") o.input = next();
    else if (a == "--hidden") o.hidden = next();
    else if (a == "--prefetch") o.prefetch = next();
    else if (a == "--fetch-delay-us") o.fetch_delay_us = next();
    else if (a == "--no-loading") o.no_loading = true;
    else {
      std::fprintf(stderr,
                   "usage: cuda_train [--steps N] [--batch-size N] [--input-dim N] [--hidden N] [--prefetch N] "
                   "[--fetch-delay-us N] [--no-loading]\n");
      std::exit(a == "-h" || a == "--help" ? 0 : 2);
    }
  }
  return o;
}

// out[i, j] = max(out[i, j] + bias[j], 0), column-major (rows = features).
__global__ void bias_relu(float* out, const float* bias, int features, int batch) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < features * batch) out[i] = fmaxf(out[i] + bias[i % features], 0.f);
}

__global__ void add_bias(float* out, const float* bias, int features, int batch) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < features * batch) out[i] += bias[i % features];
}

// One thread per sample: softmax over its logits, gradient (p - onehot) / batch, loss.
__global__ void softmax_xent(const float* logits, const int* labels, float* grad, float* loss, int classes,
                             int batch) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= batch) return;
  const float* z = logits + n * classes;
  float m = z[0];
  for (int k = 1; k < classes; ++k) m = fmaxf(m, z[k]);
  float sum = 0;
  for (int k = 0; k < classes; ++k) sum += expf(z[k] - m);
  for (int k = 0; k < classes; ++k) {
    const float p = expf(z[k] - m) / sum;
    grad[n * classes + k] = (p - (k == labels[n] ? 1.f : 0.f)) / batch;
  }
  atomicAdd(loss, -(z[labels[n]] - m - logf(sum)) / batch);
}

__global__ void relu_backward(float* grad, const float* activation, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count && activation[i] <= 0.f) grad[i] = 0.f;
}

// Bias gradient: the row sums of grad (features x batch).
__global__ void row_sum(const float* grad, float* out, int features, int batch) {
  const int f = blockIdx.x * blockDim.x + threadIdx.x;
  if (f >= features) return;
  float s = 0;
  for (int n = 0; n < batch; ++n) s += grad[f + n * features];
  out[f] = s;
}

__global__ void sgd(float* w, const float* g, float lr, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) w[i] -= lr * g[i];
}

int blocks(int n) { return (n + 255) / 256; }

// A pinned host batch slot: features (input x batch, column-major) and labels.
struct Slot {
  float* x = nullptr;
  int* y = nullptr;
  long batch_id = -1;
  bool ready = false;
};

} // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "cuda_train: no CUDA device\n");
    return 1;
  }
  const int B = o.batch, D = o.input, H = o.hidden, C = o.classes;

  cudaStream_t compute, copy;
  CUDA_CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking));
  cublasHandle_t blas;
  CUBLAS_CHECK(cublasCreate(&blas));
  CUBLAS_CHECK(cublasSetStream(blas, compute));

  auto dalloc = [](std::size_t n) {
    float* p = nullptr;
    CUDA_CHECK(cudaMalloc(&p, n * sizeof(float)));
    return p;
  };
  float *w1 = dalloc(std::size_t(H) * D), *b1 = dalloc(H), *w2 = dalloc(std::size_t(C) * H), *b2 = dalloc(C);
  float *gw1 = dalloc(std::size_t(H) * D), *gb1 = dalloc(H), *gw2 = dalloc(std::size_t(C) * H), *gb2 = dalloc(C);
  float *x = dalloc(std::size_t(D) * B), *h = dalloc(std::size_t(H) * B), *z = dalloc(std::size_t(C) * B);
  float *dz = dalloc(std::size_t(C) * B), *dh = dalloc(std::size_t(H) * B), *loss = dalloc(1);
  int* y = nullptr;
  CUDA_CHECK(cudaMalloc(&y, B * sizeof(int)));
  {
    std::mt19937 rng(1);
    std::normal_distribution<float> n1(0.f, std::sqrt(2.f / D)), n2(0.f, std::sqrt(2.f / H));
    std::vector<float> w(std::size_t(H) * D);
    for (auto& v : w) v = n1(rng);
    CUDA_CHECK(cudaMemcpy(w1, w.data(), w.size() * sizeof(float), cudaMemcpyHostToDevice));
    w.assign(std::size_t(C) * H, 0.f);
    for (auto& v : w) v = n2(rng);
    CUDA_CHECK(cudaMemcpy(w2, w.data(), w.size() * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(b1, 0, H * sizeof(float)));
    CUDA_CHECK(cudaMemset(b2, 0, C * sizeof(float)));
  }

  // The loader: fills pinned slots ahead of the step, in batch order.
  std::vector<Slot> slots(static_cast<std::size_t>(std::max(o.prefetch, 1)));
  for (auto& s : slots) {
    CUDA_CHECK(cudaMallocHost(&s.x, std::size_t(D) * B * sizeof(float)));
    CUDA_CHECK(cudaMallocHost(&s.y, B * sizeof(int)));
  }
  std::mutex mu;
  std::condition_variable changed;
  std::thread loader([&] {
    pthread_setname_np(pthread_self(), "loader");
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.f, 1.f);
    std::vector<float> raw(std::size_t(D) * B);
    for (long b = 0; b < o.steps; ++b) {
      Slot& s = slots[static_cast<std::size_t>(b) % slots.size()];
      {
        std::unique_lock lock(mu);
        changed.wait(lock, [&] { return !s.ready; });
      }
      // --no-loading: each slot is made once and handed back as it is, so that the steps
      // are the launches' and the GPU's, not the loader's random numbers.
      if (!o.no_loading || b < static_cast<long>(slots.size())) {
        {
          dreamscope::Scope f = dreamscope::Scope::fetch(b);
          for (auto& v : raw) v = 50.f + 10.f * normal(rng);
          if (o.fetch_delay_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(o.fetch_delay_us));
        }
        dreamscope::Scope p = dreamscope::Scope::prep(b);
        for (std::size_t i = 0; i < raw.size(); ++i) s.x[i] = (raw[i] - 50.f) / 10.f;
        for (int n = 0; n < B; ++n) s.y[n] = static_cast<int>((s.x[std::size_t(n) * D] > 0) + 2 * (s.x[std::size_t(n) * D + 1] > 0)) % C;
      }
      std::lock_guard lock(mu);
      s.batch_id = b;
      s.ready = true;
      changed.notify_all();
    }
  });

  cudaEvent_t copied;
  CUDA_CHECK(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming));
  const float one = 1.f, zero = 0.f;
  std::vector<double> step_ns;
  float first_loss = 0, last_loss = 0;
  for (long i = 0; i < o.steps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    dreamscope::Scope step = dreamscope::Scope::step(i);
    Slot& s = slots[static_cast<std::size_t>(i) % slots.size()];
    {
      dreamscope::Scope w = dreamscope::Scope::wait(i);
      std::unique_lock lock(mu);
      changed.wait(lock, [&] { return s.ready && s.batch_id == i; });
    }
    {
      DREAMSCOPE_SCOPE(DS_CATEGORY_OPERATION, "h2d");
      CUDA_CHECK(cudaMemcpyAsync(x, s.x, std::size_t(D) * B * sizeof(float), cudaMemcpyHostToDevice, copy));
      CUDA_CHECK(cudaMemcpyAsync(y, s.y, B * sizeof(int), cudaMemcpyHostToDevice, copy));
      CUDA_CHECK(cudaEventRecord(copied, copy));
      CUDA_CHECK(cudaStreamWaitEvent(compute, copied, 0));
    }
    {
      DREAMSCOPE_SCOPE(DS_CATEGORY_OPERATION, "forward");
      CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, H, B, D, &one, w1, H, x, D, &zero, h, H));
      bias_relu<<<blocks(H * B), 256, 0, compute>>>(h, b1, H, B);
      CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, C, B, H, &one, w2, C, h, H, &zero, z, C));
      add_bias<<<blocks(C * B), 256, 0, compute>>>(z, b2, C, B);
    }
    {
      DREAMSCOPE_SCOPE(DS_CATEGORY_OPERATION, "loss");
      CUDA_CHECK(cudaMemsetAsync(loss, 0, sizeof(float), compute));
      softmax_xent<<<blocks(B), 256, 0, compute>>>(z, y, dz, loss, C, B);
    }
    {
      DREAMSCOPE_SCOPE(DS_CATEGORY_OPERATION, "backward");
      CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, C, H, B, &one, dz, C, h, H, &zero, gw2, C));
      row_sum<<<blocks(C), 256, 0, compute>>>(dz, gb2, C, B);
      CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, H, B, C, &one, w2, C, dz, C, &zero, dh, H));
      relu_backward<<<blocks(H * B), 256, 0, compute>>>(dh, h, H * B);
      CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, H, D, B, &one, dh, H, x, D, &zero, gw1, H));
      row_sum<<<blocks(H), 256, 0, compute>>>(dh, gb1, H, B);
    }
    {
      DREAMSCOPE_SCOPE(DS_CATEGORY_OPERATION, "optimizer");
      sgd<<<blocks(H * D), 256, 0, compute>>>(w1, gw1, o.lr, H * D);
      sgd<<<blocks(H), 256, 0, compute>>>(b1, gb1, o.lr, H);
      sgd<<<blocks(C * H), 256, 0, compute>>>(w2, gw2, o.lr, C * H);
      sgd<<<blocks(C), 256, 0, compute>>>(b2, gb2, o.lr, C);
    }
    float host_loss = 0;
    CUDA_CHECK(cudaMemcpyAsync(&host_loss, loss, sizeof(float), cudaMemcpyDeviceToHost, compute));
    CUDA_CHECK(cudaStreamSynchronize(compute));
    {
      // The slot is free once its copy is done, which the synchronize above implies.
      std::lock_guard lock(mu);
      s.ready = false;
      changed.notify_all();
    }
    if (i == 0) first_loss = host_loss;
    last_loss = host_loss;
    step_ns.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count());
  }
  loader.join();
  std::nth_element(step_ns.begin(), step_ns.begin() + static_cast<long>(step_ns.size() / 2), step_ns.end());
  std::printf("cuda_train: %d steps, batch %d, %dx%dx%d MLP, loss %.4f -> %.4f\n", o.steps, B, D, H, C, first_loss,
              last_loss);
  std::printf("median_step_ns %.0f\n", step_ns[step_ns.size() / 2]);
  cublasDestroy(blas);
  return 0;
}
