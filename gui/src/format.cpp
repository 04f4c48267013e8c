#include "format.h"

#include <dreamscope/analyzers/duration_text.h>

#include <cmath>

namespace dreamscope::gui {

QString format_duration(TimeNs ns) { return QString::fromStdString(analyzers::format_duration(ns)); }

QString format_ruler_time(TimeNs t, TimeNs step) {
  return QString::fromStdString(analyzers::format_duration(t, {.tick = step}));
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
