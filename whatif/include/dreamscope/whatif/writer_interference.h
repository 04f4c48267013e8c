// How much slower each traced thread ran while the tracer's writer thread was busy, measured in
// the run (docs/simulation.md, "The writer's drains").
//
// Every 10 ms the writer drains the threads' buffers and writes what they held, for a few ms.
// Where it shares a physical core with a traced thread (two hyperthreads of one) or its caches,
// the thread runs slower meanwhile: on the development VM, in some runs, the steps that overlap
// a drain took 1.5 times as long, and a run's mean step came out 19 % above the untraced one
// while its median step was right. The tracer writes each busy spell of the writer as an
// overhead row `tracer_writer_busy` on the threads that recorded during it
// (tracer_environment.h). The pace of a thread is the mean gap between its recorded events
// (starts and ends of ranges, marks): in a spell against out of spells, over the spells near each
// one, is how much the spell slowed it. Waits (gaps far above the thread's typical) and filled
// ranges are left out.
#pragma once

#include "dreamscope/storage/trace.h"

#include <cstdint>
#include <vector>

namespace dreamscope::whatif {

// A busy spell of the writer on one thread, and the share of the thread's time in it that was
// the writer's doing: `slowdown / (1 + slowdown)`.
struct WriterSlowdown {
  TrackId track{};
  TimeNs start = 0, end = 0;
  double slowdown = 0;
};

struct WriterInterference {
  std::int64_t spells = 0;   // busy spells recorded on threads
  std::int64_t measured = 0; // those whose thread's pace was measured in and out of spells near it
  double median_slowdown = -1; // over the measured spells (-1: none)
  std::vector<WriterSlowdown> slowed; // the measured spells that slowed their thread
};

// At least this many gaps in spells and out of them, around a spell, for its measure.
inline constexpr std::int64_t kMinWriterGaps = 256;

WriterInterference measure_writer_interference(const Trace& trace);

} // namespace dreamscope::whatif
