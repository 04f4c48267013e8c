// The TensorBoard plugin's call trees: per thread, the host events nested by time, each with
// the runtime calls its external id names and the GPU ops those launched (internal).
#pragma once

#include "tensorboard/tensorboard_model.h"

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace dreamscope::analyzers::tb {

enum class NodeType : std::uint8_t { Root, Operator, Python, UserAnnotation, ProfilerStep, Module, Backward };

// A runtime index standing for the launch of the kernels no runtime call launched: the plugin
// hangs them on the root of every thread that has ProfilerSteps (its "dummy" runtime).
inline constexpr std::uint32_t kOrphanLaunch = kNoIndex;

struct Node {
  std::uint32_t host = kNoIndex; // into Model::host; kNoIndex for a root
  std::string_view name;
  TimeNs start = 0, end = 0;
  NodeType type = NodeType::Root;
  bool plain_operator = false; // listed in the operator view
  std::vector<std::uint32_t> children;
  std::vector<std::uint32_t> runtimes; // into Model::runtimes, or kOrphanLaunch
  TimeNs self_host = 0, device = 0;
  TimeNs self_device = 0;           // own runtime calls' GPU ops; a module's: its direct operators' device time
  TimeNs tc_self = 0, tc_total = 0; // tensor-core kernel time, own calls / with nested operators
  bool tc_eligible = false;
};

struct CallTrees {
  std::vector<Node> nodes;
  std::vector<std::uint32_t> roots;       // one per thread, in order of the thread's first host event
  std::vector<std::int64_t> root_threads; // the thread of each root
  std::uint32_t step_root = kNoIndex;     // the root of the (last) thread with ProfilerSteps
  std::deque<std::string> names;          // of nodes made here ("<module>.backward")
  // Per Model::device_ops entry: the node whose runtime call launched it (kNoIndex: none in a
  // tree), and whether that node was tensor-core eligible before its children made it so.
  std::vector<std::uint32_t> launcher;
  std::vector<char> launcher_tc_eligible;
};

CallTrees build_call_trees(const Model& model);

// With nn.Module scopes and forward-backward flows in the trace, the plugin moves each
// module's backward operators under a "<module>.backward" node in the main thread's tree
// (tensorboard_backward.cpp); build_call_trees calls it last.
void attach_backward_to_modules(const Model& model, CallTrees& trees);

inline constexpr std::string_view kBackwardRootPrefix = "autograd::engine::evaluate_function:";

// The runtime calls of a node and the device ops each launched.
const std::vector<std::uint32_t>& launched_by(const Model& model, std::uint32_t runtime);

} // namespace dreamscope::analyzers::tb
