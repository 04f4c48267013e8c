// `dist_train --launch N`: dist_train as its own torchrun. Starts N copies of itself, each
// with RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE and DIST_TRAIN_JOB_ID set, waits for
// all of them, and exits with the status of the first that failed (0 when none did). When one
// fails, the others are told through the job's segment and stop at their next collective;
// any still running 10 s later are killed.
#pragma once

#include "job_segment.h"

#include <string>
#include <vector>

namespace dist_train {

// `rank_args`: the command line each rank runs, without --launch (argv[0] first).
int launch(int ranks, const std::string& job_id, const JobShape& shape, const std::vector<std::string>& rank_args);

} // namespace dist_train
