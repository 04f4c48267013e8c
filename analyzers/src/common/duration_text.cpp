// Durations as text (dreamscope/analyzers/duration_text.h).
#include "dreamscope/analyzers/duration_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string_view>

namespace dreamscope::analyzers {

namespace {

struct DurationUnit {
  double ns;
  std::string_view name;
};
constexpr DurationUnit kDurationUnits[] = {{1e9, "s"}, {1e6, "ms"}, {1e3, "us"}, {1, "ns"}};

// The largest unit that `magnitude` ns reaches; ns below 1 ns.
const DurationUnit& duration_unit(double magnitude) {
  for (const DurationUnit& u : kDurationUnits) {
    if (magnitude >= u.ns) return u;
  }
  return kDurationUnits[std::size(kDurationUnits) - 1];
}

} // namespace

std::string format_duration(TimeNs ns, const DurationStyle& style) {
  const double v = static_cast<double>(ns);
  if (!style.tick) {
    const DurationUnit& unit = duration_unit(std::abs(v));
    if (unit.ns == 1) return fmt::format("{} ns", ns);
    return fmt::format("{:.3f} {}", v / unit.ns, unit.name);
  }
  const TimeNs tick = *style.tick;
  const DurationUnit& unit = duration_unit(std::max(std::abs(v), static_cast<double>(tick)));
  // Enough decimals that neighbouring ticks read differently, and no more.
  const double ratio = unit.ns / static_cast<double>(std::max<TimeNs>(tick, 1));
  const int decimals = ratio <= 1.0 ? 0 : std::min(6, static_cast<int>(std::ceil(std::log10(ratio) - 1e-9)));
  return fmt::format("{:.{}f} {}", v / unit.ns, decimals, unit.name);
}

} // namespace dreamscope::analyzers
