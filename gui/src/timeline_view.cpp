#include "timeline_view.h"

#include "format.h"

#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QScrollBar>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

namespace dreamscope::gui {

namespace {

const QColor kBackground(0xff, 0xff, 0xff);
const QColor kLabelBackground(0xf7, 0xf8, 0xfa);
const QColor kGroupBackground(0xe4, 0xe8, 0xee);
const QColor kRulerBackground(0xee, 0xf0, 0xf3);
const QColor kGrid(0xee, 0xf0, 0xf4);
const QColor kFold(0x8c, 0x97, 0xa8);
const QColor kDimmed(0xe3, 0xe3, 0xe3);
const QColor kSelection(0x10, 0x10, 0x10);
const QColor kLink(0xd3, 0x2f, 0x2f);
const QColor kRangeFill(0x33, 0x77, 0xdd, 0x40);
const QColor kCpuLoad(0x4c, 0xaf, 0x50, 0x50);

struct Columns {
  const std::vector<TimeNs>* start;
  const std::vector<TimeNs>* end;
  const std::vector<StringId>* name;
};

Columns columns_of(const Trace& t, EventTable table) {
  switch (table) {
    case EventTable::CudaApi: return {&t.cuda_api().start, &t.cuda_api().end, &t.cuda_api().name};
    case EventTable::GpuOp: return {&t.gpu_ops().start, &t.gpu_ops().end, &t.gpu_ops().name};
    case EventTable::Annotation: break;
  }
  return {&t.annotations().start, &t.annotations().end, &t.annotations().name};
}

// First k in [lo, n) whose event starts at or after `time`.
std::size_t first_starting_at(const Lane& lane, const std::vector<TimeNs>& start, std::size_t lo, TimeNs time) {
  std::size_t hi = lane.size();
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (start[lane.at(mid)] < time) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// A tick spacing of 1, 2 or 5 times a power of ten, at least `min_ns`.
TimeNs nice_step(double min_ns) {
  double p = 1;
  while (p * 10 <= min_ns) p *= 10;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (p * m >= min_ns) return static_cast<TimeNs>(p * m);
  }
  return static_cast<TimeNs>(p * 10);
}

} // namespace

TimelineView::TimelineView(QWidget* parent) : QAbstractScrollArea(parent) {
  setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setVerticalScrollBarPolicy(Qt::ScrollBarAsNeeded);
  setFocusPolicy(Qt::StrongFocus);
  viewport()->setMouseTracking(true);
  viewport()->setAttribute(Qt::WA_OpaquePaintEvent);
  setMinimumSize(400, 200);
}

void TimelineView::set_document(std::shared_ptr<const TraceDocument> doc) {
  doc_ = std::move(doc);
  layout_ = doc_ ? TimelineLayout(*doc_) : TimelineLayout();
  selection_ = {};
  links_.clear();
  matched_names_.clear();
  verticalScrollBar()->setValue(0);
  update_scrollbar();
  fit_all();
  // Before the first show the viewport has no real width yet; fit again once it has.
  fit_pending_ = !isVisible();
  emit selection_changed(selection_);
}

int TimelineView::scroll_y() const { return verticalScrollBar()->value(); }

void TimelineView::set_scale(const TimeScale& s) {
  if (s == scale_) return;
  scale_ = s;
  viewport()->update();
  emit scale_changed();
}

void TimelineView::fit_all() {
  if (!doc_) return;
  set_scale(TimeScale::fit(doc_->trace().begin_time(), doc_->trace().end_time(), time_width(), 8));
}

void TimelineView::zoom(double factor, double anchor_x) { set_scale(scale_.zoomed(factor, anchor_x)); }

void TimelineView::zoom_to(TimeNs from, TimeNs to) {
  if (to <= from) return;
  set_scale(TimeScale::fit(from, to, time_width()));
}

void TimelineView::pan(double dx) { set_scale(scale_.panned(dx)); }

void TimelineView::toggle_group(int group) {
  layout_.set_collapsed(group, !layout_.collapsed(group));
  update_scrollbar();
  viewport()->update();
}

void TimelineView::update_scrollbar() {
  const int visible = std::max(0, viewport()->height() - kRulerHeight);
  verticalScrollBar()->setRange(0, std::max(0, layout_.total_height() - visible));
  verticalScrollBar()->setPageStep(std::max(1, visible));
  verticalScrollBar()->setSingleStep(TimelineLayout::kLaneHeight);
}

void TimelineView::set_matched_names(std::vector<bool> matched) {
  matched_names_ = std::move(matched);
  viewport()->update();
}

void TimelineView::select(EventRef e, bool reveal_it) {
  if (e.valid() && !doc_) e = {};
  selection_ = e;
  compute_links();
  if (e.valid() && reveal_it) reveal(e);
  viewport()->update();
  emit selection_changed(e);
}

void TimelineView::reveal(EventRef e) {
  const TrackId track = doc_->track(e);
  if (layout_.row_of_track(track) < 0) {
    for (int g = 0; g < static_cast<int>(layout_.groups().size()); ++g) {
      const auto& tracks = layout_.groups()[g].tracks;
      if (layout_.collapsed(g) && std::find(tracks.begin(), tracks.end(), track) != tracks.end()) toggle_group(g);
    }
  }
  const TimeNs s = doc_->start(e), en = doc_->end(e);
  const int w = time_width();
  const double x0 = scale_.x_of(s), x1 = scale_.x_of(en);
  if (x1 - x0 > w) {
    const TimeNs margin = (en - s) / 20;
    zoom_to(s - margin, en + margin);
  } else if (x0 < 0 || x1 > w) {
    pan(w / 2.0 - (x0 + x1) / 2);
  }
  const int lane_top = layout_.lane_y(track, doc_->lane_of(e));
  const int visible = viewport()->height() - kRulerHeight;
  if (lane_top >= 0 && (lane_top < scroll_y() || lane_top + TimelineLayout::kLaneHeight > scroll_y() + visible)) {
    verticalScrollBar()->setValue(lane_top - visible / 3);
  }
}

void TimelineView::compute_links() {
  links_.clear();
  if (!selection_.valid()) return;
  const Trace& t = doc_->trace();
  const EventRef e = selection_;
  if (e.table == EventTable::CudaApi) {
    const std::int64_t corr = t.cuda_api().correlation[e.index];
    if (corr != kNoValue) {
      for (GpuOpIndex op : t.gpu_ops_with_correlation(corr)) {
        const EventRef k{EventTable::GpuOp, op};
        links_.push_back({doc_->track(e), doc_->lane_of(e), doc_->start(e), doc_->track(k), doc_->lane_of(k), doc_->start(k)});
      }
    }
  } else if (e.table == EventTable::GpuOp) {
    const std::int64_t corr = t.gpu_ops().correlation[e.index];
    if (corr != kNoValue) {
      if (auto api = t.cuda_api_with_correlation(corr)) {
        const EventRef a{EventTable::CudaApi, *api};
        links_.push_back({doc_->track(a), doc_->lane_of(a), doc_->start(a), doc_->track(e), doc_->lane_of(e), doc_->start(e)});
      }
    }
  }
  // Flows touching the selection (producer -> consumer, event record -> wait). Imported
  // traces also carry launch -> kernel flows, which would repeat the launch link.
  const TrackId track = doc_->track(e);
  const TimeNs s = doc_->start(e), en = doc_->end(e);
  auto lane_for = [&](TrackId tr, TimeNs time) { return tr == track ? doc_->lane_of(e) : lane_at_time(tr, time); };
  for (const FlowRecord& f : t.flows()) {
    const bool from_here = f.from_track == track && f.from_time >= s && f.from_time <= en;
    const bool to_here = f.to_track == track && f.to_time >= s && f.to_time <= en;
    if (!from_here && !to_here) continue;
    const Link link{f.from_track, lane_for(f.from_track, f.from_time), f.from_time,
                    f.to_track, lane_for(f.to_track, f.to_time), f.to_time};
    const bool repeated = std::any_of(links_.begin(), links_.end(), [&](const Link& l) {
      return l.from_track == link.from_track && l.to_track == link.to_track && l.from_lane == link.from_lane &&
             l.to_lane == link.to_lane && std::abs(l.to_time - link.to_time) <= 1000 &&
             std::abs(l.from_time - link.from_time) <= 1000;
    });
    if (!repeated) links_.push_back(link);
  }
}

int TimelineView::lane_at_time(TrackId track, TimeNs time) const {
  const Trace& t = doc_->trace();
  // A CUDA API call at that time is what a flow from a thread usually leaves from.
  const EventRange api = t.cuda_api_in(track, time, time + 1);
  for (auto i = api.begin; i < api.end; ++i) {
    if (t.cuda_api().start[i] <= time && time <= t.cuda_api().end[i]) return doc_->lane_of({EventTable::CudaApi, i});
  }
  const EventRange ops = t.gpu_ops_in(track, time, time + 1);
  if (!ops.empty()) return doc_->lanes(track).gpu_lane;
  if (auto a = t.innermost_annotation_at(track, time)) return t.annotations().depth[*a];
  return doc_->lanes(track).gpu_lane >= 0 ? doc_->lanes(track).gpu_lane : 0;
}

TimelineView::Hit TimelineView::hit_test(QPoint pos) const {
  Hit hit;
  if (!doc_ || pos.y() < kRulerHeight) return hit;
  const int cy = pos.y() - kRulerHeight + scroll_y();
  hit.row = layout_.row_at(cy);
  if (hit.row < 0 || pos.x() < kLabelWidth) return hit;
  const TimelineRow& row = layout_.rows()[hit.row];
  const int lane_index = TimelineLayout::lane_at(row, cy);
  if (row.kind != TimelineRow::Kind::Track || lane_index < 0) return hit;
  const TrackLanes& tl = doc_->lanes(row.track);
  if (lane_index >= static_cast<int>(tl.lanes.size())) return hit;
  const Lane& lane = tl.lanes[lane_index];
  const Columns c = columns_of(doc_->trace(), lane.table);
  const TimeNs t = scale_.time_at(pos.x() - kLabelWidth);
  const TimeNs tol = static_cast<TimeNs>(std::ceil(kFoldPixels * scale_.ns_per_pixel()));

  // Walk back from the last event starting before t + tol; events in a lane rarely overlap,
  // so the containing or nearest one is within a few steps.
  const std::size_t hi = first_starting_at(lane, *c.start, 0, t + tol + 1);
  TimeNs best_distance = std::numeric_limits<TimeNs>::max();
  for (std::size_t k = hi, steps = 0; k > 0 && steps < 64; --k, ++steps) {
    const std::uint32_t i = lane.at(k - 1);
    const TimeNs s = (*c.start)[i], en = (*c.end)[i];
    if (s < t - tol - lane.max_duration) break;
    const TimeNs distance = t < s ? s - t : (t >= en ? t - en : 0);
    if (distance <= tol && distance < best_distance) {
      best_distance = distance;
      hit.event = EventRef{lane.table, i};
      if (distance == 0) break;
    }
  }
  if (!hit.event.valid()) return hit;
  const TimeNs s = (*c.start)[hit.event.index], en = (*c.end)[hit.event.index];
  if (scale_.width_of(en - s) < kFoldPixels) {
    const std::size_t a = first_starting_at(lane, *c.start, 0, t - tol);
    const std::size_t b = first_starting_at(lane, *c.start, a, t + tol + 1);
    hit.folded = b - a > 1 ? b - a : 0;
  }
  return hit;
}

std::optional<QPoint> TimelineView::event_position(EventRef e) const {
  if (!doc_ || !e.valid()) return std::nullopt;
  const int lane_top = layout_.lane_y(doc_->track(e), doc_->lane_of(e));
  if (lane_top < 0) return std::nullopt;
  const int w = time_width();
  const double x0 = std::max(0.0, scale_.x_of(doc_->start(e)));
  const double x1 = std::min<double>(w, scale_.x_of(doc_->end(e)));
  if (x1 < x0) return std::nullopt;
  const int y = lane_top - scroll_y() + kRulerHeight + TimelineLayout::kLaneHeight / 2;
  if (y < kRulerHeight || y >= viewport()->height()) return std::nullopt;
  return QPoint(kLabelWidth + static_cast<int>((x0 + x1) / 2), y);
}

void TimelineView::paint_lane(QPainter& p, const Lane& lane, int y, TimeNs from, TimeNs to, int width) const {
  const Trace& trace = doc_->trace();
  const Columns c = columns_of(trace, lane.table);
  const auto& start = *c.start;
  const auto& end = *c.end;
  const auto& name = *c.name;
  const std::size_t n = lane.size();
  const bool searching = !matched_names_.empty();
  const int h = TimelineLayout::kLaneHeight - 2;
  const int top = y + 1;
  const QFontMetrics fm = p.fontMetrics();

  const auto* filled = lane.table == EventTable::Annotation ? &trace.annotations().filled_from : nullptr;
  auto color_of = [&](std::uint32_t i) {
    if (searching && !matched_names_[name[i]]) return kDimmed;
    return doc_->name_color(name[i]);
  };
  auto wide = [&](std::uint32_t i) { return scale_.width_of(end[i] - start[i]) >= kFoldPixels; };
  // Pixel coordinates clipped a little outside the area, so huge zooms cannot overflow int.
  auto px = [&](TimeNs t) { return std::clamp(scale_.x_of(t), -2.0, width + 2.0); };

  // Start at the first event that begins in view, then step back over the few that began
  // earlier and still reach into it. Searching from `from - max_duration` instead would
  // walk every event behind one long call (a 30 s cudaDeviceGetStreamPriorityRange).
  std::size_t k = first_starting_at(lane, start, 0, from);
  for (std::size_t back = k, steps = 0; back > 0 && steps < 64; --back, ++steps) {
    const std::uint32_t j = lane.at(back - 1);
    if (start[j] < from - lane.max_duration) break;
    if (end[j] > from) k = back - 1;
  }
  while (k < n) {
    const std::uint32_t i = lane.at(k);
    if (start[i] >= to) break;
    if (end[i] <= from) {
      ++k;
      continue;
    }
    if (wide(i)) {
      const double x0 = px(start[i]), x1 = px(end[i]);
      const QRect r(kLabelWidth + static_cast<int>(std::floor(x0)), top,
                    std::max(1, static_cast<int>(std::floor(x1) - std::floor(x0))), h);
      const QColor col = color_of(i);
      p.fillRect(r, col);
      // A range the tracer counted in a probe step and the merge copied in: its times are an
      // estimate, so it is hatched (docs/tracing.md, "Probe steps").
      if (filled && (*filled)[AnnotationIndex{i}] != kNoValue) p.fillRect(r, QBrush(col.darker(160), Qt::BDiagPattern));
      if (r.width() >= 4) {
        p.setPen(col.darker(140));
        p.drawRect(r.adjusted(0, 0, -1, -1));
      }
      if (r.width() >= 40) {
        const QRect visible = r.intersected(QRect(kLabelWidth, top, width, h)).adjusted(3, 0, -3, 0);
        const std::string_view s = trace.str(name[i]);
        const QString text = fm.elidedText(QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size())),
                                           Qt::ElideRight, visible.width());
        if (!text.isEmpty()) {
          p.setPen(Qt::black);
          p.drawText(visible, Qt::AlignVCenter | Qt::AlignLeft, text);
        }
      }
      ++k;
      continue;
    }
    // A run of narrow events: jump over everything that starts within kFoldPixels of the
    // run's end, by binary search, until a gap or a wide event ends the run. In a lane
    // without overlaps only the last event jumped over can reach past the jump target,
    // so the run's end is that event's end.
    std::size_t kk = k;
    TimeNs run_end = end[i];
    std::size_t count = 0;
    for (;;) {
      const TimeNs next = scale_.time_at(scale_.x_of(run_end) + kFoldPixels);
      std::size_t kn = first_starting_at(lane, start, kk + 1, next);
      if (kn - 1 > kk && wide(lane.at(kn - 1))) --kn;
      run_end = std::max(run_end, end[lane.at(kn - 1)]);
      count += kn - kk;
      kk = kn;
      if (kk >= n) break;
      const std::uint32_t j = lane.at(kk);
      if (start[j] >= to || wide(j) || scale_.x_of(start[j]) - scale_.x_of(run_end) >= kFoldPixels) break;
    }
    const int x0 = static_cast<int>(std::floor(px(start[i])));
    const int x1 = static_cast<int>(std::floor(px(run_end)));
    p.fillRect(QRect(kLabelWidth + x0, top, std::max(1, x1 - x0), h), count == 1 ? color_of(i) : kFold);
    k = kk;
  }
}

