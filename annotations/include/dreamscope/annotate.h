/* dreamscope annotations, C API: NVTX v3 ranges in the "dreamscope" domain.
 *
 * Every call becomes an NVTX event, so the ranges show up in `dreamscope trace`, in Nsight
 * Systems and in any other NVTX tool. The category says what a range is (a training step,
 * an operation, a data-pipeline phase, or a collective across the ranks of a distributed job);
 * the payload carries the batch id, the step number or the bytes a collective contributes.
 * With no NVTX tool attached each call costs a few instructions.
 *
 * Ranges opened with ds_range_push end with ds_range_pop on the same thread; a range that
 * crosses threads uses ds_range_start / ds_range_end.
 *
 * When traced, a fetch or prep range pushed here ends with a DS_CATEGORY_CPU mark carrying
 * the CPU time its thread spent in it: what tells storage waits from decoding work when a
 * what-if shares cores among more loader workers. */
#ifndef DREAMSCOPE_ANNOTATE_H
#define DREAMSCOPE_ANNOTATE_H

#include <stdint.h>

#if defined(DREAMSCOPE_ANNOTATE_EXPORT)
#define DS_API __attribute__((visibility("default")))
#else
#define DS_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* NVTX category ids in the dreamscope domain; the tracer stores their names. */
enum ds_category {
  DS_CATEGORY_NONE = 0,
  DS_CATEGORY_STEP = 1,      /* one training step; payload = step number */
  DS_CATEGORY_OPERATION = 2, /* a named piece of work (forward, backward, optimizer) */
  DS_CATEGORY_FETCH = 3,     /* reading a batch from storage; payload = batch id */
  DS_CATEGORY_PREP = 4,      /* preprocessing a batch on the CPU; payload = batch id */
  DS_CATEGORY_WAIT = 5,      /* the consumer waiting for a batch; payload = batch id */
  DS_CATEGORY_CPU = 6,       /* a mark at the end of a fetch or prep range, made by the library
                                when traced: payload = the thread's CPU time in the range, ns */
  DS_CATEGORY_COLLECTIVE = 7, /* a collective across the job's ranks (all-reduce, broadcast, ...),
                                from entry to return, waiting for the other ranks included:
                                name = the operation, payload = the bytes this rank contributes */
  DS_CATEGORY_CONTROL = 8     /* a mark named "pause" or "resume" that tells the tracer to stop or
                                restart recording (ds_tracing_pause); not an event of the run */
};

/* "No payload": the range carries no batch id or step number. */
#define DS_NO_PAYLOAD INT64_MIN

/* A name registered once and reused without copying (see DREAMSCOPE_SCOPE in annotate.hpp). */
typedef const void* ds_string_t;

DS_API ds_string_t ds_register_string(const char* name);

DS_API void ds_range_push(int category, const char* name, int64_t payload);
DS_API void ds_range_push_registered(int category, ds_string_t name, int64_t payload);
DS_API void ds_range_pop(void);

/* A range that may end on another thread; returns the id to pass to ds_range_end. */
DS_API uint64_t ds_range_start(int category, const char* name, int64_t payload);
DS_API void ds_range_end(uint64_t id);

/* An instant event. */
DS_API void ds_mark(int category, const char* name, int64_t payload);

/* Shorthands for the data pipeline and the training loop. */
DS_API void ds_step_push(int64_t step);
DS_API void ds_fetch_push(int64_t batch_id);
DS_API void ds_prep_push(int64_t batch_id);
DS_API void ds_wait_push(int64_t batch_id);

/* The same ranges and marks in the domain DS_AUTO_DOMAIN: what dreamscope's own Python
 * instrumentation records without a change to the program (docs/tracing.md, "Python and
 * PyTorch"). Where a job also has its own annotations of a kind (steps; the data pipeline's
 * wait, fetch and prep), the merged trace keeps those and leaves out the automatic ones of
 * that kind. A step of this domain is not a range but marks that the merge turns into steps:
 * "step begin" (a step starts here if none is open), "step boundary" (the open step ends and
 * the next begins), "step boundary moved" (the last boundary is here instead: the step it
 * ended ends here and the open one begins here), "step boundaries merged" (payload N: the open
 * step takes in the N steps before it) and "step cancel" (the open step is not a step: the
 * loop ended). */
#define DS_AUTO_DOMAIN "dreamscope.auto"
DS_API void ds_auto_range_push(int category, const char* name, int64_t payload);
DS_API void ds_auto_range_pop(void);
DS_API void ds_auto_mark(int category, const char* name, int64_t payload);

/* 1 when an NVTX tool (the dreamscope tracer or another) is attached to this process. */
DS_API int ds_is_traced(void);

/* Stop and restart recording the process's NVTX ranges and marks (of every domain, not only
 * these annotations), as cudaProfilerStop/Start do under Nsight Systems: to record only the
 * steps of interest, or to time paused steps against recorded ones in the same run. While
 * paused, an annotation costs what it costs with no tool attached: the dreamscope tracer
 * empties NVTX's function slots. A range open when recording pauses ends at the pause; one
 * pushed while paused is not recorded, nor is its pop after the resume. The pauses are kept
 * in the trace (`dreamscope info` shows them). CUDA API calls and GPU activity are recorded
 * throughout. Other NVTX tools see two marks of category DS_CATEGORY_CONTROL. */
DS_API void ds_tracing_pause(void);
DS_API void ds_tracing_resume(void);

#ifdef __cplusplus
}
#endif

#endif
