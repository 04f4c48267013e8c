// dist_train: a data-parallel training loop over N ranks on one machine, to trace with
// dreamscope. Each rank is a process; the ranks meet in shared memory, where the gradient
// all-reduce really waits for every rank and really sums their gradients (job_segment.h).
//
// A rank takes its place from RANK, LOCAL_RANK and WORLD_SIZE, as torchrun sets them, and
// its job from --job-id or DIST_TRAIN_JOB_ID; `--launch N` starts N ranks itself
// (launcher.h). Each step: fetch and prep the rank's batch on the training thread (optional),
// forward, backward, the all-reduce of the gradient in --buckets buckets, optimizer. Every
// phase is a dreamscope annotation; a rank can be made slow on purpose (its compute, or its
// input pipeline) to make a straggler. The job prints its median step time so that
// predictions made from its trace can be checked against untraced runs.
#include "job_segment.h"
#include "launcher.h"

#include <dreamscope/annotate.hpp>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

using dist_train::JobSegment;
using dist_train::JobShape;

struct Options {
  int launch = 0;
  std::string job_id;
  int steps = 30;
  int batch_size = 16;
  int input_dim = 64;
  int buckets = 4;
  long long bucket_bytes = 65536;
  bool no_loading = false;
  int dataset_size = 128;
  int prep_passes = 2;
  int fetch_us = 0;
  int slow_rank = -1;
  double slow_factor = 2.0;
  int slow_data_rank = -1;
  int slow_data_us = 2000;
  int crash_rank = -1;
  int crash_step = 0;
  double timeout_s = 60;
  double learning_rate = 0.2;
  unsigned seed = 1;
};

void usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [options]                 one rank (RANK, LOCAL_RANK, WORLD_SIZE from the environment)\n"
               "       %s --launch N [options]      N ranks on this machine, started and waited for\n"
               "  --launch N             start N ranks of this program with RANK/LOCAL_RANK/WORLD_SIZE set\n"
               "  --job-id ID            names the job's shared memory (default: DIST_TRAIN_JOB_ID, or torchrun's\n"
               "                         TORCHELASTIC_RUN_ID and MASTER_PORT; --launch makes one)\n"
               "  --steps N              training steps (30)\n"
               "  --batch-size N         samples per rank and step: the compute per step (16)\n"
               "  --input-dim N          features per sample (64)\n"
               "  --buckets B            all-reduce collectives per step (4)\n"
               "  --bucket-bytes N       bytes each rank contributes to each all-reduce (65536); the model has\n"
               "                         buckets x bucket-bytes / 4 parameters\n"
               "  --no-loading           one synthetic batch: no fetch, no prep\n"
               "  --dataset-size N       samples in the in-memory dataset (128)\n"
               "  --prep-passes N        smoothing passes per sample in prep (2)\n"
               "  --fetch-us X           emulated storage latency per batch, us (0)\n"
               "  --slow-rank K          rank K's forward, backward and optimizer do --slow-factor times the work\n"
               "  --slow-factor F        (2.0)\n"
               "  --slow-data-rank K     rank K's fetch takes --slow-data-us longer\n"
               "  --slow-data-us X       (2000)\n"
               "  --crash-rank K         rank K exits with status 3 at the start of step --crash-step\n"
               "  --crash-step S         (0)\n"
               "  --timeout-s T          a rank waiting longer than this in a collective gives up (60)\n"
               "  --learning-rate X      SGD step (0.2)\n"
               "  --seed N               random seed of the data (1)\n",
               argv0, argv0);
}

[[noreturn]] void bad_usage(const std::string& why) {
  std::fprintf(stderr, "dist_train: %s\n", why.c_str());
  std::exit(2);
}

// A whole number with nothing after it, or a usage error naming the option.
long long whole(const char* option, const char* text) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text, &end, 10);
  if (!*text || *end || errno) bad_usage(std::string(option) + " needs a whole number, not '" + text + "'");
  return v;
}

