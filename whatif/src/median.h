// The median of a sample, shared by the what-if engine and the cost probes' analyses.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace dreamscope::whatif {

// The middle value (the mean of the middle two for an even count); `if_empty` for none.
inline double median_of(std::vector<double> values, double if_empty) {
  if (values.empty()) return if_empty;
  const auto mid = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), mid, values.end());
  if (values.size() % 2 == 1) return *mid;
  return (*mid + *std::max_element(values.begin(), mid)) / 2;
}

} // namespace dreamscope::whatif