void TimelineView::paint_cpu_load(QPainter& p, TrackId track, int y0, int height, TimeNs from, TimeNs to) const {
  const auto& windows = doc_->cpu_load(track);
  // The first window that ends after `from`: windows are in time order and do not overlap.
  auto it = std::lower_bound(windows.begin(), windows.end(), from,
                             [](const CpuLoadWindow& w, TimeNs t) { return w.end <= t; });
  for (; it != windows.end() && it->start < to; ++it) {
    const double x0 = scale_.x_of(it->start), x1 = scale_.x_of(it->end);
    const int h = std::max(1, static_cast<int>(std::lround(it->utilization * (height - 2))));
    const int xi = static_cast<int>(std::floor(x0));
    p.fillRect(QRect(kLabelWidth + xi, y0 + height - 1 - h, std::max(1, static_cast<int>(std::ceil(x1)) - xi), h), kCpuLoad);
  }
}

void TimelineView::paint_ruler(QPainter& p, QSize size) const {
  const int w = time_area_width(size.width());
  p.fillRect(QRect(0, 0, size.width(), kRulerHeight), kRulerBackground);
  p.setPen(QColor(0xb0, 0xb6, 0xc0));
  p.drawLine(0, kRulerHeight - 1, size.width(), kRulerHeight - 1);
  if (!doc_) return;
  const TimeNs base = doc_->trace().begin_time();
  const TimeNs step = nice_step(scale_.ns_per_pixel() * 90);
  const TimeNs from = scale_.time_at(0);
  const TimeNs first = base + ((from - base) / step - 1) * step;
  p.setPen(QColor(0x40, 0x44, 0x4c));
  for (TimeNs t = first;; t += step) {
    const double x = scale_.x_of(t);
    if (x > w) break;
    if (x < -200) continue;
    const int xi = kLabelWidth + static_cast<int>(std::floor(x));
    // Minor ticks at fifths of a step.
    for (int m = 1; m < 5; ++m) {
      const int xm = kLabelWidth + static_cast<int>(std::floor(scale_.x_of(t + step * m / 5)));
      if (xm >= kLabelWidth) p.drawLine(xm, kRulerHeight - 5, xm, kRulerHeight - 1);
    }
    if (xi < kLabelWidth) continue;
    p.drawLine(xi, kRulerHeight - 10, xi, kRulerHeight - 1);
    p.drawText(xi + 3, 2, 120, kRulerHeight - 6, Qt::AlignLeft | Qt::AlignVCenter, format_ruler_time(t - base, step));
  }
  p.fillRect(QRect(0, 0, kLabelWidth, kRulerHeight), kRulerBackground);
  p.drawText(QRect(6, 0, kLabelWidth - 12, kRulerHeight - 1), Qt::AlignLeft | Qt::AlignVCenter,
             QStringLiteral("%1 / px").arg(format_duration(static_cast<TimeNs>(std::llround(scale_.ns_per_pixel())))));
}

