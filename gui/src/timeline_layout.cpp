#include "timeline_layout.h"

#include <algorithm>
#include <map>

namespace dreamscope::gui {

TimelineLayout::TimelineLayout(const TraceDocument& doc) {
  const Trace& trace = doc.trace();
  const auto& tracks = trace.tracks();
  track_lanes_.resize(tracks.size());
  // Processes in trace order, each followed by the GPUs it drove, so a process's CPU side
  // sits right above its GPU side.
  std::map<ProcessId, std::vector<TrackId>> threads_of;
  std::map<DeviceId, std::vector<TrackId>> streams_of;
  for (TrackId t{0}; t < tracks.size(); ++t) {
    track_lanes_[t] = static_cast<int>(doc.lanes(t).lanes.size());
    // A thread that recorded nothing but ran (an intra-op pool, the autograd engine) is
    // shown by its CPU use: it competes for the cores the job's threads use.
    if (!doc.has_content(t)) continue;
    if (tracks[t].kind == TrackKind::CpuThread) threads_of[tracks[t].process].push_back(t);
    else streams_of[tracks[t].device].push_back(t);
  }
  auto by_id = [&](std::vector<TrackId>& v, bool threads) {
    std::stable_sort(v.begin(), v.end(), [&](TrackId a, TrackId b) {
      return threads ? tracks[a].tid < tracks[b].tid : tracks[a].stream < tracks[b].stream;
    });
  };
  auto add_devices_of = [&](auto matches) {
    for (auto& [device, streams] : streams_of) {
      const ProcessId owner = device < trace.devices().size() ? trace.devices()[device].process : kNoIndex;
      if (!matches(owner) || streams.empty()) continue;
      by_id(streams, false);
      groups_.push_back(TimelineGroup{doc.device_label(device), std::move(streams)});
      streams.clear();
    }
  };
  for (auto& [process, threads] : threads_of) {
    by_id(threads, true);
    groups_.push_back(TimelineGroup{doc.process_label(process), std::move(threads)});
    add_devices_of([&](ProcessId owner) { return owner == process; });
  }
  add_devices_of([](ProcessId) { return true; });
  relayout();
}

void TimelineLayout::set_collapsed(int group, bool collapsed) {
  groups_[group].collapsed = collapsed;
  relayout();
}

void TimelineLayout::relayout() {
  rows_.clear();
  track_row_.assign(track_lanes_.size(), -1);
  int y = 0;
  for (int g = 0; g < static_cast<int>(groups_.size()); ++g) {
    rows_.push_back(TimelineRow{TimelineRow::Kind::Group, g, TrackId{0}, y, kGroupHeight});
    y += kGroupHeight;
    if (groups_[g].collapsed) continue;
    for (TrackId t : groups_[g].tracks) {
      const int h = 2 * kTrackPadding + std::max(1, track_lanes_[t]) * kLaneHeight;
      track_row_[t] = static_cast<int>(rows_.size());
      rows_.push_back(TimelineRow{TimelineRow::Kind::Track, g, t, y, h});
      y += h;
    }
  }
  total_height_ = y;
}

int TimelineLayout::row_at(int y) const {
  auto it = std::upper_bound(rows_.begin(), rows_.end(), y, [](int v, const TimelineRow& r) { return v < r.y; });
  if (it == rows_.begin()) return -1;
  --it;
  return y < it->y + it->height ? static_cast<int>(it - rows_.begin()) : -1;
}

int TimelineLayout::lane_y(TrackId t, int lane) const {
  const int r = row_of_track(t);
  if (r < 0) return -1;
  return rows_[r].y + kTrackPadding + lane * kLaneHeight;
}

int TimelineLayout::lane_at(const TimelineRow& row, int y) {
  const int inner = y - row.y - kTrackPadding;
  if (inner < 0 || row.kind != TimelineRow::Kind::Track) return -1;
  const int lane = inner / kLaneHeight;
  return lane < (row.height - 2 * kTrackPadding) / kLaneHeight ? lane : -1;
}

} // namespace dreamscope::gui
