// CUPTI activity tracing for the process, started when the CUDA driver loads the tracer
// through CUDA_INJECTION64_PATH (so processes that never use CUDA never touch CUPTI).
// Buffers completed by CUPTI are only queued on its thread; the writer thread decodes them.
// A build without CUPTI links cupti_session_none.cpp instead: a session never active.
#pragma once

#include "trace_target.h"

#include <mutex>
#include <string>

namespace dreamscope::tracer {

// Decodes every completed buffer into `target`; returns the records CUPTI dropped. `final`:
// the part is closing (or the process dying), so nothing may wait for a later buffer.
std::uint64_t cupti_drain(TraceTarget& target, bool all_api, bool final);
// cuptiActivityFlushAll(1), every record, complete or not: at the end. Called without any
// tracer lock held (Kineto documents a deadlock otherwise).
void cupti_flush_all();
// cuptiActivityFlushAll(0), the buffers whose records are all complete: periodically, from
// the writer thread, until the process starts exiting. Also without a tracer lock held.
void cupti_flush_completed();
bool cupti_active();
// A fork child cannot use its parent's CUDA context: CUPTI is off there.
void cupti_forget_after_fork();
// The session's locks, held across fork so that the child never finds one taken by a
// thread it does not have (the writer mid-flush, CUPTI handing a buffer over). The writer
// takes the flush lock before the tracer's work lock and the queue lock after it, and
// fork must take them in that order too.
std::mutex& cupti_flush_mutex();
std::mutex& cupti_queue_mutex();

} // namespace dreamscope::tracer
