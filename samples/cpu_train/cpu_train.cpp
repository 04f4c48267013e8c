// cpu_train: a CPU-only training loop with a real input pipeline, to trace with dreamscope.
//
// A dataset of sample files on disk; N loader threads that fetch a batch (read its files,
// optionally wait out an emulated storage latency) and prep it (decode, normalize,
// augment); a bounded, in-order prefetch window; a main thread whose step waits for the
// next batch and trains a two-layer MLP with SGD. Every phase is a dreamscope annotation
// carrying its batch id, and the program prints its own median step time so that
// predictions made from its trace can be checked against reality.
#include <dreamscope/annotate.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

namespace {

struct Options {
  int steps = 50;
  int batch_size = 32;
  int workers = 2;
  int prefetch = 4;
  int input_dim = 64;
  int hidden = 128;
  int classes = 10;
  int dataset_size = 1024;
  int prep_passes = 4;
  int fetch_delay_us = 0;
  double learning_rate = 0.05;
  bool no_loading = false;
  bool fine_annotations = false;
  bool probe = false;
  int paused_blocks = 0;
  std::string data_dir;
  unsigned seed = 1;
};

void usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [options]\n"
               "  --steps N            training steps (50)\n"
               "  --batch-size N       samples per batch (32)\n"
               "  --workers N          loader threads; 0 loads on the main thread (2)\n"
               "  --prefetch N         batches loaded ahead of the step (4)\n"
               "  --input-dim N        features per sample (64)\n"
               "  --hidden N           hidden units (128)\n"
               "  --dataset-size N     sample files on disk (1024)\n"
               "  --prep-passes N      augmentation passes per sample: the prep cost (4)\n"
               "  --fetch-delay-us N   emulated storage latency per batch (0)\n"
               "  --data DIR           dataset folder (generated if missing; default: a temporary one)\n"
               "  --no-loading         synthetic data: no fetch, no prep, no wait\n"
               "  --fine-annotations   one range per hidden neuron and sample, forward and backward\n"
               "  --probe              time 20 000 calls through a function pointer before and after the\n"
               "                       steps, unannotated, and print both (machine_probe_ns): how fast\n"
               "                       the machine ran; with --paused-blocks, also a state probe between\n"
               "                       every two steps (the first layer for 8 inputs and 2000 such calls,\n"
               "                       unannotated): STATE_NS, the last column of step_ns\n"
               "  --paused-blocks N    steps in blocks of N, recording paused in every other block\n"
               "                       (ds_tracing_pause): prints every step's time (step_ns STEP\n"
               "                       RECORDED NS [STATE_NS]), to time paused steps against recorded ones\n"
               "  --seed N             random seed (1)\n",
               argv0);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "cpu_train: %s needs a value\n", argv[i]);
        std::exit(2);
      }
      return argv[++i];
    };
    auto integer = [&] { return std::atoi(value()); };
    if (a == "--steps") o.steps = integer();
    else if (a == "--batch-size") o.batch_size = integer();
    else if (a == "--workers") o.workers = integer();
    else if (a == "--prefetch") o.prefetch = integer();
    else if (a == "--input-dim") o.input_dim = integer();
    else if (a == "--hidden") o.hidden = integer();
    else if (a == "--dataset-size") o.dataset_size = integer();
    else if (a == "--prep-passes") o.prep_passes = integer();
    else if (a == "--fetch-delay-us") o.fetch_delay_us = integer();
    else if (a == "--data") o.data_dir = value();
    else if (a == "--no-loading") o.no_loading = true;
    else if (a == "--fine-annotations") o.fine_annotations = true;
    else if (a == "--probe") o.probe = true;
    else if (a == "--paused-blocks") o.paused_blocks = integer();
    else if (a == "--seed") o.seed = static_cast<unsigned>(integer());
    else if (a == "-h" || a == "--help") { usage(argv[0]); std::exit(0); }
    else { std::fprintf(stderr, "cpu_train: unknown option %s\n", argv[i]); usage(argv[0]); std::exit(2); }
  }
  if (o.steps < 1 || o.batch_size < 1 || o.workers < 0 || o.prefetch < 1 || o.input_dim < 1 || o.hidden < 1 ||
      o.dataset_size < 1 || o.prep_passes < 0 || o.fetch_delay_us < 0 || o.paused_blocks < 0) {
    std::fprintf(stderr, "cpu_train: sizes must be positive (workers, passes and delay may be 0)\n");
    std::exit(2);
  }
  return o;
}

// A sample file: input_dim float32 features (raw, before normalization) and an int32 label.
std::filesystem::path sample_path(const std::filesystem::path& dir, int i) {
  char name[32];
  std::snprintf(name, sizeof name, "%06d.bin", i);
  return dir / name;
}

