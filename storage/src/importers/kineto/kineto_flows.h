// Kineto's flows (`s`/`f` events: launch → kernel, forward → backward), collected during the
// pass and paired once every event's track is known. Besides well-formed pairs this knows
// the recording tools' quirks, which it counts as info rather than warnings: an ac2g finish
// on a runtime call that launched nothing (CUDA), a start on hipMalloc/hipFree that nothing
// finishes and a launch written as two finishes (ROCm).
#pragma once

#include "dreamscope/storage/importers.h"
#include "dreamscope/storage/trace.h"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace dreamscope::kineto {

struct PidTid {
  std::int64_t pid = 0, tid = 0;
  bool operator==(const PidTid&) const = default;
};
// In unsigned arithmetic: a file's pid may be any int64, and a signed product overflows
// (found by fuzz_kineto_import: pid 5555555555555555557).
struct PidTidHash {
  std::size_t operator()(const PidTid& k) const {
    return std::hash<std::uint64_t>{}(static_cast<std::uint64_t>(k.pid) * 1000003u ^ static_cast<std::uint64_t>(k.tid));
  }
};
// Kineto's (pid, tid) of a row → the track its events went to.
using OriginMap = std::unordered_map<PidTid, TrackId, PidTidHash>;

// A flow endpoint, paired with its other end after the pass.
struct FlowEnd {
  std::string_view cat; // from add() on, a view into the table's own copy
  std::int64_t id = 0;
  char phase = 's';
  std::int64_t pid = 0, tid = 0;
  TimeNs ts = 0;
  std::uint64_t event_number = 0;
};

class FlowTable {
 public:
  // Keeps its own copy of the category: the importer gives back the text it has read.
  void add(FlowEnd f) {
    auto it = categories_.find(f.cat);
    if (it == categories_.end()) it = categories_.emplace(f.cat).first;
    f.cat = *it;
    ends_.push_back(f);
  }
  // A flow id that is a string but not a number: both ends carry the same text.
  std::int64_t id_of_text(std::string_view text);
  // A runtime call that runs nothing on the GPU (memory allocation), where ROCm starts a flow.
  void note_call_without_gpu_work(std::int64_t pid, std::int64_t tid, TimeNs start);
  // Pairs by (cat, id), in time order when an id repeats (Kineto reuses fwdbwd ids across
  // steps), adds a FlowRecord per pair and counts the rest in `stats`.
  void pair(TraceBuilder& builder, ImportStats& stats, const OriginMap& origin);

 private:
  struct CallKey {
    std::int64_t pid, tid;
    TimeNs start;
    auto operator<=>(const CallKey&) const = default;
  };
  std::vector<FlowEnd> ends_;
  std::set<std::string, std::less<>> categories_; // the ends' categories: nodes never move
  std::map<std::string, std::int64_t, std::less<>> text_ids_;
  std::set<CallKey> calls_without_gpu_work_;
};

} // namespace dreamscope::kineto
