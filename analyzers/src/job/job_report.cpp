// The job report from its ranks' summaries (job_analysis.h): HTA's numbers across ranks, the
// collectives matched and put on one clock, each rank's collective wait against transfer,
// and each step's straggler with what made it late. Definitions: docs/multi-rank.md.
#include "dreamscope/analyzers/job_analysis.h"

#include "dreamscope/storage/collectives.h"
#include "dreamscope/storage/job.h"

#include "common/intervals.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace dreamscope::analyzers {

namespace {

using detail::Interval;

// Disjoint intervals with prefix sums: the time they cover within any window in O(log n).
class TimeSet {
 public:
  TimeSet() = default;
  explicit TimeSet(std::vector<Interval> v) : spans_(detail::merge_intervals(std::move(v))) {
    prefix_.reserve(spans_.size() + 1);
    prefix_.push_back(0);
    for (const Interval& s : spans_) prefix_.push_back(prefix_.back() + (s.end - s.start));
  }
  TimeNs total() const { return prefix_.empty() ? 0 : prefix_.back(); }
  TimeNs within(TimeNs a, TimeNs b) const { return b <= a ? 0 : covered_before(b) - covered_before(a); }

 private:
  TimeNs covered_before(TimeNs t) const {
    const auto it =
        std::upper_bound(spans_.begin(), spans_.end(), t, [](TimeNs v, const Interval& s) { return v < s.start; });
    const auto i = static_cast<std::size_t>(it - spans_.begin());
    if (i == 0) return 0;
    const Interval& last = spans_[i - 1];
    return prefix_[i - 1] + (std::min(t, last.end) - last.start);
  }
  std::vector<Interval> spans_;
  std::vector<TimeNs> prefix_;
};

TimeNs median_of_ranks(std::vector<TimeNs> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : v[n / 2 - 1] + (v[n / 2] - v[n / 2 - 1]) / 2;
}

// One rank on the job's clock: its summary's times shifted, and the sets the splits measure.
struct RankTimes {
  const RankSummary* summary = nullptr;
  TimeNs shift = 0;
  TimeSet calls, waits, data, busy; // busy: data waits and calls together
  std::vector<RankStep> steps;      // shifted
  // `steps` by number, in their order among equals: a rank's steps of a number found in
  // O(log n), where a scan of every step for each step number made a job of 10^4 steps take
  // seconds.
  std::vector<std::uint32_t> by_number;

  void index_steps() {
    by_number.resize(steps.size());
    for (std::uint32_t i = 0; i < by_number.size(); ++i) by_number[i] = i;
    std::stable_sort(by_number.begin(), by_number.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return steps[a].number < steps[b].number; });
  }

  // The first of `by_number` whose step is numbered `number` or more.
  std::vector<std::uint32_t>::const_iterator first_numbered(std::int64_t number) const {
    return std::lower_bound(by_number.begin(), by_number.end(), number,
                            [&](std::uint32_t i, std::int64_t n) { return steps[i].number < n; });
  }

  // Its steps numbered `number`, in order.
  template <class F>
  void for_each_step(std::int64_t number, F&& f) const {
    for (auto it = first_numbered(number); it != by_number.end() && steps[*it].number == number; ++it) f(steps[*it]);
  }

  // The start of its first step `number`, else of its trace.
  TimeNs step_start(std::int64_t number) const {
    const auto it = first_numbered(number);
    return it != by_number.end() && steps[*it].number == number ? steps[*it].start : summary->begin + shift;
  }
};

