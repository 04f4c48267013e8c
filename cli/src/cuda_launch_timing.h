// What one kernel launch costs the calling thread on this machine's first GPU, for
// `dreamscope calibrate`: an empty kernel launched in batches through the CUDA driver, the
// median per launch over the batches. Run once untraced and once under the tracer, the
// difference is what recording a launch (its API record and CUPTI's instrumentation of the
// kernel for its activity record) adds: overhead correction charges it per launch.
//
// The driver is opened at run time (dlopen of libcuda.so.1), so dreamscope itself needs no
// CUDA to build or run; on a machine without a driver or a device the answer says why.
#pragma once

#include <string>
#include <variant>

namespace dreamscope::cli {

struct CudaLaunchTiming {
  double launch_ns = 0; // median over the batches of one launch's share of its batch
  std::string device;   // the device's name, as the driver gives it
};

// Either the timing, or why there is none ("libcuda.so.1 not found", "no CUDA device").
std::variant<CudaLaunchTiming, std::string> time_cuda_launches(int rounds, int batch);

} // namespace dreamscope::cli
