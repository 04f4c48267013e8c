#include "recording_pause.h"

#include "recorder.h"

#include <cstring>
#include <mutex>

namespace dreamscope::tracer {
namespace {

struct RecordingSlot {
  NvtxFunction* slot;
  NvtxFunction recording;
};

// Not members of Tracer: NVTX initializes its modules before or after the tracer starts, and
// a fork child inherits both the pauses and the emptied slots, which stay consistent.
struct Pauses {
  std::mutex mu;
  std::vector<RecordingSlot> slots;
  std::vector<PauseInterval> intervals;
  std::uint64_t version = 0;
  bool paused() const { return !intervals.empty() && intervals.back().end == PauseInterval::kStillPaused; }
};

Pauses& pauses() {
  static Pauses* p = new Pauses; // never destroyed: NVTX may call in during exit
  return *p;
}

// The slots are written while other threads may be calling through them: an aligned pointer
// store, as NVTX itself fills them at initialization.
void set_slots(Pauses& p, bool recording) {
  for (const RecordingSlot& s : p.slots) {
    __atomic_store_n(s.slot, recording ? s.recording : nullptr, __ATOMIC_RELEASE);
  }
}

} // namespace

void keep_recording_slot(NvtxFunction* slot, NvtxFunction recording) {
  Pauses& p = pauses();
  std::lock_guard lock(p.mu);
  p.slots.push_back({slot, recording});
  // A module initialized while paused starts paused.
  __atomic_store_n(slot, p.paused() ? nullptr : recording, __ATOMIC_RELEASE);
}

bool handle_control_mark(std::uint64_t at, std::uint16_t domain, const char* ascii_name) {
  if (!ascii_name) return false;
  const bool pause = std::strcmp(ascii_name, "pause") == 0;
  if (!pause && std::strcmp(ascii_name, "resume") != 0) return false;
  if (domains().domain_name(domain) != "dreamscope") return false; // before taking mu: no nesting
  Pauses& p = pauses();
  {
    std::lock_guard lock(p.mu);
    // A second pause or resume in a row changes nothing.
    if (pause == p.paused()) return true;
    if (pause) {
      p.intervals.push_back({at, PauseInterval::kStillPaused});
    } else {
      p.intervals.back().end = at;
    }
    ++p.version;
    set_slots(p, !pause);
  }
  // The pause waits for what came before it to be written: the writer then idles while the
  // program runs paused. The resume does not wait.
  tracer_drain_now(pause);
  return true;
}

std::mutex& pauses_mutex() { return pauses().mu; }

bool pauses_since(std::uint64_t& version, std::vector<PauseInterval>& out) {
  Pauses& p = pauses();
  std::lock_guard lock(p.mu);
  if (p.version == version) return false;
  version = p.version;
  out = p.intervals;
  return true;
}

} // namespace dreamscope::tracer
