// Filling probe steps: what the tracer counted instead of recording, copied from a step it recorded.
//
// A probe step (`dreamscope trace --cost-probe-steps N`, docs/tracing.md "Probe steps") is an
// outermost range on a thread in which the pushes inside two open ranges were only counted, so
// that overhead correction can see what recording costs the job where the cost lands. Its step,
// its phases (the two outermost levels) and a `cost probe step` mark with the count are
// recorded; the inner ranges are not. A training step repeats: the recorded step of the same
// name nearest it, with the same phases in the same order and as many inner ranges as the probe
// counted, ran the same ranges. Each of them is copied into the probe step's phase of the same
// place, moved and stretched with that phase (the probe's phase ran without recording's cost,
// so its ranges shrink with it), and says where it came from (`filled_from`: the template
// step's start). The names, nesting and counts an analysis reads are then whole; the times
// inside a filled phase are an estimate, which the GUI and docs say.
//
// Left unfilled, with the mark still saying what was counted: a probe step with no such
// neighbour within kReach steps on either side (a step whose inner ranges vary), or one that
// recorded inner ranges of its own (nvtxRangeStart/End ranges are recorded in a probe step).
#pragma once

#include "dreamscope/storage/trace.h"

#include <cstdint>
#include <vector>

namespace dreamscope::probe_step_fill {

struct FillCounts {
  std::int64_t probe_steps = 0;  // probe steps that counted at least one range
  std::int64_t filled = 0;       // of them, filled
  std::int64_t ranges = 0;       // ranges added
};

// A range to add, and the recorded row of `trace` it copies (which a merge that leaves rows of
// some kinds out asks about, as it asked about the original).
struct FilledRange {
  AnnotationIndex copy_of;
  AnnotationRecord range; // in the ids of `trace`: track, name, domain, category
};

// The ranges to add to `trace`, for every probe step of every thread; `counts` adds up what was
// found.
std::vector<FilledRange> fill_probe_steps(const Trace& trace, FillCounts& counts);

} // namespace dreamscope::probe_step_fill
