// The timeline: a row per CPU thread and GPU stream, grouped by process and GPU, events
// drawn on a shared time axis. Painting is level-of-detail (see paint()), so a frame costs
// about the same for ten events or ten million.
//
// Mouse: wheel zooms at the cursor, Shift+wheel scrolls rows, horizontal wheel pans,
// left-drag pans, right-drag (or Ctrl+left-drag, or a drag on the ruler) zooms to a range,
// click selects, double-click zooms to an event, click on a group header collapses it.
// Keys: + / W zoom in, - / S zoom out, Left / A and Right / D pan, F / Home fit all,
// Up / Down / PageUp / PageDown scroll rows, Esc clears the selection.
#pragma once

#include "timeline_layout.h"
#include "timescale.h"
#include "trace_document.h"

#include <QAbstractScrollArea>

#include <memory>
#include <optional>
#include <vector>

namespace dreamscope::gui {

class TimelineView : public QAbstractScrollArea {
  Q_OBJECT

 public:
  static constexpr int kLabelWidth = 210;
  static constexpr int kRulerHeight = 26;
  // Events narrower than this many pixels are folded with their neighbours into one block.
  static constexpr double kFoldPixels = 2.0;

  explicit TimelineView(QWidget* parent = nullptr);

  void set_document(std::shared_ptr<const TraceDocument> doc);
  const TraceDocument* document() const { return doc_.get(); }
  const TimelineLayout& layout() const { return layout_; }

  const TimeScale& scale() const { return scale_; }
  void set_scale(const TimeScale& s);
  // Width of the time area in pixels for a viewport `width` wide.
  static int time_area_width(int width) { return std::max(1, width - kLabelWidth); }
  void fit_all();
  // factor > 1 zooms in; anchor_x is in time-area pixels.
  void zoom(double factor, double anchor_x);
  void zoom_to(TimeNs from, TimeNs to);
  void pan(double dx);
  void toggle_group(int group);

  EventRef selection() const { return selection_; }
  // Selects `e` (an invalid ref clears); `reveal` scrolls and pans so that it is visible.
  void select(EventRef e, bool reveal = true);
  // One flag per string id; an empty vector ends the search highlighting.
  void set_matched_names(std::vector<bool> matched);

  struct Hit {
    EventRef event;           // the event under the point (nearest one in a folded block)
    std::size_t folded = 0;   // events in the folded block under the point, 0 if none
    int row = -1;             // index into layout().rows()
  };
  Hit hit_test(QPoint viewport_pos) const;
  // Centre of an event's visible part, in viewport coordinates; nullopt when not visible.
  std::optional<QPoint> event_position(EventRef e) const;

  // Paints the whole view (ruler, labels, events, selection, links) for a viewport of
  // `size`; the widget and the offscreen tests and benchmarks share it.
  void paint(QPainter& p, QSize size) const;

 signals:
  void selection_changed(dreamscope::gui::EventRef e);
  void scale_changed();

 protected:
  void paintEvent(QPaintEvent* e) override;
  void resizeEvent(QResizeEvent* e) override;
  void wheelEvent(QWheelEvent* e) override;
  void mousePressEvent(QMouseEvent* e) override;
  void mouseMoveEvent(QMouseEvent* e) override;
  void mouseReleaseEvent(QMouseEvent* e) override;
  void mouseDoubleClickEvent(QMouseEvent* e) override;
  void keyPressEvent(QKeyEvent* e) override;
  bool viewportEvent(QEvent* e) override;
  void scrollContentsBy(int dx, int dy) override;

 private:
  // A launch (API call -> GPU op) or a flow, drawn as an arrow from the selection.
  struct Link {
    TrackId from_track;
    int from_lane;
    TimeNs from_time;
    TrackId to_track;
    int to_lane;
    TimeNs to_time;
  };

  void update_scrollbar();
  void compute_links();
  // The lane a flow endpoint on `track` at `time` belongs to.
  int lane_at_time(TrackId track, TimeNs time) const;
  int time_width() const { return time_area_width(viewport()->width()); }
  int scroll_y() const;
  void paint_lane(QPainter& p, const Lane& lane, int y, TimeNs from, TimeNs to, int width) const;
  // The thread's CPU use per load window, as bars from the bottom of its row.
  void paint_cpu_load(QPainter& p, TrackId track, int y0, int height, TimeNs from, TimeNs to) const;
  void paint_ruler(QPainter& p, QSize size) const;
  void paint_links(QPainter& p, QSize size) const;
  void reveal(EventRef e);

  std::shared_ptr<const TraceDocument> doc_;
  TimelineLayout layout_;
  TimeScale scale_;
  bool fit_pending_ = false;
  EventRef selection_;
  std::vector<Link> links_;
  std::vector<bool> matched_names_;

  enum class Drag { None, Pending, Pan, Range };
  Drag drag_ = Drag::None;
  QPoint press_pos_;
  QPoint last_pos_;
  int range_from_x_ = 0;
  int range_to_x_ = 0;
};

} // namespace dreamscope::gui
