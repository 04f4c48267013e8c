// CUPTI activity tracing for the process, started when the CUDA driver loads the tracer
// through CUDA_INJECTION64_PATH (so processes that never use CUDA never touch CUPTI).
// Buffers completed by CUPTI are only queued on its thread; the writer thread decodes them.
// A build without CUPTI links cupti_session_none.cpp instead: a session never active.
#pragma once

#include "trace_target.h"

#include <dreamscope/storage/trace.h>

#include <mutex>
#include <optional>
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
// CUPTI's cost per recorded CUDA API call to the calling thread, timed once on the calling
// thread (the writer) a moment after CUDA started; nullopt before then, after the first try,
// or where the driver or CUPTI refuses. The calls it makes are left out of the trace.
std::optional<CalibrationRecord> cupti_calibrate_api_cost();
// Keeps a few zeroed activity buffers ready (from the writer thread), so that CUPTI's
// requests on traced threads find one and neither allocate, fault nor zero there.
void cupti_keep_buffers_ready();
// The calibration's calls CUPTI recorded (0: the figure timed nothing CUPTI did).
std::uint64_t cupti_calibration_calls();
// A fork child cannot use its parent's CUDA context: CUPTI is off there.
void cupti_forget_after_fork();
// The session's locks, held across fork so that the child never finds one taken by a
// thread it does not have (the writer mid-flush, CUPTI handing a buffer over). The writer
// takes the flush lock before the tracer's work lock and the queue lock after it, and
// fork must take them in that order too.
std::mutex& cupti_flush_mutex();
std::mutex& cupti_queue_mutex();

} // namespace dreamscope::tracer
