#include "importers/kineto/kineto_devices.h"

#include <algorithm>
#include <set>
#include <string>

namespace dreamscope::kineto {

DeviceId DeviceTable::device_of_events(TraceBuilder& builder, std::int64_t ordinal) {
  auto [it, inserted] = used_.try_emplace(ordinal, DeviceId{0});
  if (inserted) it->second = builder.add_device(DeviceInfo{.ordinal = ordinal});
  return it->second;
}

void DeviceTable::add_properties(std::int64_t id, const DeviceInfo& properties) {
  for (auto& [listed_id, info] : listed_) {
    if (listed_id == id) {
      info = properties; // a repeated id: the last entry wins, as a JSON object key would
      return;
    }
  }
  listed_.emplace_back(id, properties);
}

void DeviceTable::resolve(TraceBuilder& builder, ImportStats& stats) {
  auto fill = [&](DeviceId index, std::int64_t ordinal, const DeviceInfo& props) {
    DeviceInfo& d = builder.device(index);
    const ProcessId process = d.process;
    d = props;
    d.ordinal = ordinal;
    d.process = process;
  };
  std::vector<bool> listed_used(listed_.size(), false);
  std::vector<std::int64_t> unmatched_events;
  for (const auto& [ordinal, index] : used_) {
    bool matched = false;
    for (std::size_t i = 0; i < listed_.size(); ++i) {
      if (listed_[i].first == ordinal) {
        fill(index, ordinal, listed_[i].second);
        listed_used[i] = true;
        matched = true;
        break;
      }
    }
    if (!matched) unmatched_events.push_back(ordinal);
  }
  // The rest in id order: the n-th unmatched device of the events is the n-th unmatched entry.
  std::vector<std::size_t> unmatched_listed;
  for (std::size_t i = 0; i < listed_.size(); ++i) {
    if (!listed_used[i]) unmatched_listed.push_back(i);
  }
  std::sort(unmatched_listed.begin(), unmatched_listed.end(),
            [&](std::size_t a, std::size_t b) { return listed_[a].first < listed_[b].first; });
  // Only when every listed device is unaccounted for: a trace that names devices 0..7 and
  // ran on 0 and 9 has no properties for 9, and borrowing gpu 1's would be a guess.
  const bool pair_by_order = !unmatched_events.empty() && unmatched_listed.size() == listed_.size();
  if (pair_by_order) {
    const std::size_t pairs = std::min(unmatched_events.size(), unmatched_listed.size());
    for (std::size_t k = 0; k < pairs; ++k) {
      const auto& [id, props] = listed_[unmatched_listed[k]];
      fill(used_.at(unmatched_events[k]), unmatched_events[k], props);
      listed_used[unmatched_listed[k]] = true;
      stats.note("kineto_device_id_mapped_by_order",
                 "events' device " + std::to_string(unmatched_events[k]) + " has deviceProperties id " +
                     std::to_string(id) + (props.name.empty() ? "" : " (" + props.name + ")"));
    }
  }
  // Listed devices that ran nothing: the machine's other GPUs, kept as the trace lists them.
  for (std::size_t i = 0; i < listed_.size(); ++i) {
    if (listed_used[i]) continue;
    DeviceInfo d = listed_[i].second;
    d.ordinal = listed_[i].first;
    used_.emplace(d.ordinal, builder.add_device(d));
  }
}

} // namespace dreamscope::kineto