void hta_across_ranks(JobReport& r) {
  std::map<std::string, TimeUs> by_type;
  for (const RankSummary& s : r.ranks) {
    for (const KernelTypeTime& k : s.hta.kernel_types) by_type[k.kernel_type] += k.sum;
  }
  TimeUs total = 0;
  for (const auto& [type, sum] : by_type) total += sum;
  for (const auto& [type, sum] : by_type) {
    if (sum <= 0) continue;
    r.kernel_types.push_back(
        {type, sum, detail::round_to(100.0 * static_cast<double>(sum) / static_cast<double>(total), 1)});
  }
  std::sort(r.kernel_types.begin(), r.kernel_types.end(), [](const JobKernelType& a, const JobKernelType& b) {
    return a.sum != b.sum ? a.sum > b.sum : a.kernel_type < b.kernel_type;
  });

  std::map<std::string, JobKernel> by_name;
  for (const RankSummary& s : r.ranks) {
    for (const KernelNameStats& k : s.hta.kernels) {
      auto [it, fresh] = by_name.try_emplace(k.name);
      JobKernel& j = it->second;
      if (fresh) {
        j.name = k.name;
        j.type = k.type;
        j.min_rank_sum = j.max_rank_sum = k.sum;
        j.min_rank = j.max_rank = s.rank;
      }
      ++j.ranks;
      j.count += k.count;
      j.sum += k.sum;
      if (k.sum < j.min_rank_sum) {
        j.min_rank_sum = k.sum;
        j.min_rank = s.rank;
      }
      if (k.sum > j.max_rank_sum) {
        j.max_rank_sum = k.sum;
        j.max_rank = s.rank;
      }
    }
  }
  for (auto& [name, k] : by_name) r.kernels.push_back(std::move(k));
  std::stable_sort(r.kernels.begin(), r.kernels.end(),
                   [](const JobKernel& a, const JobKernel& b) { return a.sum > b.sum; });
}

std::string rank_list(const std::vector<std::int64_t>& ranks) {
  std::string out;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (i == 8 && ranks.size() > 10) return out + fmt::format(" and {} more", ranks.size() - i);
    out += (out.empty() ? "" : ", ") + std::to_string(ranks[i]);
  }
  return out;
}

std::string format_shift(TimeNs ns) {
  const double ms = static_cast<double>(ns) / 1e6;
  return fmt::format("{:+.3f} ms", ms);
}

// The ranks' clock domains (a host's ranks share one; a rank of no host has its own), and
// the shift that puts each rank on the lowest rank's clock.
std::vector<TimeNs> clock_shifts(const JobReport& r, const std::vector<CollectiveCall>& calls,
                                 std::vector<std::string>& notes) {
  std::map<std::string, std::int64_t> host_domain;
  std::map<std::int64_t, std::int64_t> domain_of_rank;
  std::vector<std::int64_t> domain(r.ranks.size());
  for (std::size_t i = 0; i < r.ranks.size(); ++i) {
    domain[i] = static_cast<std::int64_t>(i);
    if (!r.ranks[i].host.empty()) domain[i] = host_domain.emplace(r.ranks[i].host, domain[i]).first->second;
    domain_of_rank[r.ranks[i].rank] = domain[i];
  }
  std::vector<TimeNs> shift(r.ranks.size(), 0);
  if (std::set<std::int64_t>(domain.begin(), domain.end()).size() < 2) return shift;
  const auto offsets = clock_offsets(match_collectives(calls), domain_of_rank, ClockAlignment::Auto);
  std::map<TimeNs, std::vector<std::int64_t>> ranks_by_shift;
  for (std::size_t i = 0; i < r.ranks.size(); ++i) {
    if (auto it = offsets.find(domain[i]); it != offsets.end() && it->second != 0) {
      shift[i] = it->second;
      ranks_by_shift[it->second].push_back(r.ranks[i].rank);
    }
  }
  for (const auto& [s, ranks] : ranks_by_shift) {
    notes.push_back(fmt::format("Rank{} {} on another clock: shifted by {} onto rank {}'s, by their collectives.",
                                ranks.size() > 1 ? "s" : "", rank_list(ranks), format_shift(s), r.ranks.front().rank));
  }
  return shift;
}

struct WindowParts {
  TimeNs work = 0, data = 0, held = 0, transfer = 0;
};

WindowParts parts_in(const RankTimes& t, TimeNs a, TimeNs b) {
  WindowParts p;
  if (b <= a) return p;
  p.data = t.data.within(a, b);
  p.held = t.waits.within(a, b);
  p.transfer = t.calls.within(a, b) - p.held;
  p.work = (b - a) - t.busy.within(a, b);
  return p;
}

class JobAnalysis {
 public:
  JobAnalysis(JobReport& r) : r_(r) {}

