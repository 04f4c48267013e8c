// The JSON of a replay and of a what-if, as `dreamscope replay --format json` and
// `dreamscope whatif --format json` print it and as the Python module's Trace.replay() and
// Trace.whatif() hand it out: one writer for both, so that a notebook and a script read the
// same keys and values (docs/simulation.md and docs/whatif.md document them).
#pragma once

#include "dreamscope/storage/trace.h"
#include "dreamscope/whatif/replay.h"
#include "dreamscope/whatif/whatif_engine.h"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace dreamscope::analyzers {

// Which of a replay's steps a report lists: every one with `all_steps`, else at most
// `max_steps` in text and max(`max_steps`, kJsonStepRows) in JSON, picked as analyze picks its
// per-step rows (listed_steps: the first, the slowest and those around the median).
struct StepListing {
  std::size_t max_steps = 50;
  bool all_steps = false;
};
std::vector<std::size_t> listed_replay_steps(const whatif::ReplayReport& r, const StepListing& listing, bool json);

// `label` names the input (the trace's file, or the ranks of a job); `predicted_path` the
// predicted trace written with the report, if any ("": none).
std::string replay_json(const Trace& trace, const whatif::ReplayReport& r, std::string_view label,
                        const StepListing& listing, std::string_view predicted_path = {});

// True when no task of the trace matched any of a prediction's selectors (a scenario that
// changed nothing), which every rendering of a what-if says.
bool matched_nothing(const whatif::Prediction& p);

std::string whatif_json(const whatif::WhatIfReport& r, std::string_view label, std::string_view predicted_path = {});

} // namespace dreamscope::analyzers
