// The TensorBoard plugin's test traces (tests/data/importers/kineto/tb_plugin, README there), read
// through the Kineto importer, for the conformance tests of the plugin's views.
#pragma once

#include <dreamscope/storage/importers.h>
#include <dreamscope/storage/trace.h>

#include <filesystem>
#include <string>

namespace dreamscope::analyzers {

// The plugin's µs, in our ns.
constexpr TimeNs us(std::int64_t v) { return v * 1000; }

// One upstream case's trace, by the test's name.
inline Trace fixture(const std::string& name) {
  return load_trace(std::filesystem::path(DREAMSCOPE_TEST_DATA_DIR) / "importers" / "kineto" / "tb_plugin" /
                    (name + ".json"));
}

} // namespace dreamscope::analyzers