  void run() {
    std::vector<CollectiveCall> calls;
    for (std::size_t i = 0; i < r_.ranks.size(); ++i) {
      const RankSummary& s = r_.ranks[i];
      for (std::size_t k = 0; k < s.collectives.size(); ++k) {
        const RankCollectiveCall& c = s.collectives[k];
        calls.push_back({.rank = s.rank,
                         .op = c.op,
                         .communicator = c.communicator,
                         .sequence = c.sequence,
                         .pytorch_sequence = c.pytorch_sequence,
                         .step = c.step,
                         .bytes = c.bytes,
                         .table = EventTable::Annotation,
                         .row = static_cast<std::uint32_t>(k),
                         .track = static_cast<TrackId>(i),
                         .start = c.start,
                         .end = c.end});
      }
    }
    const std::vector<TimeNs> shift = clock_shifts(r_, calls, r_.notes);
    for (CollectiveCall& c : calls) {
      c.start += shift[c.track];
      c.end += shift[c.track];
    }
    job_ = match_collectives(std::move(calls));
    r_.instances = job_.instances.size();
    r_.calls = job_.calls.size();
    r_.unmatched_calls = job_.unmatched_calls;
    r_.mismatched_ops = job_.mismatched_ops;

    instance_of_.assign(job_.calls.size(), kNoIndex);
    wait_.assign(job_.calls.size(), 0);
    instance_ranks_.resize(job_.instances.size());
    for (std::uint32_t n = 0; n < job_.instances.size(); ++n) {
      const CollectiveInstance& inst = job_.instances[n];
      for (std::uint32_t k : inst.calls) {
        instance_of_[k] = n;
        wait_[k] = inst.wait_of(job_.calls, k);
        instance_ranks_[n].push_back(job_.calls[k].rank);
      }
    }
    build_rank_times(shift);
    collective_totals();
    steps();
    notes();
  }

 private:
  void build_rank_times(const std::vector<TimeNs>& shift) {
    times_.resize(r_.ranks.size());
    rank_calls_.assign(r_.ranks.size(), {0, 0});
    longest_wait_.assign(r_.ranks.size(), 0);
    for (std::size_t k = job_.calls.size(); k-- > 0;) rank_calls_[job_.calls[k].track].first = k;
    for (std::size_t k = 0; k < job_.calls.size(); ++k) {
      rank_calls_[job_.calls[k].track].second = k + 1;
      longest_wait_[job_.calls[k].track] = std::max(longest_wait_[job_.calls[k].track], wait_[k]);
    }
    std::vector<std::vector<Interval>> calls(r_.ranks.size()), waits(r_.ranks.size());
    for (std::size_t k = 0; k < job_.calls.size(); ++k) {
      const CollectiveCall& c = job_.calls[k];
      calls[c.track].push_back({c.start, c.end});
      if (wait_[k] > 0) waits[c.track].push_back({c.start, c.start + wait_[k]});
    }
    r_.begin = r_.end = 0;
    for (std::size_t i = 0; i < r_.ranks.size(); ++i) {
      RankTimes& t = times_[i];
      const RankSummary& s = r_.ranks[i];
      t.summary = &s;
      t.shift = shift[i];
      std::vector<Interval> data;
      for (const TimeSpan& w : s.data_waits) data.push_back({w.start + t.shift, w.end + t.shift});
      std::vector<Interval> busy = data;
      busy.insert(busy.end(), calls[i].begin(), calls[i].end());
      t.calls = TimeSet(std::move(calls[i]));
      t.waits = TimeSet(std::move(waits[i]));
      t.data = TimeSet(std::move(data));
      t.busy = TimeSet(std::move(busy));
      t.steps = s.steps;
      for (RankStep& st : t.steps) {
        st.start += t.shift;
        st.end += t.shift;
      }
      t.index_steps();
      const TimeNs b = s.begin + t.shift, e = s.end + t.shift;
      r_.begin = i == 0 ? b : std::min(r_.begin, b);
      r_.end = i == 0 ? e : std::max(r_.end, e);
    }
  }

  // The others' wait at instance n: what its last rank cost them.
  TimeNs others_wait(std::uint32_t n) const {
    TimeNs sum = 0;
    const CollectiveInstance& inst = job_.instances[n];
    for (std::uint32_t k : inst.calls) {
      if (job_.calls[k].rank != inst.last_rank) sum += wait_[k];
    }
    return sum;
  }

