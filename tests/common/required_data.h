// Tests that read data from outside the repository (../shared/data, a Python with torch):
// where it is missing they skip, with the skip shown, on a developer's machine; under CI
// (CI=true, as .ci/run sets it) a missing input is a failure, so that a suite cannot pass by
// not running.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string_view>

namespace dreamscope::test {

inline bool running_in_ci() {
  const char* ci = std::getenv("CI");
  return ci && std::string_view(ci) == "true";
}

} // namespace dreamscope::test

// Ends the test when `required` does not exist: a skip, or under CI a failure naming it.
#define DREAMSCOPE_REQUIRE_DATA(required)                                                                  \
  do {                                                                                                 \
    const std::filesystem::path required_data_path_ = (required);                                          \
    if (!std::filesystem::exists(required_data_path_)) {                                               \
      if (::dreamscope::test::running_in_ci()) FAIL() << "required test data missing: " << required_data_path_; \
      GTEST_SKIP() << "test data not here: " << required_data_path_;                                   \
    }                                                                                                  \
  } while (0)
