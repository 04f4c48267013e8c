#include "dreamscope/whatif/writer_interference.h"

#include "median.h"

#include <dreamscope/storage/tracer_environment.h>

#include <algorithm>
#include <utility>

namespace dreamscope::whatif {

namespace {

// A spell's measure takes the spells this many on either side of it, and the stretches between
// them: about 200 ms at the writer's 10 ms, within which the machine mostly holds its state.
constexpr std::size_t kSpellsASide = 8;
// A gap this many times the thread's median gap, or longer than kLongestGap, is a wait (for data,
// a lock, a core) or a probe step's uncounted stretch, not the thread's pace.
constexpr double kGapOverMedian = 100;
constexpr TimeNs kLongestGap = 1'000'000;
// Sampled for the median gap: at most about this many gaps.
constexpr std::size_t kMedianSamples = 1 << 16;
// A spell's slowdown is taken as at most this: past it, a slow phase of the machine that began
// with the spell is the likelier cause than the writer.
constexpr double kMostSlowdown = 3;

struct Spell {
  TimeNs start, end;
};

// Each thread's spells, in time order, overlapping ones merged: one pass over the overhead rows.
std::vector<std::vector<Spell>> spells_by_track(const Trace& trace, StringId kind) {
  std::vector<std::vector<Spell>> by_track(trace.tracks().size());
  for (const OverheadRecord& o : trace.overheads()) {
    if (o.kind == kind && o.end > o.start && o.track < by_track.size()) by_track[o.track].push_back(Spell{o.start, o.end});
  }
  for (std::vector<Spell>& spells : by_track) {
    std::sort(spells.begin(), spells.end(), [](const Spell& a, const Spell& b) { return a.start < b.start; });
    std::vector<Spell> merged;
    for (const Spell& s : spells) {
      if (!merged.empty() && s.start <= merged.back().end) {
        merged.back().end = std::max(merged.back().end, s.end);
      } else {
        merged.push_back(s);
      }
    }
    spells = std::move(merged);
  }
  return by_track;
}

// Calls `f(from, to)` for each gap between two recorded range starts (or marks) of the thread, in
// time order; ranges filled into probe steps were not recorded and are passed over.
template <typename F>
void for_each_gap(const Trace& trace, TrackId track, F&& f) {
  const AnnotationTable& ann = trace.annotations();
  const AnnotationRange rows = trace.annotations_on(track);
  TimeNs previous = -1;
  for (AnnotationIndex r = rows.begin; r < rows.end; ++r) {
    if (ann.filled_from[r] != kNoValue) continue;
    const TimeNs t = ann.start[r];
    if (previous >= 0 && t >= previous) f(previous, t);
    previous = t;
  }
}

} // namespace

WriterInterference measure_writer_interference(const Trace& trace) {
  WriterInterference out;
  const std::optional<StringId> kind = trace.find_string(tracer_environment::kWriterBusy);
  if (!kind) return out;
  std::vector<double> measured;
  const std::vector<std::vector<Spell>> by_track = spells_by_track(trace, *kind);
  for (TrackId track{0}; track < trace.tracks().size(); ++track) {
    if (trace.tracks()[track].kind != TrackKind::CpuThread) continue;
    const std::vector<Spell>& spells = by_track[track];
    if (spells.empty()) continue;
    out.spells += static_cast<std::int64_t>(spells.size());
    const AnnotationRange rows = trace.annotations_on(track);
    const std::size_t every = std::max<std::size_t>(1, rows.size() / kMedianSamples);
    std::vector<double> sample;
    std::size_t n = 0;
    for_each_gap(trace, track, [&](TimeNs a, TimeNs b) {
      if (n++ % every == 0) sample.push_back(static_cast<double>(b - a));
    });
    const double median_gap = median_of(std::move(sample), -1);
    if (median_gap < 0) continue;
    const double longest = std::min(static_cast<double>(kLongestGap), std::max(1.0, kGapOverMedian * median_gap));
    // Per spell, the gaps inside it; per stretch before spell i (the last: after them all), the
    // gaps outside. Sums and counts.
    const std::size_t count = spells.size();
    std::vector<double> in_sum(count, 0), out_sum(count + 1, 0);
    std::vector<std::int64_t> in_n(count, 0), out_n(count + 1, 0);
    std::size_t next = 0; // the first spell that ends after the gap's start
    for_each_gap(trace, track, [&](TimeNs a, TimeNs b) {
      const double gap = static_cast<double>(b - a);
      if (gap > longest) return;
      while (next < count && spells[next].end <= a) ++next;
      if (next < count && spells[next].start <= a) {
        if (b <= spells[next].end) {
          in_sum[next] += gap;
          ++in_n[next];
        }
      } else if (next == count || b <= spells[next].start) {
        out_sum[next] += gap;
        ++out_n[next];
      }
      // Otherwise the gap straddles a spell's edge: partly in, partly out.
    });
    for (std::size_t i = 0; i < count; ++i) {
      const std::size_t lo = i >= kSpellsASide ? i - kSpellsASide : 0, hi = std::min(count, i + kSpellsASide + 1);
      double in = 0, outside = 0;
      std::int64_t in_count = 0, out_count = 0;
      for (std::size_t j = lo; j < hi; ++j) {
        in += in_sum[j];
        in_count += in_n[j];
      }
      for (std::size_t j = lo; j <= hi; ++j) {
        outside += out_sum[j];
        out_count += out_n[j];
      }
      if (in_count < kMinWriterGaps || out_count < kMinWriterGaps || outside <= 0) continue;
      const double slowdown = (in / static_cast<double>(in_count)) / (outside / static_cast<double>(out_count)) - 1;
      ++out.measured;
      measured.push_back(slowdown);
      if (slowdown > 0) {
        out.slowed.push_back(WriterSlowdown{.track = track, .start = spells[i].start, .end = spells[i].end,
                                            .slowdown = std::min(slowdown, kMostSlowdown)});
      }
    }
  }
  out.median_slowdown = median_of(std::move(measured), -1);
  return out;
}

} // namespace dreamscope::whatif