void TimelineView::paint_links(QPainter& p, QSize size) const {
  if (links_.empty()) return;
  p.save();
  p.setClipRect(QRect(kLabelWidth, kRulerHeight, time_area_width(size.width()), size.height() - kRulerHeight));
  p.setRenderHint(QPainter::Antialiasing, true);
  const int sy = scroll_y() - kRulerHeight;
  for (const Link& l : links_) {
    const int y_from = layout_.lane_y(l.from_track, l.from_lane);
    const int y_to = layout_.lane_y(l.to_track, l.to_lane);
    if (y_from < 0 || y_to < 0) continue;
    const QPointF a(kLabelWidth + std::clamp(scale_.x_of(l.from_time), -1e5, 1e5),
                    (y_to > y_from ? y_from + TimelineLayout::kLaneHeight : y_from) - sy);
    const QPointF b(kLabelWidth + std::clamp(scale_.x_of(l.to_time), -1e5, 1e5),
                    (y_to > y_from ? y_to : y_to + TimelineLayout::kLaneHeight) - sy);
    p.setPen(QPen(kLink, 2));
    p.drawLine(a, b);
    const QPointF d = b - a;
    const double len = std::hypot(d.x(), d.y());
    if (len < 1) continue;
    const QPointF u = d / len, n(-u.y(), u.x());
    QPainterPath head;
    head.moveTo(b);
    head.lineTo(b - u * 9 + n * 4.5);
    head.lineTo(b - u * 9 - n * 4.5);
    head.closeSubpath();
    p.fillPath(head, kLink);
  }
  p.restore();
}