  std::size_t index_of_rank(std::int64_t rank) const {
    for (std::size_t i = 0; i < r_.ranks.size(); ++i) {
      if (r_.ranks[i].rank == rank) return i;
    }
    return 0; // every instance's ranks are the report's
  }

  void collective_totals() {
    for (std::size_t i = 0; i < r_.ranks.size(); ++i) {
      RankCollectiveTime c;
      c.rank = r_.ranks[i].rank;
      c.in_collectives = times_[i].calls.total();
      c.wait = times_[i].waits.total();
      c.transfer = c.in_collectives - c.wait;
      c.clock_shift = times_[i].shift;
      r_.collective_ranks.push_back(c);
    }
    for (const CollectiveCall& c : job_.calls) ++r_.collective_ranks[c.track].calls;
    for (std::uint32_t n = 0; n < job_.instances.size(); ++n) {
      const TimeNs caused = others_wait(n);
      if (caused <= 0) continue;
      RankCollectiveTime& c = r_.collective_ranks[index_of_rank(job_.instances[n].last_rank)];
      ++c.last_arrivals;
      c.caused_wait += caused;
    }

    std::map<std::pair<std::string, std::string>, CollectiveOpTime> ops;
    for (std::size_t k = 0; k < job_.calls.size(); ++k) {
      const CollectiveCall& c = job_.calls[k];
      CollectiveOpTime& o = ops[{c.communicator, c.op}];
      o.communicator = c.communicator;
      o.op = c.op;
      ++o.calls;
      if (c.bytes != kNoValue && c.bytes > 0) o.bytes += c.bytes;
      o.time += c.duration();
      o.wait += wait_[k];
    }
    for (const CollectiveInstance& inst : job_.instances) {
      ++ops[{inst.communicator, job_.calls[inst.calls.front()].op}].instances;
    }
    for (auto& [key, o] : ops) {
      o.transfer = o.time - o.wait;
      r_.collective_ops.push_back(std::move(o));
    }
    std::stable_sort(r_.collective_ops.begin(), r_.collective_ops.end(),
                     [](const CollectiveOpTime& a, const CollectiveOpTime& b) { return a.time > b.time; });
  }

  RankStepSplit split_of(std::size_t i, const RankStep& st) const {
    const RankTimes& t = times_[i];
    RankStepSplit s;
    s.rank = r_.ranks[i].rank;
    s.duration = st.end - st.start;
    s.data_wait = st.data_wait;
    const TimeNs in_collectives = t.calls.within(st.start, st.end);
    s.collective_wait = t.waits.within(st.start, st.end);
    s.transfer = in_collectives - s.collective_wait;
    s.own_work = std::max<TimeNs>(0, s.duration - t.busy.within(st.start, st.end));
    return s;
  }

  void steps() {
    std::map<std::int64_t, std::string> names;
    for (const RankSummary& s : r_.ranks) {
      for (const RankStep& st : s.steps) names.emplace(st.number, st.name);
    }
    std::map<std::int64_t, std::vector<std::uint32_t>> instances_of_step;
    for (std::uint32_t n = 0; n < job_.instances.size(); ++n) instances_of_step[job_.instances[n].step].push_back(n);
    for (const auto& [number, name] : names) {
      StepStraggler st;
      st.step = number;
      st.name = name;
      for (std::size_t i = 0; i < r_.ranks.size(); ++i) {
        bool any = false;
        RankStepSplit sum;
        sum.rank = r_.ranks[i].rank;
        times_[i].for_each_step(number, [&](const RankStep& rs) {
          const RankStepSplit p = split_of(i, rs);
          sum.duration += p.duration;
          sum.own_work += p.own_work;
          sum.data_wait += p.data_wait;
          sum.collective_wait += p.collective_wait;
          sum.transfer += p.transfer;
          any = true;
        });
        if (!any) continue;
        st.job_wait += sum.collective_wait;
        st.ranks.push_back(sum);
      }
      if (auto it = instances_of_step.find(number); it != instances_of_step.end()) straggler(st, it->second);
      r_.steps.push_back(std::move(st));
    }
  }

