#include "cuda_launch_timing.h"

#include <dreamscope/annotate.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include <dlfcn.h>

namespace dreamscope::cli {

namespace cuda_driver {

// The few driver entry points used, by their stable C ABI (cuda.h's types are opaque
// pointers and ints), so that the CLI builds and runs where no CUDA is installed.
using CUresult = int;
using CUdevice = int;
using CUcontext = void*;
using CUmodule = void*;
using CUfunction = void*;
using CUstream = void*;

struct Driver {
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*device_count)(int*) = nullptr;
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*device_name)(char*, int, CUdevice) = nullptr;
  CUresult (*primary_retain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*primary_release)(CUdevice) = nullptr;
  CUresult (*set_current)(CUcontext) = nullptr;
  CUresult (*synchronize)() = nullptr;
  CUresult (*module_load_data)(CUmodule*, const void*) = nullptr;
  CUresult (*module_unload)(CUmodule) = nullptr;
  CUresult (*module_function)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                     void**, void**) = nullptr;
};

template <typename F>
bool bind_symbol(void* lib, F& fn, const char* name) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  return fn != nullptr;
}

// An empty kernel in PTX, compiled by the driver for whatever GPU this is.
constexpr char kEmptyKernelPtx[] = R"(.version 7.0
.target sm_50
.address_size 64
.visible .entry dreamscope_empty() { ret; }
)";

} // namespace cuda_driver

std::variant<CudaLaunchTiming, std::string> time_cuda_launches(int rounds, int batch) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return std::string("no CUDA driver (libcuda.so.1 not found)");
  using namespace cuda_driver;
  Driver d;
  const bool bound = bind_symbol(lib, d.init, "cuInit") && bind_symbol(lib, d.device_count, "cuDeviceGetCount") &&
                     bind_symbol(lib, d.device_get, "cuDeviceGet") && bind_symbol(lib, d.device_name, "cuDeviceGetName") &&
                     bind_symbol(lib, d.primary_retain, "cuDevicePrimaryCtxRetain") &&
                     bind_symbol(lib, d.primary_release, "cuDevicePrimaryCtxRelease_v2") &&
                     bind_symbol(lib, d.set_current, "cuCtxSetCurrent") && bind_symbol(lib, d.synchronize, "cuCtxSynchronize") &&
                     bind_symbol(lib, d.module_load_data, "cuModuleLoadData") &&
                     bind_symbol(lib, d.module_unload, "cuModuleUnload") &&
                     bind_symbol(lib, d.module_function, "cuModuleGetFunction") && bind_symbol(lib, d.launch, "cuLaunchKernel");
  if (!bound) return std::string("the CUDA driver lacks an entry point this measurement uses");
  if (CUresult r = d.init(0); r != 0) return fmt::format("no CUDA device (cuInit returned {})", r);
  int devices = 0;
  if (d.device_count(&devices) != 0 || devices < 1) return std::string("no CUDA device");
  CUdevice dev = 0;
  char name[256] = {};
  CUcontext ctx = nullptr;
  if (d.device_get(&dev, 0) != 0 || d.primary_retain(&ctx, dev) != 0 || d.set_current(ctx) != 0) {
    return std::string("the first CUDA device has no usable context (busy, or in exclusive mode?)");
  }
  d.device_name(name, sizeof name - 1, dev);
  CUmodule module = nullptr;
  CUfunction kernel = nullptr;
  if (d.module_load_data(&module, kEmptyKernelPtx) != 0 ||
      d.module_function(&kernel, module, "dreamscope_empty") != 0) {
    d.primary_release(dev);
    return std::string("the driver did not load the empty kernel's PTX");
  }
  auto launch_batch = [&] {
    bool ok = true;
    for (int i = 0; i < batch && ok; ++i) ok = d.launch(kernel, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr) == 0;
    return ok;
  };
  // The first launches load the kernel onto the GPU and, traced, start CUPTI's buffers; and
  // the tracer calibrates its CUDA calls once CUDA has run a moment: neither is timed.
  bool ok = launch_batch() && d.synchronize() == 0;
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  using clock = std::chrono::steady_clock;
  std::vector<double> per_launch;
  for (int r = 0; r < rounds && ok; ++r) {
    // Inside a range, as a framework's launches are: the tracer then correlates each call
    // with it, which is part of what a launch costs in a job.
    ds_range_push(DS_CATEGORY_OPERATION, "calibrate launches", r);
    const auto t0 = clock::now();
    ok = launch_batch();
    const auto t1 = clock::now();
    ds_range_pop();
    ok = ok && d.synchronize() == 0;
    per_launch.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / batch);
    // The GPU's queue emptied and the tracer's writer given time to drain the batch's records.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  d.module_unload(module);
  d.primary_release(dev);
  if (!ok || per_launch.empty()) return std::string("a kernel launch failed");
  std::sort(per_launch.begin(), per_launch.end());
  return CudaLaunchTiming{per_launch[per_launch.size() / 2], name};
}

} // namespace dreamscope::cli