void TimelineView::paint(QPainter& p, QSize size) const {
  p.setRenderHint(QPainter::Antialiasing, false);
  p.setRenderHint(QPainter::TextAntialiasing, true);
  p.fillRect(QRect(QPoint(0, 0), size), kBackground);
  if (!doc_) {
    p.setPen(QColor(0x70, 0x70, 0x70));
    p.drawText(QRect(QPoint(0, 0), size), Qt::AlignCenter,
               tr("Open a trace with Ctrl+O, or drop a trace file here."));
    return;
  }
  const int w = time_area_width(size.width());
  const TimeNs from = scale_.time_at(-1);
  const TimeNs to = scale_.time_at(w + 1) + 1;
  const int sy = scroll_y();
  const int view_bottom = sy + size.height() - kRulerHeight;
  const QRect time_area(kLabelWidth, kRulerHeight, w, size.height() - kRulerHeight);

  p.fillRect(QRect(0, kRulerHeight, kLabelWidth, size.height()), kLabelBackground);
  // Grid lines at the ruler's ticks.
  {
    const TimeNs base = doc_->trace().begin_time();
    const TimeNs step = nice_step(scale_.ns_per_pixel() * 90);
    p.setPen(kGrid);
    for (TimeNs t = base + ((from - base) / step - 1) * step; scale_.x_of(t) <= w; t += step) {
      const double x = scale_.x_of(t);
      if (x >= 0) p.drawLine(kLabelWidth + static_cast<int>(x), kRulerHeight, kLabelWidth + static_cast<int>(x), size.height());
    }
  }

  const auto& rows = layout_.rows();
  QFont small = p.font();
  small.setPointSizeF(small.pointSizeF() * 0.85);
  QFont bold = p.font();
  bold.setBold(true);
  int first = std::max(0, layout_.row_at(sy));
  for (int r = first; r < static_cast<int>(rows.size()) && rows[r].y < view_bottom; ++r) {
    const TimelineRow& row = rows[r];
    const int y0 = row.y - sy + kRulerHeight;
    if (row.kind == TimelineRow::Kind::Group) {
      const TimelineGroup& g = layout_.groups()[row.group];
      p.fillRect(QRect(0, y0, size.width(), row.height), kGroupBackground);
      p.setPen(QColor(0x30, 0x34, 0x3c));
      p.setFont(bold);
      const QString arrow = g.collapsed ? QStringLiteral("\u25b8 ") : QStringLiteral("\u25be ");
      p.drawText(QRect(6, y0, size.width() - 12, row.height), Qt::AlignVCenter | Qt::AlignLeft,
                 QStringLiteral("%1%2   (%3 %4)").arg(arrow, g.label).arg(g.tracks.size())
                     .arg(g.tracks.size() == 1 ? tr("track") : tr("tracks")));
      p.setFont(QFont());
      continue;
    }
    const TrackLanes& tl = doc_->lanes(row.track);
    p.setPen(QColor(0xdd, 0xe0, 0xe5));
    p.drawLine(0, y0 + row.height - 1, size.width(), y0 + row.height - 1);
    p.setPen(QColor(0x20, 0x20, 0x20));
    p.drawText(QRect(10, y0 + TimelineLayout::kTrackPadding, kLabelWidth - 14, TimelineLayout::kLaneHeight),
               Qt::AlignVCenter | Qt::AlignLeft,
               p.fontMetrics().elidedText(doc_->track_label(row.track), Qt::ElideRight, kLabelWidth - 14));
    p.setFont(small);
    p.setPen(QColor(0x80, 0x84, 0x8c));
    for (int l = 1; l < static_cast<int>(tl.lanes.size()); ++l) {
      const int ly = y0 + TimelineLayout::kTrackPadding + l * TimelineLayout::kLaneHeight;
      if (ly + TimelineLayout::kLaneHeight < kRulerHeight || ly > size.height()) continue;
      p.drawText(QRect(22, ly, kLabelWidth - 26, TimelineLayout::kLaneHeight), Qt::AlignVCenter | Qt::AlignLeft,
                 tl.lanes[l].label);
    }
    p.setFont(QFont());
    p.setClipRect(time_area);
    // Behind the events: how busy the thread kept a core.
    if (!doc_->cpu_load(row.track).empty()) paint_cpu_load(p, row.track, y0, row.height, from, to);
    for (int l = 0; l < static_cast<int>(tl.lanes.size()); ++l) {
      const int ly = y0 + TimelineLayout::kTrackPadding + l * TimelineLayout::kLaneHeight;
      if (ly + TimelineLayout::kLaneHeight < kRulerHeight || ly > size.height()) continue;
      paint_lane(p, tl.lanes[l], ly, from, to, w);
    }
    p.setClipping(false);
  }

  if (selection_.valid()) {
    const int lane_top = layout_.lane_y(doc_->track(selection_), doc_->lane_of(selection_));
    if (lane_top >= 0) {
      const double x0 = std::clamp(scale_.x_of(doc_->start(selection_)), -3.0, w + 3.0);
      const double x1 = std::clamp(scale_.x_of(doc_->end(selection_)), -3.0, w + 3.0);
      const int xi = static_cast<int>(std::floor(x0));
      QRect r(kLabelWidth + xi - 1, lane_top - sy + kRulerHeight, std::max(3, static_cast<int>(std::floor(x1)) - xi + 2),
              TimelineLayout::kLaneHeight);
      p.setClipRect(time_area);
      p.setPen(QPen(kSelection, 2));
      p.setBrush(Qt::NoBrush);
      p.drawRect(r.adjusted(1, 1, -1, -1));
      p.setClipping(false);
    }
  }
  paint_links(p, size);
  if (drag_ == Drag::Range) {
    const int a = std::min(range_from_x_, range_to_x_), b = std::max(range_from_x_, range_to_x_);
    p.fillRect(QRect(a, kRulerHeight, b - a, size.height() - kRulerHeight), kRangeFill);
    p.setPen(QColor(0x20, 0x50, 0xa0));
    p.drawText(QRect(a, kRulerHeight + 4, std::max(b - a, 120), 20), Qt::AlignLeft | Qt::AlignTop,
               format_duration(scale_.time_at(b - kLabelWidth) - scale_.time_at(a - kLabelWidth)));
  }
  p.setPen(QColor(0xc8, 0xcc, 0xd2));
  p.drawLine(kLabelWidth - 1, kRulerHeight, kLabelWidth - 1, size.height());
  paint_ruler(p, size);
}

