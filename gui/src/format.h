// Times and counts as the GUI shows them.
#pragma once

#include <dreamscope/storage/trace.h>

#include <QString>

#include <string_view>

namespace dreamscope::gui {

// "12.345 ms", "830 ns", "1.204 s": dreamscope/analyzers/duration_text.h's text, which the
// reports and the commands print too.
QString format_duration(TimeNs ns);
// A ruler label for a tick `step` apart: only as many decimals as the step needs (the same
// header's DurationStyle::tick).
QString format_ruler_time(TimeNs t, TimeNs step);
inline QString to_qstring(std::string_view s) { return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size())); }
// 1234567 -> "1 234 567"
QString format_count(std::uint64_t n);
// "1.23x", or "undefined" where a step of 0 ns leaves it so (NaN).
QString format_speedup(double speedup);

} // namespace dreamscope::gui
