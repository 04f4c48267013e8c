// A trace opened in the GUI: the immutable Trace plus what the views derive from it once,
// off the GUI thread (lanes of non-overlapping events per track, name colours, kernel
// statistics). Shared read-only between views through shared_ptr<const TraceDocument>.
#pragma once

#include <dreamscope/storage/trace.h>

#include <QColor>
#include <QString>

#include <filesystem>
#include <functional>
#include <memory>
#include <vector>

namespace dreamscope::gui {

// One event of a Trace: which table (the storage's EventTable) and which row of it (a plain
// row number: views handle the three tables alike, and make it a typed row where they use one).
struct EventRef {
  EventTable table = EventTable::Annotation;
  std::uint32_t index = kNoIndex;

  bool valid() const { return index != kNoIndex; }
  bool operator==(const EventRef&) const = default;
};

// A row of drawn events on a track whose events do not overlap one another, so that the
// painter can fold runs of sub-pixel events by binary search (Tracy's approach): one lane
// per annotation depth, per CUDA API kind, and one for GPU operations.
struct Lane {
  EventTable table = EventTable::Annotation;
  EventRange<std::uint32_t> range; // the rows (of `table`), when they are a contiguous range of it
  std::vector<std::uint32_t> rows; // otherwise, the rows in start order
  TimeNs max_duration = 0;
  QString label;                 // "depth 2", "runtime", "kernels"

  std::size_t size() const { return rows.empty() ? range.size() : rows.size(); }
  std::uint32_t at(std::size_t k) const { return rows.empty() ? range.begin + static_cast<std::uint32_t>(k) : rows[k]; }
};

struct TrackLanes {
  std::vector<Lane> lanes;
  int annotation_lanes = 0;
  int api_lane = -1;        // first CUDA API lane
  bool api_split = false;   // runtime and driver calls in two lanes
  int gpu_lane = -1;
  std::size_t events = 0;
};

// What a thread ran in one load window of the tracer (a thread_load row): the share of the
// window it was on a core. Threads that record no event (an OpenMP pool, PyTorch's autograd
// thread) show only this.
struct CpuLoadWindow {
  TimeNs start = 0;
  TimeNs end = 0;
  double utilization = 0; // 0..1
};

struct KernelStats {
  StringId name = 0;
  std::uint64_t count = 0;
  TimeNs total = 0;
  TimeNs min = 0;
  TimeNs max = 0;
};

class TraceDocument {
 public:
  // `progress` gets 0..1 while the lanes are built.
  explicit TraceDocument(Trace trace, QString path = {}, const std::function<void(double)>& progress = {});

  const Trace& trace() const { return trace_; }
  const QString& path() const { return path_; }
  const TrackLanes& lanes(TrackId t) const { return lanes_[t]; }
  // The thread's CPU use per load window, in time order (empty: none recorded, or a stream).
  const std::vector<CpuLoadWindow>& cpu_load(TrackId t) const { return cpu_load_[t]; }
  // Whether the timeline has anything to draw on the track: events, or CPU time.
  bool has_content(TrackId t) const { return lanes_[t].events > 0 || !cpu_load_[t].empty(); }
  const std::vector<KernelStats>& kernel_stats() const { return kernel_stats_; }
  TimeNs total_gpu_time() const { return total_gpu_time_; }

  QColor name_color(StringId name) const { return QColor::fromRgb(name_colors_[name]); }

  TimeNs start(EventRef e) const;
  TimeNs end(EventRef e) const;
  StringId name(EventRef e) const;
  TrackId track(EventRef e) const;
  QString name_text(EventRef e) const;
  // The lane of `e` on its track.
  int lane_of(EventRef e) const;

  // "MainThread (tid 100)", "stream 7"
  QString track_label(TrackId t) const;
  // "python (pid 100)", "GPU 0: NVIDIA H100"
  QString process_label(ProcessId process) const;
  QString device_label(DeviceId device) const;

 private:
  Trace trace_;
  QString path_;
  std::vector<TrackLanes> lanes_;
  std::vector<std::vector<CpuLoadWindow>> cpu_load_;
  std::vector<QRgb> name_colors_;
  std::vector<KernelStats> kernel_stats_;
  TimeNs total_gpu_time_ = 0;
};

// What opening a file produced: a document, or the reason there is none.
struct LoadOutcome {
  std::shared_ptr<const TraceDocument> document;
  QString error;
  double seconds = 0;
};

// Reads a trace file (and, when storage has importers, any format they read), or a
// distributed job: several files, a folder of them or a glob, as one trace
// (docs/multi-rank.md). Never throws: a failure becomes LoadOutcome::error, which names the
// file and the problem. `progress` gets 0..1 and may be called from the calling thread only.
LoadOutcome load_document(const std::vector<std::string>& inputs, const std::function<void(double)>& progress = {});

// Every event whose name matches: at most `limit` of them, earliest first; `total` gets
// how many matched. `matched_names` (if given) gets one flag per string id.
std::vector<EventRef> find_events(const TraceDocument& doc, const std::vector<bool>& matched_names,
                                  std::size_t limit, std::size_t* total);

} // namespace dreamscope::gui