void TimelineView::paintEvent(QPaintEvent*) {
  QPainter p(viewport());
  paint(p, viewport()->size());
}

void TimelineView::resizeEvent(QResizeEvent* e) {
  QAbstractScrollArea::resizeEvent(e);
  update_scrollbar();
  if (fit_pending_ && isVisible()) {
    fit_pending_ = false;
    fit_all();
  }
}

void TimelineView::scrollContentsBy(int, int) { viewport()->update(); }

void TimelineView::wheelEvent(QWheelEvent* e) {
  const QPoint d = e->angleDelta();
  if (e->modifiers() & Qt::ShiftModifier) {
    // Some platforms turn Shift+wheel into a horizontal delta.
    const int dy = d.y() != 0 ? d.y() : d.x();
    verticalScrollBar()->setValue(scroll_y() - dy);
  } else if (std::abs(d.x()) > std::abs(d.y())) {
    pan(d.x() / 2.0);
  } else if (d.y() != 0) {
    zoom(std::pow(1.0015, d.y()), e->position().x() - kLabelWidth);
  }
  e->accept();
}

void TimelineView::mousePressEvent(QMouseEvent* e) {
  press_pos_ = last_pos_ = e->pos();
  const bool range = e->button() == Qt::RightButton ||
                     (e->button() == Qt::LeftButton &&
                      ((e->modifiers() & Qt::ControlModifier) || e->pos().y() < kRulerHeight));
  if (range && e->pos().x() >= kLabelWidth) {
    drag_ = Drag::Range;
    range_from_x_ = range_to_x_ = e->pos().x();
  } else if (e->button() == Qt::LeftButton) {
    drag_ = Drag::Pending;
  }
  e->accept();
}

