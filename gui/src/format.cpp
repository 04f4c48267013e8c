#include "format.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace dreamscope::gui {

namespace {
struct Unit {
  double ns;
  const char* name;
};
constexpr Unit kUnits[] = {{1e9, "s"}, {1e6, "ms"}, {1e3, "us"}, {1, "ns"}};
} // namespace

QString format_duration(TimeNs ns) {
  const double a = std::abs(static_cast<double>(ns));
  for (const Unit& u : kUnits) {
    if (a >= u.ns && u.ns > 1) return QStringLiteral("%1 %2").arg(static_cast<double>(ns) / u.ns, 0, 'f', 3).arg(u.name);
  }
  return QStringLiteral("%1 ns").arg(ns);
}

QString format_ruler_time(TimeNs t, TimeNs step) {
  const double magnitude = std::max(std::abs(static_cast<double>(t)), static_cast<double>(step));
  const Unit* unit = &kUnits[3];
  for (const Unit& u : kUnits) {
    if (magnitude >= u.ns) {
      unit = &u;
      break;
    }
  }
  // Enough decimals that neighbouring ticks read differently, and no more.
  const double ratio = unit->ns / static_cast<double>(std::max<TimeNs>(step, 1));
  const int decimals = ratio <= 1.0 ? 0 : std::min(6, static_cast<int>(std::ceil(std::log10(ratio) - 1e-9)));
  return QStringLiteral("%1 %2").arg(static_cast<double>(t) / unit->ns, 0, 'f', decimals).arg(unit->name);
}

QString format_speedup(double speedup) {
  return std::isfinite(speedup) ? QString::number(speedup, 'f', 2) + "x" : QStringLiteral("undefined");
}

QString format_count(std::uint64_t n) {
  QString digits = QString::number(n);
  QString out;
  for (qsizetype i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += QChar(0x2009); // thin space
    out += digits[i];
  }
  return out;
}

} // namespace dreamscope::gui