// Labels come from a fixed random linear "teacher", so that the MLP has something to learn.
void generate_dataset(const Options& o, const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  std::mt19937 rng(12345);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> teacher(static_cast<std::size_t>(o.classes * o.input_dim));
  for (auto& w : teacher) w = normal(rng);
  std::vector<float> x(static_cast<std::size_t>(o.input_dim));
  for (int i = 0; i < o.dataset_size; ++i) {
    for (auto& v : x) v = 100.f + 20.f * normal(rng); // raw sensor-like values: prep normalizes
    int label = 0;
    float best = -1e30f;
    for (int c = 0; c < o.classes; ++c) {
      float s = 0;
      for (int d = 0; d < o.input_dim; ++d) s += teacher[static_cast<std::size_t>(c * o.input_dim + d)] * (x[static_cast<std::size_t>(d)] - 100.f);
      if (s > best) best = s, label = c;
    }
    std::ofstream f(sample_path(dir, i), std::ios::binary);
    f.write(reinterpret_cast<const char*>(x.data()), static_cast<std::streamsize>(x.size() * sizeof(float)));
    std::int32_t l = label;
    f.write(reinterpret_cast<const char*>(&l), sizeof l);
  }
  std::ofstream(dir / "DATASET") << o.dataset_size << ' ' << o.input_dim << ' ' << o.classes << '\n';
}

bool dataset_matches(const Options& o, const std::filesystem::path& dir) {
  std::ifstream f(dir / "DATASET");
  int n = 0, d = 0, c = 0;
  return static_cast<bool>(f >> n >> d >> c) && n == o.dataset_size && d == o.input_dim && c == o.classes;
}

struct Batch {
  std::int64_t id = 0;
  std::vector<float> x; // batch_size x input_dim, normalized
  std::vector<int> y;
};

struct RawBatch {
  std::vector<char> bytes;
};

RawBatch fetch_batch(const Options& o, const std::filesystem::path& dir, std::int64_t id) {
  const std::size_t sample_bytes = static_cast<std::size_t>(o.input_dim) * sizeof(float) + sizeof(std::int32_t);
  RawBatch raw;
  raw.bytes.resize(sample_bytes * static_cast<std::size_t>(o.batch_size));
  for (int k = 0; k < o.batch_size; ++k) {
    int sample = static_cast<int>((id * o.batch_size + k) % o.dataset_size);
    int fd = ::open(sample_path(dir, sample).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      std::perror("cpu_train: open sample");
      std::exit(1);
    }
    char* out = raw.bytes.data() + sample_bytes * static_cast<std::size_t>(k);
    std::size_t got = 0;
    while (got < sample_bytes) {
      ssize_t n = ::read(fd, out + got, sample_bytes - got);
      if (n <= 0) {
        std::fprintf(stderr, "cpu_train: short read on sample %d\n", sample);
        std::exit(1);
      }
      got += static_cast<std::size_t>(n);
    }
    ::close(fd);
  }
  if (o.fetch_delay_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(o.fetch_delay_us));
  return raw;
}

// Decode, normalize per sample, then augment: jitter and a smoothing pass per prep pass.
Batch prep_batch(const Options& o, const RawBatch& raw, std::int64_t id) {
  const std::size_t d = static_cast<std::size_t>(o.input_dim);
  const std::size_t sample_bytes = d * sizeof(float) + sizeof(std::int32_t);
  Batch b;
  b.id = id;
  b.x.resize(d * static_cast<std::size_t>(o.batch_size));
  b.y.resize(static_cast<std::size_t>(o.batch_size));
  std::mt19937 rng(static_cast<unsigned>(id) * 7919u + o.seed);
  std::normal_distribution<float> jitter(0.f, 0.01f);
  std::vector<float> tmp(d);
  for (std::size_t k = 0; k < static_cast<std::size_t>(o.batch_size); ++k) {
    const char* in = raw.bytes.data() + sample_bytes * k;
    float* x = b.x.data() + d * k;
    std::memcpy(x, in, d * sizeof(float));
    std::int32_t label;
    std::memcpy(&label, in + d * sizeof(float), sizeof label);
    b.y[k] = label;
    double mean = 0, var = 0;
    for (std::size_t i = 0; i < d; ++i) mean += x[i];
    mean /= static_cast<double>(d);
    for (std::size_t i = 0; i < d; ++i) var += (x[i] - mean) * (x[i] - mean);
    float inv = static_cast<float>(1.0 / std::sqrt(var / static_cast<double>(d) + 1e-6));
    for (std::size_t i = 0; i < d; ++i) x[i] = (x[i] - static_cast<float>(mean)) * inv;
    for (int p = 0; p < o.prep_passes; ++p) {
      for (std::size_t i = 0; i < d; ++i) {
        float left = x[i == 0 ? 0 : i - 1], right = x[i + 1 == d ? i : i + 1];
        tmp[i] = 0.9f * x[i] + 0.05f * (left + right) + jitter(rng);
      }
      std::copy(tmp.begin(), tmp.end(), x);
    }
  }
  return b;
}