void TimelineView::mouseMoveEvent(QMouseEvent* e) {
  if (drag_ == Drag::Pending && (e->pos() - press_pos_).manhattanLength() > 3) drag_ = Drag::Pan;
  if (drag_ == Drag::Pan) {
    const QPoint d = e->pos() - last_pos_;
    pan(d.x());
    verticalScrollBar()->setValue(scroll_y() - d.y());
  } else if (drag_ == Drag::Range) {
    range_to_x_ = std::clamp(e->pos().x(), kLabelWidth, viewport()->width());
    viewport()->update();
  }
  last_pos_ = e->pos();
}

void TimelineView::mouseReleaseEvent(QMouseEvent* e) {
  const Drag drag = drag_;
  drag_ = Drag::None;
  if (drag == Drag::Range) {
    const int a = std::min(range_from_x_, range_to_x_), b = std::max(range_from_x_, range_to_x_);
    if (b - a > 3) zoom_to(scale_.time_at(a - kLabelWidth), scale_.time_at(b - kLabelWidth));
    viewport()->update();
  } else if (drag == Drag::Pending) {
    const Hit hit = hit_test(e->pos());
    if (hit.row >= 0 && layout_.rows()[hit.row].kind == TimelineRow::Kind::Group) {
      toggle_group(layout_.rows()[hit.row].group);
    } else {
      select(hit.event, false);
    }
  }
  e->accept();
}

