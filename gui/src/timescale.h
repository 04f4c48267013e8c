// The time <-> pixel mapping of the timeline: a value type, so that zooming and panning
// are pure functions that the tests check without a widget.
#pragma once

#include <dreamscope/storage/trace.h>

#include <algorithm>
#include <cmath>

namespace dreamscope::gui {

class TimeScale {
 public:
  // Below a picosecond per pixel nothing new becomes visible; above ~11 days per pixel
  // the double mapping of int64 nanoseconds starts to lose whole pixels.
  static constexpr double kMinNsPerPixel = 1e-3;
  static constexpr double kMaxNsPerPixel = 1e15;

  TimeScale() = default;
  TimeScale(TimeNs origin, double ns_per_pixel) : origin_(origin), ns_per_pixel_(clamp_scale(ns_per_pixel)) {}

  // The whole [begin, end) spans `width` pixels, with `margin` pixels free at each side.
  static TimeScale fit(TimeNs begin, TimeNs end, double width, double margin = 0) {
    const double usable = std::max(1.0, width - 2 * margin);
    const double span = static_cast<double>(std::max<TimeNs>(end - begin, 1));
    const double nspp = span / usable;
    return TimeScale(begin - static_cast<TimeNs>(std::llround(margin * clamp_scale(nspp))), nspp);
  }

  TimeNs origin() const { return origin_; }
  double ns_per_pixel() const { return ns_per_pixel_; }

  double x_of(TimeNs t) const { return static_cast<double>(t - origin_) / ns_per_pixel_; }
  TimeNs time_at(double x) const { return origin_ + static_cast<TimeNs>(std::llround(x * ns_per_pixel_)); }
  // Width in pixels of a duration.
  double width_of(TimeNs duration) const { return static_cast<double>(duration) / ns_per_pixel_; }
  TimeNs end_time(double width) const { return time_at(width); }

  // factor > 1 zooms in. The time under `anchor_x` stays under it.
  TimeScale zoomed(double factor, double anchor_x) const {
    const double anchor_time = static_cast<double>(origin_) + anchor_x * ns_per_pixel_;
    const double nspp = clamp_scale(ns_per_pixel_ / factor);
    return TimeScale(static_cast<TimeNs>(std::llround(anchor_time - anchor_x * nspp)), nspp);
  }
  // dx > 0 moves the content right, showing earlier times.
  TimeScale panned(double dx) const {
    return TimeScale(origin_ - static_cast<TimeNs>(std::llround(dx * ns_per_pixel_)), ns_per_pixel_);
  }

  bool operator==(const TimeScale&) const = default;

 private:
  static double clamp_scale(double nspp) {
    if (!(nspp > 0)) return kMinNsPerPixel; // also catches NaN
    return std::clamp(nspp, kMinNsPerPixel, kMaxNsPerPixel);
  }

  TimeNs origin_ = 0;
  double ns_per_pixel_ = 1.0;
};

} // namespace dreamscope::gui
