// The CUPTI activity record versions this build decodes, chosen in one place. CUPTI renames
// its structs when their layout changes (CUpti_ActivityKernel9 is gone in CUDA 13, replaced
// by Kernel10); moving to a new toolkit means editing this file and nothing else.
#pragma once

#include <cuda.h>
#include <cupti.h>

namespace dreamscope::tracer::cupti {

#if CUDA_VERSION >= 13000
using KernelRecord = CUpti_ActivityKernel10;
using MemcpyRecord = CUpti_ActivityMemcpy6;
using MemsetRecord = CUpti_ActivityMemset4;
using SyncRecord = CUpti_ActivitySynchronization2;
using OverheadRecord = CUpti_ActivityOverhead3;
using DeviceRecord = CUpti_ActivityDevice5;
using CudaEventRecord = CUpti_ActivityCudaEvent2;
#else
#error "dreamscope's CUPTI decoder knows the CUDA 13 record layouts; add the older ones to cupti_records.h"
#endif
using ApiRecord = CUpti_ActivityAPI;
using ExternalCorrelationRecord = CUpti_ActivityExternalCorrelation;

} // namespace dreamscope::tracer::cupti
