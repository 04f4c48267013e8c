// Recording paused and resumed by the traced program (ds_tracing_pause / ds_tracing_resume in
// annotate.h: marks "pause" and "resume" of category 8 in the "dreamscope" domain).
//
// A pause empties every NVTX slot that records, in every module NVTX initialized, so that an
// annotation made while paused costs what it costs with no tool attached (a load and a test
// of the slot, inline in the program); the resume fills them again. The control marks come
// through nvtxDomainMarkEx, whose slot stays. A call that read its slot just before the pause
// emptied it still records: the writer drops what carries a time inside a pause, and ends the
// ranges open at a pause there (pauses() gives it the times).
#pragma once

#include <cstdint>
#include <limits>
#include <mutex>
#include <vector>

namespace dreamscope::tracer {

// A pause in the clock's ticks (clock.h); `end` is kStillPaused until the resume.
struct PauseInterval {
  static constexpr std::uint64_t kStillPaused = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t start;
  std::uint64_t end;
};

// An NVTX function slot (NvtxFunctionPointer*, nvtxTypes.h) and what it holds while recording.
using NvtxFunction = void (*)(void);
void keep_recording_slot(NvtxFunction* slot, NvtxFunction recording);

// The category of the control marks in the "dreamscope" domain (DS_CATEGORY_CONTROL).
inline constexpr std::uint32_t kControlCategory = 8;

// A mark of category kControlCategory (the caller checks it): named "pause" or "resume" in the
// "dreamscope" domain, the pause or the resume, done at `at` (ticks), and true; false for any
// other mark.
bool handle_control_mark(std::uint64_t at, std::uint16_t domain, const char* ascii_name);

// The pauses so far, in order, into `out` when they changed since `version` (which is then
// updated); false when they did not.
bool pauses_since(std::uint64_t& version, std::vector<PauseInterval>& out);

// Taken by fork's prepare handler with the tracer's other locks.
std::mutex& pauses_mutex();

} // namespace dreamscope::tracer