void TimelineView::mouseDoubleClickEvent(QMouseEvent* e) {
  const Hit hit = hit_test(e->pos());
  if (hit.event.valid()) {
    const TimeNs s = doc_->start(hit.event), en = doc_->end(hit.event);
    const TimeNs margin = std::max<TimeNs>((en - s) / 10, 1);
    select(hit.event, false);
    zoom_to(s - margin, en + margin);
  }
  e->accept();
}

void TimelineView::keyPressEvent(QKeyEvent* e) {
  const double w = time_width();
  switch (e->key()) {
    case Qt::Key_Plus:
    case Qt::Key_Equal:
    case Qt::Key_W: zoom(1.5, w / 2); break;
    case Qt::Key_Minus:
    case Qt::Key_S: zoom(1 / 1.5, w / 2); break;
    case Qt::Key_Left:
    case Qt::Key_A: pan(w / 8); break;
    case Qt::Key_Right:
    case Qt::Key_D: pan(-w / 8); break;
    case Qt::Key_Home:
    case Qt::Key_F: fit_all(); break;
    case Qt::Key_Up: verticalScrollBar()->setValue(scroll_y() - TimelineLayout::kLaneHeight * 2); break;
    case Qt::Key_Down: verticalScrollBar()->setValue(scroll_y() + TimelineLayout::kLaneHeight * 2); break;
    case Qt::Key_PageUp: verticalScrollBar()->setValue(scroll_y() - verticalScrollBar()->pageStep()); break;
    case Qt::Key_PageDown: verticalScrollBar()->setValue(scroll_y() + verticalScrollBar()->pageStep()); break;
    case Qt::Key_Escape: select({}, false); break;
    default: QAbstractScrollArea::keyPressEvent(e); return;
  }
  e->accept();
}

bool TimelineView::viewportEvent(QEvent* e) {
  if (e->type() == QEvent::ToolTip && doc_) {
    auto* help = static_cast<QHelpEvent*>(e);
    const Hit hit = hit_test(help->pos());
    QString text;
    if (hit.folded > 1) {
      text = tr("%1 events here; zoom in to see them").arg(format_count(hit.folded));
    } else if (hit.event.valid()) {
      const TimeNs s = doc_->start(hit.event), en = doc_->end(hit.event);
      text = QStringLiteral("<b>%1</b><br>%2 at %3<br>%4")
                 .arg(doc_->name_text(hit.event).toHtmlEscaped(), format_duration(en - s),
                      format_duration(s - doc_->trace().begin_time()),
                      doc_->track_label(doc_->track(hit.event)).toHtmlEscaped());
    } else if (hit.row >= 0 && layout_.rows()[hit.row].kind == TimelineRow::Kind::Group) {
      text = tr("Click to collapse or expand");
    }
    if (text.isEmpty()) QToolTip::hideText();
    else QToolTip::showText(help->globalPos(), text, viewport());
    return true;
  }
  return QAbstractScrollArea::viewportEvent(e);
}

} // namespace dreamscope::gui
