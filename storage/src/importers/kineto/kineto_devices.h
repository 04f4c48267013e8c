// The devices of a Kineto trace: the GPUs its events ran on (args.device, else the pid of
// the GPU row) joined with what deviceProperties says about each. The two number devices
// differently when the job saw a subset of the machine's GPUs (ROCm lists the visible
// device as id 0 while its kernels say device 2), so ids are matched first and the rest
// are paired in id order, which the import notes.
#pragma once

#include "dreamscope/storage/importers.h"
#include "dreamscope/storage/trace.h"

#include <cstdint>
#include <map>
#include <vector>

namespace dreamscope::kineto {

class DeviceTable {
 public:
  // The device index of the events' device `ordinal`, created when first seen.
  DeviceId device_of_events(TraceBuilder& builder, std::int64_t ordinal);
  // One deviceProperties entry (or computeProperties, PyTorch 1.8-1.9), in file order.
  void add_properties(std::int64_t id, const DeviceInfo& properties);
  // After the pass: fills the devices the events used with their properties, and adds the
  // listed devices that ran nothing (the rest of the machine), so none is left empty.
  void resolve(TraceBuilder& builder, ImportStats& stats);

  const std::map<std::int64_t, DeviceId>& used() const { return used_; }

 private:
  std::map<std::int64_t, DeviceId> used_; // ordinal in the events → device index
  std::vector<std::pair<std::int64_t, DeviceInfo>> listed_;
};

} // namespace dreamscope::kineto
