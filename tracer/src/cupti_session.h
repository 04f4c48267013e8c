// CUPTI activity tracing for the process, started when the CUDA driver loads the tracer
// through CUDA_INJECTION64_PATH (so processes that never use CUDA never touch CUPTI).
// Buffers completed by CUPTI are only queued on its thread; the writer thread decodes them.
#pragma once

#include "trace_target.h"

#include <string>

namespace dreamscope::tracer {

// Decodes every completed buffer into `target`; returns the records CUPTI dropped.
std::uint64_t cupti_drain(TraceTarget& target, bool all_api);
// cuptiActivityFlushAll(1): called without any tracer lock held (Kineto documents a
// deadlock otherwise).
void cupti_flush_all();
bool cupti_active();
// A fork child cannot use its parent's CUDA context: CUPTI is off there.
void cupti_forget_after_fork();

} // namespace dreamscope::tracer
