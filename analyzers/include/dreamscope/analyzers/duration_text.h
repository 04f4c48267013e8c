// duration_text: a duration in ns as people read it ("830 ns", "12.346 ms", "1.204 s"), the one
// definition that the reports (text, Markdown, HTML), the `dreamscope` commands and the GUI
// all print, so that one duration reads the same everywhere; and the GUI timeline's ruler
// labels, which take only the decimals their tick spacing needs.
#pragma once

#include "dreamscope/storage/trace.h"

#include <optional>
#include <string>

namespace dreamscope::analyzers {

struct DurationStyle {
  // Unset (the default): a duration of a table or a line of text: whole ns below 1 µs
  // ("830 ns", "-5 ns", "0 ns"), else three decimals in the largest of us, ms and s that
  // |ns| reaches ("999.950 us", "12.346 ms", "-1.204 s"). The unit is picked before
  // rounding, so 999'999'999 ns reads "1000.000 ms".
  //
  // Set: the label of a ruler tick for ticks `tick` ns apart: the unit is the largest that
  // max(|ns|, tick) reaches, with as many decimals as ticks `tick` apart need to read
  // differently, at most 6 ("1.5 ms" for ticks 0.5 ms apart, "3 ms" for 1 ms, "0 ns").
  std::optional<TimeNs> tick;
};

// `ns` / the unit as a double, correctly rounded to the decimals, an exact tie to even (as
// printf: 1'062'500 ns is "1.062 ms"). Units are ASCII ("us"). kNoValue is not special: a
// caller that may hold one says so itself.
std::string format_duration(TimeNs ns, const DurationStyle& style = {});

} // namespace dreamscope::analyzers
