// Shared by the commands: human-readable times, and writing a report to stdout or a file.
#pragma once

#include <dreamscope/trace.h>

#include <string>

namespace dreamscope::cli {

// "12.345 ms", "830 ns", "1.204 s": three significant decimals in the largest fitting unit.
std::string format_duration(TimeNs ns);

// Writes `text` to `path`, or to stdout when path is empty or "-". Throws TraceError
// naming the file when it cannot be written.
void write_output(const std::string& path, const std::string& text);

} // namespace dreamscope::cli