  // The instance before `n` that every rank of `n` took part in: where they were last
  // together. None when `n` is their first.
  std::optional<std::uint32_t> last_together(std::uint32_t n) const {
    // Bounded: a job with thousands of small groups falls back to the step's start.
    constexpr std::uint32_t kLookBack = 4096;
    const auto& ranks = instance_ranks_[n];
    for (std::uint32_t j = n, looked = 0; j-- > 0 && looked < kLookBack; ++looked) {
      const auto& other = instance_ranks_[j];
      if (other.size() >= ranks.size() && std::includes(other.begin(), other.end(), ranks.begin(), ranks.end())) {
        return j;
      }
    }
    return std::nullopt;
  }

  void straggler(StepStraggler& st, const std::vector<std::uint32_t>& instances) {
    std::map<std::int64_t, TimeNs> caused;
    for (std::uint32_t n : instances) {
      const TimeNs w = others_wait(n);
      if (w > 0) caused[job_.instances[n].last_rank] += w;
    }
    for (const auto& [rank, w] : caused) {
      if (w > st.caused_wait) {
        st.caused_wait = w;
        st.straggler = rank;
      }
    }
    if (st.straggler == kNoValue) return;

    std::map<std::int64_t, TimeNs> held_by;
    for (std::uint32_t n : instances) {
      const CollectiveInstance& inst = job_.instances[n];
      if (inst.last_rank != st.straggler || others_wait(n) <= 0) continue;
      ++st.late_arrivals;
      const auto together = last_together(n);
      // Each rank's time from when they were last together (or its step's start) to its
      // arrival here.
      std::vector<TimeNs> arrivals, work, data, held, transfer;
      WindowParts own;
      TimeNs own_arrival = 0, own_from = 0;
      for (std::uint32_t k : inst.calls) {
        const CollectiveCall& c = job_.calls[k];
        const RankTimes& t = times_[c.track];
        TimeNs from = t.step_start(c.step);
        if (together) {
          for (std::uint32_t kj : job_.instances[*together].calls) {
            if (job_.calls[kj].rank == c.rank) from = job_.calls[kj].end;
          }
        }
        from = std::min(from, c.start);
        const WindowParts p = parts_in(t, from, c.start);
        if (c.rank == st.straggler) {
          own = p;
          own_arrival = c.start;
          own_from = from;
          continue;
        }
        arrivals.push_back(c.start);
        work.push_back(p.work);
        data.push_back(p.data);
        held.push_back(p.held);
        transfer.push_back(p.transfer);
      }
      st.late_by += own_arrival - median_of_ranks(arrivals);
      st.excess_compute += own.work - median_of_ranks(work);
      st.excess_input += own.data - median_of_ranks(data);
      st.excess_held += own.held - median_of_ranks(held);
      st.excess_transfer += own.transfer - median_of_ranks(transfer);
      // Who held it: the last rank of each collective it waited in, by the wait.
      const std::size_t self = index_of_rank(st.straggler);
      // The rank's calls are one run of job_.calls, by start; a wait is never longer than
      // the rank's longest.
      const auto& [first, last] = rank_calls_[self];
      auto k = static_cast<std::size_t>(
          std::lower_bound(job_.calls.begin() + static_cast<std::ptrdiff_t>(first),
                           job_.calls.begin() + static_cast<std::ptrdiff_t>(last), own_from - longest_wait_[self],
                           [](const CollectiveCall& c, TimeNs t) { return c.start < t; }) -
          job_.calls.begin());
      for (; k < last && job_.calls[k].start < own_arrival; ++k) {
        const CollectiveCall& c = job_.calls[k];
        if (wait_[k] <= 0 || instance_of_[k] == kNoIndex) continue;
        const TimeNs lo = std::max(c.start, own_from), hi = std::min(c.start + wait_[k], own_arrival);
        if (hi > lo) held_by[job_.instances[instance_of_[k]].last_rank] += hi - lo;
      }
    }
    TimeNs most = 0;
    for (const auto& [rank, w] : held_by) {
      if (w > most) {
        most = w;
        st.held_by = rank;
      }
    }
    // The largest excess names the cause when the excesses together account for at least
    // half of how late it was; else it began late for a reason its summary does not show.
    const std::pair<StragglerCause, TimeNs> candidates[] = {{StragglerCause::Compute, st.excess_compute},
                                                            {StragglerCause::InputPipeline, st.excess_input},
                                                            {StragglerCause::OtherRank, st.excess_held},
                                                            {StragglerCause::Communication, st.excess_transfer}};
    TimeNs explained = 0;
    std::pair<StragglerCause, TimeNs> best{StragglerCause::Unexplained, 0};
    for (const auto& c : candidates) {
      explained += std::max<TimeNs>(0, c.second);
      if (c.second > best.second) best = c;
    }
    st.cause = (best.second > 0 && 2 * explained >= st.late_by) ? best.first : StragglerCause::Unexplained;
  }

