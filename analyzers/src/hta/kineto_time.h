// Kineto's times as the Python tools that read its JSON see them (internal): µs in float64.
// The importer keeps exact ns; analyses that must match HTA or the TensorBoard plugin number
// for number recover the doubles those tools computed with.
#pragma once

#include "dreamscope/storage/trace.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace dreamscope::analyzers::detail {

// The double nearest to ns / 1000 (ties to even), by search: the first guess or the double
// next to it either way, whichever is nearest. For any ns; us_as_parsed is the fast way.
inline double us_nearest_by_search(TimeNs ns) {
  const std::int64_t whole = ns / 1000;
  const std::int64_t rest = ns % 1000;
  const double guess = static_cast<double>(whole) + static_cast<double>(rest) / 1000.0;
  // A double has 53 significant bits and 1000 < 2^10, so x * 1000 is exact in the 64-bit
  // significand of long double, and so is its difference from ns.
  auto error = [&](double x) {
    const long double e = static_cast<long double>(x) * 1000.0L - static_cast<long double>(ns);
    return e < 0 ? -e : e;
  };
  double best = guess;
  for (double c : {std::nextafter(guess, -HUGE_VAL), std::nextafter(guess, HUGE_VAL)}) {
    const long double ec = error(c), eb = error(best);
    if (ec < eb) best = c;
    else if (ec == eb) {
      std::int64_t bits_c = 0, bits_b = 0;
      std::memcpy(&bits_c, &c, sizeof c);
      std::memcpy(&bits_b, &best, sizeof best);
      if ((bits_c & 1) == 0 && (bits_b & 1) != 0) best = c;
    }
  }
  return best;
}

// The double a JSON parser made of the µs text, i.e. the double nearest to ns / 1000 (ties to
// even), which `ns / 1000.0` is not once ns exceeds 2^53 (epoch timestamps in ns do):
// converting ns to double rounds first.
inline double us_as_parsed(TimeNs ns) {
  // Below 2^53 ns (104 days: times relative to a profiler's start, and the MTIA trace's
  // 3.6e15) ns is a double exactly, and IEEE division rounds the exact quotient once, to
  // nearest, ties to even: the answer, without the search (4 % of a job's analysis).
  constexpr TimeNs kExact = TimeNs{1} << 53;
  if (ns > -kExact && ns < kExact) return static_cast<double>(ns) / 1000.0;
  return us_nearest_by_search(ns);
}

// The nearest ns to a time in µs held in a double: exact where the double is a whole number
// of ns (every double from 2^49 µs on, such as epoch timestamps, is), else within half a ns.
inline TimeNs ns_of_us(double us) { return static_cast<TimeNs>(std::llroundl(static_cast<long double>(us) * 1000.0L)); }

} // namespace dreamscope::analyzers::detail
