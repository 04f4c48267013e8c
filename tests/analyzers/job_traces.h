// Hand-built distributed jobs: each rank's program of data waits, compute and collectives,
// played out as the ranks would run it (a collective ends on every rank at once, its
// transfer after its last rank arrived), and written as one trace per rank: PyTorch's
// record_param_comms ranges with their communicator and sequence number, dreamscope steps
// and data waits. What each rank waited for is then known exactly.
#pragma once

#include <dreamscope/storage/trace.h>

#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace dreamscope::test {

struct JobAction {
  enum Kind { DataWait, Compute, Collective } kind = Compute;
  TimeNs time = 0;              // a wait's or compute's length; a collective's transfer
  std::string op = "allreduce"; // PyTorch's "Collective name"
  std::string communicator = "0";
  std::vector<std::int64_t> members; // a collective's ranks; empty: every rank
};

inline JobAction data_wait(TimeNs t) { return {JobAction::DataWait, t}; }
inline JobAction compute(TimeNs t) { return {JobAction::Compute, t}; }
inline JobAction collective(TimeNs transfer, std::string op = "allreduce", std::string communicator = "0",
                            std::vector<std::int64_t> members = {}) {
  return {JobAction::Collective, transfer, std::move(op), std::move(communicator), std::move(members)};
}

using JobProgram = std::function<std::vector<JobAction>(std::int64_t rank, std::int64_t step)>;

struct JobTraceOptions {
  std::string host = "node-a";               // every rank's host
  std::map<std::int64_t, std::string> hosts; // per rank, over `host`
  std::map<std::int64_t, TimeNs> clock_skew; // added to every time a rank records
  std::map<std::int64_t, TimeNs> late_start; // a rank's first step begins this much after `start`
  TimeNs start = 1'000'000;
};

// The traces of `ranks` ranks running `steps` steps of `program`, one per rank.
inline std::vector<Trace> simulate_job(std::int64_t ranks, std::int64_t steps, const JobProgram& program,
                                       const JobTraceOptions& options = {}) {
  struct Rank {
    TraceBuilder b;
    TrackId thread{0};
    std::int64_t step = 0;
    std::size_t action = 0;
    std::vector<JobAction> actions;
    TimeNs t = 0, step_start = 0;
    bool waiting = false, done = false;
    std::map<std::string, std::int64_t> sequence;
    std::int64_t batch = 0;
  };
  std::vector<Rank> rs(static_cast<std::size_t>(ranks));
  for (std::int64_t r = 0; r < ranks; ++r) {
    Rank& x = rs[static_cast<std::size_t>(r)];
    x.b.set_source(TraceSource::Tracer);
    const auto host = options.hosts.count(r) ? options.hosts.at(r) : options.host;
    const auto p = x.b.add_process(
        {.pid = 100 + r, .name = "train", .rank = r, .local_rank = r, .world_size = ranks, .host = host});
    x.thread = x.b.thread_track(p, 100 + r, "MainThread");
    x.t = options.start + (options.late_start.count(r) ? options.late_start.at(r) : 0);
  }
  auto skew = [&](std::int64_t r) { return options.clock_skew.count(r) ? options.clock_skew.at(r) : 0; };
  auto annotate = [&](std::int64_t r, std::string_view name, std::string_view category, TimeNs start, TimeNs end,
                      std::int64_t payload = kNoValue) {
    Rank& x = rs[static_cast<std::size_t>(r)];
    return x.b.add(AnnotationRecord{.track = x.thread,
                                    .start = start + skew(r),
                                    .end = end + skew(r),
                                    .name = x.b.intern(name),
                                    .domain = x.b.intern("dreamscope"),
                                    .category = x.b.intern(category),
                                    .payload = payload});
  };
  struct Arrival {
    std::int64_t rank;
    TimeNs at;
  };
  std::map<std::pair<std::string, std::int64_t>, std::vector<Arrival>> pending;
  std::map<std::pair<std::string, std::int64_t>, JobAction> pending_action;
  for (bool progress = true; progress;) {
    progress = false;
    for (std::int64_t r = 0; r < ranks; ++r) {
      Rank& x = rs[static_cast<std::size_t>(r)];
      while (!x.done && !x.waiting) {
        if (x.action == 0) {
          x.actions = program(r, x.step);
          x.step_start = x.t;
        }
        if (x.action == x.actions.size()) {
          annotate(r, "step", "step", x.step_start, x.t, x.step);
          x.action = 0;
          x.done = ++x.step == steps;
          progress = true;
          continue;
        }
        const JobAction& a = x.actions[x.action];
        if (a.kind == JobAction::Collective) {
          const std::int64_t seq = x.sequence[a.communicator]++;
          pending[{a.communicator, seq}].push_back({r, x.t});
          pending_action[{a.communicator, seq}] = a;
          x.waiting = true;
          progress = true;
          break;
        }
        if (a.kind == JobAction::DataWait) annotate(r, "wait for batch", "wait", x.t, x.t + a.time, x.batch++);
        else annotate(r, "compute", "operation", x.t, x.t + a.time);
        x.t += a.time;
        ++x.action;
        progress = true;
      }
    }
    for (auto it = pending.begin(); it != pending.end();) {
      const JobAction& a = pending_action[it->first];
      const std::size_t members = a.members.empty() ? static_cast<std::size_t>(ranks) : a.members.size();
      if (it->second.size() < members) {
        ++it;
        continue;
      }
      TimeNs last = 0;
      for (const Arrival& v : it->second) last = std::max(last, v.at);
      const TimeNs end = last + a.time;
      for (const Arrival& v : it->second) {
        const AnnotationIndex row = annotate(v.rank, "record_param_comms", "cpu_op", v.at, end);
        Rank& x = rs[static_cast<std::size_t>(v.rank)];
        x.b.add_arg(row, "Collective name", a.op);
        x.b.add_arg(row, "Process Group Name", a.communicator);
        x.b.add_arg(row, "Seq", it->first.second);
        x.t = end;
        x.waiting = false;
        ++x.action;
      }
      pending_action.erase(it->first);
      it = pending.erase(it);
      progress = true;
    }
  }
  if (!pending.empty()) throw std::logic_error("the job's program deadlocks");
  std::vector<Trace> out;
  for (Rank& x : rs) out.push_back(std::move(x.b).build());
  return out;
}

} // namespace dreamscope::test