// Returns the options and, in `rank_args`, the command line a launched rank runs.
Options parse(int argc, char** argv, std::vector<std::string>& rank_args) {
  Options o;
  rank_args.assign(1, argv[0]);
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) bad_usage(std::string(a) + " needs a value");
      return argv[++i];
    };
    auto integer = [&] { return static_cast<int>(std::clamp<long long>(whole(a.data(), value()), -1, INT32_MAX)); };
    auto real = [&] {
      const char* text = value();
      char* end = nullptr;
      const double v = std::strtod(text, &end);
      if (!*text || *end || !std::isfinite(v)) bad_usage(std::string(a) + " needs a number, not '" + text + "'");
      return v;
    };
    const int first = i;
    if (a == "--launch") o.launch = integer();
    else if (a == "--job-id") o.job_id = value();
    else if (a == "--steps") o.steps = integer();
    else if (a == "--batch-size") o.batch_size = integer();
    else if (a == "--input-dim") o.input_dim = integer();
    else if (a == "--buckets") o.buckets = integer();
    else if (a == "--bucket-bytes") o.bucket_bytes = whole("--bucket-bytes", value());
    else if (a == "--no-loading") o.no_loading = true;
    else if (a == "--dataset-size") o.dataset_size = integer();
    else if (a == "--prep-passes") o.prep_passes = integer();
    else if (a == "--fetch-us") o.fetch_us = integer();
    else if (a == "--slow-rank") o.slow_rank = integer();
    else if (a == "--slow-factor") o.slow_factor = real();
    else if (a == "--slow-data-rank") o.slow_data_rank = integer();
    else if (a == "--slow-data-us") o.slow_data_us = integer();
    else if (a == "--crash-rank") o.crash_rank = integer();
    else if (a == "--crash-step") o.crash_step = integer();
    else if (a == "--timeout-s") o.timeout_s = real();
    else if (a == "--learning-rate") o.learning_rate = real();
    else if (a == "--seed") o.seed = static_cast<unsigned>(integer());
    else if (a == "-h" || a == "--help") { usage(argv[0]); std::exit(0); }
    else { std::fprintf(stderr, "dist_train: unknown option %s\n", argv[i]); usage(argv[0]); std::exit(2); }
    // The ranks a launcher starts get everything but --launch and its value.
    if (a != "--launch") rank_args.insert(rank_args.end(), argv + first, argv + i + 1);
  }
  if (o.launch < 0 || o.launch > 4096) bad_usage("--launch takes 1 to 4096 ranks");
  if (o.steps < 1 || o.batch_size < 1 || o.input_dim < 1 || o.buckets < 1 || o.dataset_size < 1) {
    bad_usage("--steps, --batch-size, --input-dim, --buckets and --dataset-size must be at least 1");
  }
  if (o.bucket_bytes < 4 || o.bucket_bytes % 4 != 0 || o.bucket_bytes > (1LL << 30)) {
    bad_usage("--bucket-bytes must be a multiple of 4 (float32 gradients), at most 1 GiB");
  }
  if ((o.bucket_bytes / 4 * o.buckets) % o.input_dim != 0) {
    bad_usage("the parameters (--buckets x --bucket-bytes / 4) must be a multiple of --input-dim");
  }
  if (o.prep_passes < 0 || o.fetch_us < 0 || o.slow_data_us < 0 || o.crash_step < 0) {
    bad_usage("--prep-passes, --fetch-us, --slow-data-us and --crash-step may not be negative");
  }
  if (o.slow_factor < 1 || o.slow_factor > 100) bad_usage("--slow-factor is 1 to 100");
  if (o.slow_data_rank >= 0 && o.no_loading) bad_usage("--slow-data-rank slows the fetch: not with --no-loading");
  if (o.timeout_s <= 0) bad_usage("--timeout-s must be positive");
  return o;
}

struct Place {
  int rank = 0;
  int local_rank = 0;
  int world_size = 1;
};

int env_count(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end || n < 0 || n > 4096) bad_usage(std::string(name) + "=" + v + " is not a count from 0 to 4096");
  return static_cast<int>(n);
}

Place place_from_environment() {
  Place p;
  p.world_size = env_count("WORLD_SIZE", 1);
  p.rank = env_count("RANK", -1);
  if (p.rank < 0) {
    if (p.world_size > 1) bad_usage("WORLD_SIZE is " + std::to_string(p.world_size) + " but RANK is not set");
    p.rank = 0;
  }
  p.local_rank = env_count("LOCAL_RANK", p.rank);
  if (p.world_size < 1 || p.rank >= p.world_size) {
    bad_usage("RANK " + std::to_string(p.rank) + " is not below WORLD_SIZE " + std::to_string(p.world_size));
  }
  return p;
}

