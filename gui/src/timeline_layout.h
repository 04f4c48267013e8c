// The rows of the timeline: a header per process and per GPU, then a row per CPU thread
// or GPU stream, each as tall as its lanes. Collapsing a group hides its tracks.
#pragma once

#include "trace_document.h"

#include <QString>

#include <vector>

namespace dreamscope::gui {

struct TimelineGroup {
  QString label;
  std::vector<TrackId> tracks;
  bool collapsed = false;
};

struct TimelineRow {
  enum class Kind : std::uint8_t { Group, Track };
  Kind kind = Kind::Track;
  int group = 0;
  TrackId track{0};
  int y = 0;      // top, in content coordinates (0 = top of the first row)
  int height = 0;
};

class TimelineLayout {
 public:
  static constexpr int kGroupHeight = 22;
  static constexpr int kLaneHeight = 18;
  static constexpr int kTrackPadding = 3; // above and below a track's lanes

  TimelineLayout() = default;
  explicit TimelineLayout(const TraceDocument& doc);

  const std::vector<TimelineGroup>& groups() const { return groups_; }
  const std::vector<TimelineRow>& rows() const { return rows_; }
  int total_height() const { return total_height_; }

  void set_collapsed(int group, bool collapsed);
  bool collapsed(int group) const { return groups_[group].collapsed; }

  // Index into rows() of the row at content y, or -1.
  int row_at(int y) const;
  // Index into rows() of a track's row, or -1 when hidden.
  int row_of_track(TrackId t) const { return t < track_row_.size() ? track_row_[t] : -1; }
  // Top of a lane in content coordinates, or -1 when its track is hidden.
  int lane_y(TrackId t, int lane) const;
  // The lane at content y within a track row, or -1 on the padding.
  static int lane_at(const TimelineRow& row, int y);

 private:
  void relayout();

  std::vector<TimelineGroup> groups_;
  std::vector<int> track_lanes_;
  std::vector<TimelineRow> rows_;
  std::vector<int> track_row_;
  int total_height_ = 0;
};

} // namespace dreamscope::gui