// Batches enter in any order and leave in id order; a loader may run at most `prefetch`
// batches ahead of the consumer, which bounds the memory held.
class PrefetchWindow {
 public:
  explicit PrefetchWindow(int depth) : depth_(depth) {}

  // Blocks until batch `id` may be loaded; false when the run is over.
  bool admit(std::int64_t id, std::int64_t last) {
    std::unique_lock lock(mu_);
    space_.wait(lock, [&] { return id < next_ + depth_; });
    return id <= last;
  }
  void put(Batch b) {
    std::lock_guard lock(mu_);
    ready_.emplace(b.id, std::move(b));
    filled_.notify_all();
  }
  Batch take(std::int64_t id) {
    std::unique_lock lock(mu_);
    filled_.wait(lock, [&] { return ready_.count(id) != 0; });
    Batch b = std::move(ready_[id]);
    ready_.erase(id);
    next_ = id + 1;
    space_.notify_all();
    return b;
  }

 private:
  int depth_;
  std::mutex mu_;
  std::condition_variable space_, filled_;
  std::map<std::int64_t, Batch> ready_;
  std::int64_t next_ = 0;
};

struct Mlp {
  int d, h, c;
  std::vector<float> w1, b1, w2, b2;
  // Activations and gradients, reused across steps.
  std::vector<float> hidden, logits, dlogits, dhidden, gw1, gw2, gb1, gb2;

  Mlp(int d_, int h_, int c_, unsigned seed) : d(d_), h(h_), c(c_) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> n1(0.f, std::sqrt(2.f / static_cast<float>(d)));
    std::normal_distribution<float> n2(0.f, std::sqrt(2.f / static_cast<float>(h)));
    w1.resize(static_cast<std::size_t>(h * d));
    w2.resize(static_cast<std::size_t>(c * h));
    for (auto& w : w1) w = n1(rng);
    for (auto& w : w2) w = n2(rng);
    b1.assign(static_cast<std::size_t>(h), 0.f);
    b2.assign(static_cast<std::size_t>(c), 0.f);
  }

  // Returns the mean cross-entropy loss of the batch and applies one SGD update.
  float train_step(const Batch& b, int batch_size, float lr, bool fine) {
    const std::size_t B = static_cast<std::size_t>(batch_size), D = static_cast<std::size_t>(d),
                      H = static_cast<std::size_t>(h), C = static_cast<std::size_t>(c);
    hidden.assign(B * H, 0.f);
    logits.assign(B * C, 0.f);
    float loss = 0;
    {
      DREAMSCOPE_SCOPE(DS_CATEGORY_OPERATION, "forward");
      for (std::size_t n = 0; n < B; ++n) {
        const float* x = b.x.data() + n * D;
        for (std::size_t j = 0; j < H; ++j) {
          // Deliberately tiny ranges: --fine-annotations makes tracing a large share of the
          // step, the regime that overhead correction has to undo.
          if (fine) ds_range_push(DS_CATEGORY_OPERATION, "neuron", static_cast<std::int64_t>(j));
          const float* w = w1.data() + j * D;
          float s = b1[j];
          for (std::size_t i = 0; i < D; ++i) s += w[i] * x[i];
          hidden[n * H + j] = s > 0 ? s : 0;
          if (fine) ds_range_pop();
        }
        for (std::size_t k = 0; k < C; ++k) {
          const float* w = w2.data() + k * H;
          float s = b2[k];
          for (std::size_t j = 0; j < H; ++j) s += w[j] * hidden[n * H + j];
          logits[n * C + k] = s;
        }
      }
    }
    {
      DREAMSCOPE_SCOPE(DS_CATEGORY_OPERATION, "loss");
      dlogits.assign(B * C, 0.f);
      for (std::size_t n = 0; n < B; ++n) {
        float* z = logits.data() + n * C;
        float m = *std::max_element(z, z + C), sum = 0;
        for (std::size_t k = 0; k < C; ++k) sum += std::exp(z[k] - m);
        for (std::size_t k = 0; k < C; ++k) {
          float p = std::exp(z[k] - m) / sum;
          dlogits[n * C + k] = (p - (static_cast<int>(k) == b.y[n] ? 1.f : 0.f)) / static_cast<float>(B);
        }
        loss -= (z[b.y[n]] - m - std::log(sum)) / static_cast<float>(B);
      }
    }
    {
      DREAMSCOPE_SCOPE(DS_CATEGORY_OPERATION, "backward");
      gw1.assign(H * D, 0.f);
      gw2.assign(C * H, 0.f);
      gb1.assign(H, 0.f);
      gb2.assign(C, 0.f);
      dhidden.assign(B * H, 0.f);
      for (std::size_t n = 0; n < B; ++n) {
        for (std::size_t k = 0; k < C; ++k) {
          float g = dlogits[n * C + k];
          gb2[k] += g;
          for (std::size_t j = 0; j < H; ++j) {
            gw2[k * H + j] += g * hidden[n * H + j];
            dhidden[n * H + j] += g * w2[k * H + j];
          }
        }
        const float* x = b.x.data() + n * D;
        for (std::size_t j = 0; j < H; ++j) {
          if (fine) ds_range_push(DS_CATEGORY_OPERATION, "neuron_grad", static_cast<std::int64_t>(j));
          if (hidden[n * H + j] > 0) {
            float g = dhidden[n * H + j];
            gb1[j] += g;
            float* gw = gw1.data() + j * D;
            for (std::size_t i = 0; i < D; ++i) gw[i] += g * x[i];
          }
          if (fine) ds_range_pop();
        }
      }
    }
    {
      DREAMSCOPE_SCOPE(DS_CATEGORY_OPERATION, "optimizer");
      for (std::size_t i = 0; i < w1.size(); ++i) w1[i] -= lr * gw1[i];
      for (std::size_t i = 0; i < w2.size(); ++i) w2[i] -= lr * gw2[i];
      for (std::size_t i = 0; i < H; ++i) b1[i] -= lr * gb1[i];
      for (std::size_t i = 0; i < C; ++i) b2[i] -= lr * gb2[i];
    }
    return loss;
  }
};