  void notes() {
    if (job_.unmatched_calls) {
      r_.notes.push_back(
          fmt::format("{} collective call(s) matched no other rank's (a profile that began or ended "
                      "mid-collective): counted as transfer, in no straggler.",
                      job_.unmatched_calls));
    }
    if (job_.mismatched_ops) {
      r_.notes.push_back(
          fmt::format("{} collective(s) whose ranks disagree on the operation: the ranks' "
                      "collectives may be numbered differently.",
                      job_.mismatched_ops));
    }
    const std::int64_t world = r_.world_size();
    std::vector<std::int64_t> missing;
    for (std::int64_t k = 0, i = 0; k < world && k < 1'000'000; ++k) {
      while (static_cast<std::size_t>(i) < r_.ranks.size() && r_.ranks[static_cast<std::size_t>(i)].rank < k) ++i;
      if (static_cast<std::size_t>(i) >= r_.ranks.size() || r_.ranks[static_cast<std::size_t>(i)].rank != k) {
        missing.push_back(k);
      }
    }
    if (!missing.empty()) {
      r_.notes.push_back(fmt::format("World size {}, {} rank(s) given: no trace of rank{} {}.", world, r_.ranks.size(),
                                     missing.size() > 1 ? "s" : "", rank_list(missing)));
    }
  }

  JobReport& r_;
  JobCollectives job_;
  std::vector<std::uint32_t> instance_of_;
  std::vector<TimeNs> wait_;
  std::vector<std::vector<std::int64_t>> instance_ranks_;
  std::vector<RankTimes> times_;
  std::vector<std::pair<std::size_t, std::size_t>> rank_calls_; // [first, last) in job_.calls
  std::vector<TimeNs> longest_wait_;
};

} // namespace

std::string_view to_string(StragglerCause c) {
  switch (c) {
    case StragglerCause::Compute: return "compute";
    case StragglerCause::InputPipeline: return "input pipeline";
    case StragglerCause::OtherRank: return "waiting for another rank";
    case StragglerCause::Communication: return "communication";
    case StragglerCause::Unexplained: return "began late";
  }
  return "unknown";
}

std::int64_t JobReport::world_size() const {
  std::int64_t w = static_cast<std::int64_t>(ranks.size());
  for (const RankSummary& s : ranks) {
    if (s.world_size != kNoValue) w = std::max(w, s.world_size);
  }
  return w;
}

JobReport analyze_job(std::vector<RankSummary> summaries, const JobReportOptions& options) {
  if (summaries.empty()) throw TraceError("no rank to analyse");
  for (const RankSummary& s : summaries) {
    if (s.rank == kNoValue || s.rank < 0) throw TraceError(s.trace_name + ": names no rank");
  }
  std::stable_sort(summaries.begin(), summaries.end(),
                   [](const RankSummary& a, const RankSummary& b) { return a.rank < b.rank; });
  for (std::size_t i = 1; i < summaries.size(); ++i) {
    if (summaries[i].rank == summaries[i - 1].rank) {
      throw TraceError(summaries[i - 1].trace_name + " and " + summaries[i].trace_name + " are both rank " +
                       std::to_string(summaries[i].rank) + "; a job has one trace per rank");
    }
  }
  JobReport r;
  r.options = options;
  r.ranks = std::move(summaries);
  hta_across_ranks(r);
  JobAnalysis(r).run();
  return r;
}

} // namespace dreamscope::analyzers
