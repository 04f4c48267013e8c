// Exporters: a Trace (measured or predicted) written in formats other tools open.
//
// - Chrome trace JSON (the Trace Event Format), openable in the Perfetto UI and in
//   chrome://tracing: processes and GPUs as processes, threads and streams as named
//   tracks, events as complete ("X") events with their ids and args, flows as s/f pairs.
//   Times are written as exact decimal µs (ns precision), with displayTimeUnit "ns".
//   dreamscope's Kineto importer reads the file back into the same events.
#pragma once

#include "dreamscope/storage/trace.h"

#include <filesystem>

namespace dreamscope {

// Writes `trace` to `path` (replacing it). Throws TraceError naming the file if it cannot.
void export_chrome(const Trace& trace, const std::filesystem::path& path);

} // namespace dreamscope