std::string job_id_from(const Options& o, const Place& p) {
  if (!o.job_id.empty()) return o.job_id;
  if (const char* id = std::getenv("DIST_TRAIN_JOB_ID"); id && *id) return id;
  const char* run = std::getenv("TORCHELASTIC_RUN_ID");
  const char* port = std::getenv("MASTER_PORT");
  if (run && *run && port && *port) return std::string("torchelastic-") + run + "-" + port;
  if (p.world_size > 1) {
    bad_usage("rank " + std::to_string(p.rank) + " of " + std::to_string(p.world_size) +
              ": no job id (--job-id, DIST_TRAIN_JOB_ID, or torchrun's TORCHELASTIC_RUN_ID and MASTER_PORT)");
  }
  return "single";
}

// The in-memory dataset every rank shares the recipe of: raw features (sensor-like values
// around 100) and the targets of a fixed random linear teacher.
struct Dataset {
  int dim = 0, outputs = 0, size = 0;
  std::vector<float> raw;     // [size][dim]
  std::vector<float> targets; // [size][outputs]
};

Dataset make_dataset(const Options& o, int outputs) {
  Dataset d{o.input_dim, outputs, o.dataset_size, {}, {}};
  std::mt19937 rng(12345u + o.seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  const auto D = static_cast<std::size_t>(d.dim), O = static_cast<std::size_t>(outputs);
  std::vector<float> teacher(O * D);
  for (auto& w : teacher) w = normal(rng) / std::sqrt(static_cast<float>(d.dim));
  d.raw.resize(static_cast<std::size_t>(d.size) * D);
  d.targets.resize(static_cast<std::size_t>(d.size) * O);
  std::vector<float> z(D);
  for (std::size_t n = 0; n < static_cast<std::size_t>(d.size); ++n) {
    for (std::size_t k = 0; k < D; ++k) {
      z[k] = normal(rng);
      d.raw[n * D + k] = 100.f + 20.f * z[k];
    }
    for (std::size_t j = 0; j < O; ++j) {
      float s = 0;
      for (std::size_t k = 0; k < D; ++k) s += teacher[j * D + k] * z[k];
      d.targets[n * O + j] = s;
    }
  }
  return d;
}

struct Batch {
  std::vector<float> x; // [batch][dim], normalized
  std::vector<float> y; // [batch][outputs]
};

// Reading batch `id` from "storage": its samples, and the emulated latency.
Batch fetch(const Options& o, const Dataset& d, std::int64_t id, int delay_us) {
  Batch b;
  const auto D = static_cast<std::size_t>(d.dim), O = static_cast<std::size_t>(d.outputs);
  b.x.resize(static_cast<std::size_t>(o.batch_size) * D);
  b.y.resize(static_cast<std::size_t>(o.batch_size) * O);
  for (std::size_t k = 0; k < static_cast<std::size_t>(o.batch_size); ++k) {
    const auto sample = static_cast<std::size_t>((id * o.batch_size + static_cast<std::int64_t>(k)) % d.size);
    std::memcpy(&b.x[k * D], &d.raw[sample * D], D * sizeof(float));
    std::memcpy(&b.y[k * O], &d.targets[sample * O], O * sizeof(float));
  }
  if (delay_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
  return b;
}

// Per-sample normalization, then smoothing passes: CPU work that grows with --prep-passes.
void prep(const Options& o, Batch& b) {
  const auto D = static_cast<std::size_t>(o.input_dim);
  std::vector<float> tmp(D);
  for (std::size_t k = 0; k < static_cast<std::size_t>(o.batch_size); ++k) {
    float* x = &b.x[k * D];
    double mean = 0, var = 0;
    for (std::size_t i = 0; i < D; ++i) mean += x[i];
    mean /= static_cast<double>(D);
    for (std::size_t i = 0; i < D; ++i) var += (x[i] - mean) * (x[i] - mean);
    const float inv = static_cast<float>(1.0 / std::sqrt(var / static_cast<double>(D) + 1e-6));
    for (std::size_t i = 0; i < D; ++i) x[i] = (x[i] - static_cast<float>(mean)) * inv;
    for (int p = 0; p < o.prep_passes; ++p) {
      for (std::size_t i = 0; i < D; ++i) {
        const float left = x[i == 0 ? 0 : i - 1], right = x[i + 1 == D ? i : i + 1];
        tmp[i] = 0.96f * x[i] + 0.02f * (left + right);
      }
      std::copy(tmp.begin(), tmp.end(), x);
    }
  }
}

// A linear layer (outputs x dim) fitted by SGD to the teacher's targets; its gradient is what
// the ranks all-reduce, bucket by bucket.
struct Model {
  std::size_t dim, outputs, batch;
  std::vector<float> w, grad, y, err;

  Model(std::size_t d, std::size_t o, std::size_t b)
      : dim(d), outputs(o), batch(b), w(d * o, 0.f), grad(d * o, 0.f), y(b * o), err(b * o) {}

  // y[n] = W x[n] for samples [n0, n1) (modulo the batch) into `out`.
  void forward_rows(const Batch& b, std::size_t n0, std::size_t n1, float* out) const {
    for (std::size_t m = n0; m < n1; ++m) {
      const std::size_t n = m % batch;
      const float* x = &b.x[n * dim];
      for (std::size_t j = 0; j < outputs; ++j) {
        const float* row = &w[j * dim];
        float s = 0;
        for (std::size_t k = 0; k < dim; ++k) s += row[k] * x[k];
        out[n * outputs + j] = s;
      }
    }
  }
  // g += err[n] x[n]^T for samples [n0, n1) (modulo the batch).
  void backward_rows(const Batch& b, std::size_t n0, std::size_t n1, float* g) const {
    for (std::size_t m = n0; m < n1; ++m) {
      const std::size_t n = m % batch;
      const float* x = &b.x[n * dim];
      for (std::size_t j = 0; j < outputs; ++j) {
        const float e = err[n * outputs + j];
        float* row = &g[j * dim];
        for (std::size_t k = 0; k < dim; ++k) row[k] += e * x[k];
      }
    }
  }
};

// Runs `work(first, last)` over `units` units, and `factor` - 1 times as many again (cyclic,
// into scratch) when this rank is slowed on purpose: the same kind of work, F times as much.
template <class Work>
void scaled(double factor, std::size_t units, Work&& work) {
  work(0, units, false);
  const auto extra = static_cast<std::size_t>(std::llround((factor - 1.0) * static_cast<double>(units)));
  for (std::size_t done = 0; done < extra; done += units) work(0, std::min(units, extra - done), true);
}

std::uint64_t fnv1a(const void* data, std::size_t n) {
  std::uint64_t h = 1469598103934665603ull;
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

std::int64_t median(std::vector<std::int64_t> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

int run_rank(const Options& o, const Place& place) {
  const JobShape shape{static_cast<std::uint32_t>(place.world_size), static_cast<std::uint32_t>(o.buckets),
                       static_cast<std::uint64_t>(o.bucket_bytes), static_cast<std::uint32_t>(o.steps)};
  JobSegment job = JobSegment::join(job_id_from(o, place), shape, place.rank, o.timeout_s);
  const int rank = place.rank;
  const std::size_t params = static_cast<std::size_t>(o.buckets) * static_cast<std::size_t>(o.bucket_bytes) / 4;
  const std::size_t dim = static_cast<std::size_t>(o.input_dim), outputs = params / dim;
  const std::size_t B = static_cast<std::size_t>(o.batch_size);
  const Dataset data = make_dataset(o, static_cast<int>(outputs));
  Model model(dim, outputs, B);
  const double factor = rank == o.slow_rank ? o.slow_factor : 1.0;
  const int fetch_delay_us = o.fetch_us + (rank == o.slow_data_rank ? o.slow_data_us : 0);
  std::vector<float> scratch_y(B * outputs), scratch_g(params), scratch_w(params);
  const float lr = static_cast<float>(o.learning_rate);
  const Batch synthetic = o.no_loading ? [&] {
    Batch b = fetch(o, data, rank, 0);
    prep(o, b);
    return b;
  }() : Batch{};

  job.barrier("the start of the job");
  float first_loss = 0, loss = 0;
  const auto run_start = std::chrono::steady_clock::now();
  for (int i = 0; i < o.steps; ++i) {
    if (rank == o.crash_rank && i == o.crash_step) {
      std::fprintf(stderr, "dist_train rank %d: exiting with status 3 at step %d (--crash-rank)\n", rank, i);
      std::exit(3);
    }
    const auto t0 = std::chrono::steady_clock::now();
    {
      dreamscope::Scope step = dreamscope::Scope::step(i);
      // The rank's share of the global batch sequence, as a distributed sampler deals it.
      const std::int64_t batch_id = static_cast<std::int64_t>(i) * place.world_size + rank;
      Batch loaded;
      if (!o.no_loading) {
        {
          dreamscope::Scope f = dreamscope::Scope::fetch(batch_id);
          loaded = fetch(o, data, batch_id, fetch_delay_us);
        }
        dreamscope::Scope p = dreamscope::Scope::prep(batch_id);
        prep(o, loaded);
      }
      const Batch& batch = o.no_loading ? synthetic : loaded;
      {
        DREAMSCOPE_SCOPE(DS_CATEGORY_OPERATION, "forward");
        scaled(factor, B, [&](std::size_t a, std::size_t b, bool extra) {
          model.forward_rows(batch, a, b, extra ? scratch_y.data() : model.y.data());
        });
        loss = 0;
        for (std::size_t k = 0; k < B * outputs; ++k) {
          model.err[k] = (model.y[k] - batch.y[k]) / static_cast<float>(B);
          loss += 0.5f * (model.y[k] - batch.y[k]) * (model.y[k] - batch.y[k]);
        }
        loss /= static_cast<float>(B * outputs);
        if (i == 0) first_loss = loss;
      }
      {
        DREAMSCOPE_SCOPE(DS_CATEGORY_OPERATION, "backward");
        std::fill(model.grad.begin(), model.grad.end(), 0.f);
        scaled(factor, B, [&](std::size_t a, std::size_t b, bool extra) {
          model.backward_rows(batch, a, b, extra ? scratch_g.data() : model.grad.data());
        });
      }
      // The gradient's buckets, one all-reduce each, in the order backward makes them.
      const std::size_t bucket_floats = static_cast<std::size_t>(o.bucket_bytes) / 4;
      for (int k = o.buckets - 1; k >= 0; --k) {
        dreamscope::Scope ar = dreamscope::Scope::collective("all_reduce", o.bucket_bytes);
        job.all_reduce_mean(model.grad.data() + static_cast<std::size_t>(k) * bucket_floats, bucket_floats);
      }
      {
        DREAMSCOPE_SCOPE(DS_CATEGORY_OPERATION, "optimizer");
        scaled(factor, params, [&](std::size_t a, std::size_t b, bool extra) {
          float* w = extra ? scratch_w.data() : model.w.data();
          for (std::size_t k = a; k < b; ++k) w[k] -= lr * model.grad[k];
        });
      }
    }
    job.record_step(static_cast<std::uint32_t>(i),
                    std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
  }
  const double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();

  std::vector<std::int64_t> mine;
  for (int i = 0; i < o.steps; ++i) mine.push_back(job.step_ns(rank, static_cast<std::uint32_t>(i)));
  // The same weights on every rank: what shows the all-reduce summed every rank's gradient.
  std::printf("dist_train rank %d/%d (local %d): %d steps, loss %.4f -> %.4f, weights %016llx\n"
              "rank_median_step_ns %d %lld\n",
              rank, place.world_size, place.local_rank, o.steps, first_loss, loss,
              static_cast<unsigned long long>(fnv1a(model.w.data(), model.w.size() * sizeof(float))), rank,
              static_cast<long long>(median(mine)));
  std::fflush(stdout);
  job.barrier("the end of the job");
  if (rank == 0) {
    // A step of the job lasts as long as its slowest rank's.
    std::vector<std::int64_t> job_steps;
    for (int i = 0; i < o.steps; ++i) {
      std::int64_t slowest = 0;
      for (int r = 0; r < place.world_size; ++r) slowest = std::max(slowest, job.step_ns(r, static_cast<std::uint32_t>(i)));
      job_steps.push_back(slowest);
    }
    std::printf("dist_train: %d ranks, %d steps, %d buckets of %lld bytes, %.3f s\n"
                "median_step_ns %lld\n",
                place.world_size, o.steps, o.buckets, o.bucket_bytes, total_s, static_cast<long long>(median(job_steps)));
    std::fflush(stdout);
  }
  job.leave();
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  std::vector<std::string> rank_args;
  const Options o = parse(argc, argv, rank_args);
  if (o.launch > 0) {
    for (int k : {o.slow_rank, o.slow_data_rank, o.crash_rank}) {
      if (k >= o.launch) bad_usage("--slow-rank, --slow-data-rank and --crash-rank name a rank below --launch");
    }
    std::string job_id = o.job_id.empty() ? std::to_string(getpid()) : o.job_id;
    const JobShape shape{static_cast<std::uint32_t>(o.launch), static_cast<std::uint32_t>(o.buckets),
                         static_cast<std::uint64_t>(o.bucket_bytes), static_cast<std::uint32_t>(o.steps)};
    return dist_train::launch(o.launch, job_id, shape, rank_args);
  }
  const Place place = place_from_environment();
  for (int k : {o.slow_rank, o.slow_data_rank, o.crash_rank}) {
    if (k >= place.world_size) {
      bad_usage("--slow-rank, --slow-data-rank and --crash-rank name a rank below the world size " +
                std::to_string(place.world_size));
    }
  }
  return run_rank(o, place);
}