Batch synthetic_batch(const Options& o) {
  Batch b;
  std::mt19937 rng(o.seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  b.x.resize(static_cast<std::size_t>(o.batch_size * o.input_dim));
  for (auto& v : b.x) v = normal(rng);
  b.y.resize(static_cast<std::size_t>(o.batch_size));
  for (std::size_t k = 0; k < b.y.size(); ++k) b.y[k] = static_cast<int>(k % static_cast<std::size_t>(o.classes));
  return b;
}

// How fast the machine runs now: the median of 9 timings of 20 000 calls through a function
// pointer (about 40 to 70 us each), unannotated. The development VM alternates between two
// speeds within seconds, and what differs between them is the cost of such calls (a matrix-
// vector loop of the same length did not tell the two apart); runs compared with each other
// must have run at the same speed, which this tells without tracing anything.
__attribute__((noinline)) float probe_callee(float a, float b) {
  asm volatile("" : "+x"(a));
  return a * 0.999f + b;
}
float (*volatile probe_call)(float, float) = probe_callee;

double machine_probe_ns() {
  std::vector<double> times;
  for (int r = 0; r < 9; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    float acc = 0;
    auto f = probe_call;
    for (int i = 0; i < 20000; ++i) { acc = f(acc, 1.0f); f = probe_call; }
    asm volatile("" : : "x"(acc));
    times.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// The machine's state at one step (--probe with --paused-blocks): the model's own kind of work
// (its first layer for 8 inputs) and 2000 calls through a function pointer, unannotated, timed
// between two steps. The development VM's slow phases last tens of ms and come at any time; one
// that covers a recorded block but neither of its paused neighbours would make the neighbours a
// wrong reference for it. This reads the same in recorded and paused steps, so a bench can tell.
double state_probe_ns(const Mlp& m) {
  static const std::vector<float> input(static_cast<std::size_t>(m.d), 0.5f);
  const auto t0 = std::chrono::steady_clock::now();
  float acc = 0;
  for (int n = 0; n < 8; ++n) {
    for (std::size_t j = 0; j < static_cast<std::size_t>(m.h); ++j) {
      const float* w = m.w1.data() + j * static_cast<std::size_t>(m.d);
      float z = 0;
      for (std::size_t k = 0; k < static_cast<std::size_t>(m.d); ++k) z += w[k] * input[k];
      acc += z;
    }
  }
  auto f = probe_call;
  for (int i = 0; i < 2000; ++i) { acc = f(acc, 1.0f); f = probe_call; }
  asm volatile("" : : "x"(acc));
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);

  std::filesystem::path dir;
  bool temporary = false;
  if (!o.no_loading) {
    if (o.data_dir.empty()) {
      dir = std::filesystem::temp_directory_path() / ("dreamscope-cpu-train-" + std::to_string(::getpid()));
      temporary = true;
    } else {
      dir = o.data_dir;
    }
    if (!dataset_matches(o, dir)) generate_dataset(o, dir);
  }

  const double probe_before = o.probe ? machine_probe_ns() : 0;
  const std::int64_t last = o.steps - 1;
  PrefetchWindow window(o.prefetch);
  std::atomic<std::int64_t> next_batch{0};
  std::vector<std::thread> loaders;
  if (!o.no_loading) {
    for (int w = 0; w < o.workers; ++w) {
      loaders.emplace_back([&, w] {
        char name[16];
        std::snprintf(name, sizeof name, "loader-%d", w);
        pthread_setname_np(pthread_self(), name);
        for (;;) {
          std::int64_t id = next_batch.fetch_add(1);
          if (!window.admit(id, last)) break;
          RawBatch raw;
          {
            dreamscope::Scope s = dreamscope::Scope::fetch(id);
            raw = fetch_batch(o, dir, id);
          }
          Batch b;
          {
            dreamscope::Scope s = dreamscope::Scope::prep(id);
            b = prep_batch(o, raw, id);
          }
          window.put(std::move(b));
        }
      });
    }
  }

  Mlp model(o.input_dim, o.hidden, o.classes, o.seed);
  const Batch synthetic = o.no_loading ? synthetic_batch(o) : Batch{};
  std::vector<double> step_ns, state_ns;
  step_ns.reserve(static_cast<std::size_t>(o.steps));
  const bool state_probes = o.probe && o.paused_blocks > 0;
  if (state_probes) state_ns.reserve(static_cast<std::size_t>(o.steps));
  float first_loss = 0, loss = 0;
  const auto run_start = std::chrono::steady_clock::now();
  // Block k of --paused-blocks is recorded when k is even: the first steps are recorded.
  auto recorded = [&](std::int64_t step) { return o.paused_blocks == 0 || (step / o.paused_blocks) % 2 == 0; };
  for (std::int64_t i = 0; i <= last; ++i) {
    if (o.paused_blocks > 0 && i > 0 && i % o.paused_blocks == 0) {
      if (recorded(i)) {
        ds_tracing_resume();
      } else {
        ds_tracing_pause();
      }
    }
    if (state_probes) state_ns.push_back(state_probe_ns(model));
    const auto t0 = std::chrono::steady_clock::now();
    {
      dreamscope::Scope step = dreamscope::Scope::step(i);
      Batch loaded;
      if (!o.no_loading) {
        if (o.workers == 0) {
          RawBatch raw;
          {
            dreamscope::Scope s = dreamscope::Scope::fetch(i);
            raw = fetch_batch(o, dir, i);
          }
          dreamscope::Scope s = dreamscope::Scope::prep(i);
          loaded = prep_batch(o, raw, i);
        } else {
          dreamscope::Scope s = dreamscope::Scope::wait(i);
          loaded = window.take(i);
        }
      }
      const Batch& batch = o.no_loading ? synthetic : loaded;
      loss = model.train_step(batch, o.batch_size, static_cast<float>(o.learning_rate), o.fine_annotations);
      if (i == 0) first_loss = loss;
    }
    step_ns.push_back(static_cast<double>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count()));
  }
  const double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
  // Loaders blocked on admission wake once the window moves past the last batch.
  window.put(Batch{.id = last + 1});
  window.take(last + 1);
  for (auto& t : loaders) t.join();
  if (temporary) std::filesystem::remove_all(dir);

  std::vector<double> sorted = step_ns;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2), sorted.end());
  const double median = sorted[sorted.size() / 2];
  std::printf("cpu_train: %d steps, batch %d, %d workers, loss %.4f -> %.4f, %.3f s\n", o.steps, o.batch_size,
              o.no_loading ? 0 : o.workers, first_loss, loss, total_s);
  std::printf("median_step_ns %.0f\n", median);
  if (o.paused_blocks > 0) {
    for (std::size_t i = 0; i < step_ns.size(); ++i) {
      std::printf("step_ns %zu %d %.0f", i, recorded(static_cast<std::int64_t>(i)) ? 1 : 0, step_ns[i]);
      if (state_probes) std::printf(" %.0f", state_ns[i]);
      std::printf("\n");
    }
  }
  if (o.probe) std::printf("machine_probe_ns %.0f %.0f\n", probe_before, machine_probe_ns());
  return 0;
}
