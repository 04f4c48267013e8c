// The traced machines' cores, shared in a prediction (docs/simulation.md, "Shared cores").
//
// A task measured on a machine with more busy threads than cores holds the time it waited
// for a core. To share cores in a simulation (SimulationOptions::cpu_cores) its duration
// must be the CPU work it would take on a core of its own. `remove_measured_contention`
// infers that work from the trace itself: while n of the tasks that use a CPU ran at once on
// a machine of k < n cores, each progressed at k/n of full speed (processor sharing, the
// simulator's own model), so a task's work is the integral of min(1, k/n) over its measured
// interval. Replaying those works on k cores gives the measured timing back; a what-if that
// takes work away (a straggler's extra compute) lets the other threads' tasks go faster, as
// they would on the real machine.
//
// Each machine of a distributed job (ProcessInfo::host) is a pool of its own; every machine
// is taken to have the traced machine's cores (meta cpu_cores).
//
// Threads the trace has no events of, only CPU time (the tracer's thread_load rows of an
// OpenMP or BLAS pool, PyTorch's autograd thread), have no tasks, yet they ran on the
// machine's cores: each window of such a thread is cpu_ns / window length running threads'
// worth (at most one) over the window, summed per machine into a background load
// (CpuPools::background) that the simulator and `remove_measured_contention` count beside the
// running tasks. It stays at its measured times.
#pragma once

#include <dreamscope/graph/dependency_graph.h>
#include <dreamscope/whatif/simulator.h>
#include <dreamscope/storage/trace.h>

#include <cstdint>
#include <vector>

namespace dreamscope::whatif {

struct CpuPools {
  std::size_t cores = 0;                   // per pool; 0: a core per thread (no sharing)
  std::vector<std::uint32_t> of_resource;  // per resource of the graph
  std::size_t pools = 0;                   // distinct machines
  // Per pool, the load of the threads with no events (see above): SimulationOptions::cpu_background.
  std::vector<std::vector<CpuLoadStep>> background;
};

// One pool per machine (host) of the graph's threads, `cores` each, with the background load
// of its threads that have no events. Threads whose process names no host share one pool with
// the rest of their trace.
CpuPools machine_pools(const Trace& trace, const DependencyGraph& graph, std::size_t cores);

struct ContentionRemoved {
  std::size_t tasks = 0;      // tasks whose duration shrank
  TimeNs time_before = 0;     // their summed durations
  TimeNs time_after = 0;
};

// Scales each task that uses a CPU to its work at full speed, inferred from how many such
// tasks of its pool ran at once, with its background load (see above). Tasks with a measured CPU share (a fetch's CPU
// time against its storage wait) keep their CPU time and lose the wait for a core of their
// CPU part. O(n log n) in the tasks.
ContentionRemoved remove_measured_contention(DependencyGraph& graph, const CpuPools& pools);

} // namespace dreamscope::whatif
