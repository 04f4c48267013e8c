#include "dreamscope/storage/kernel_classes.h"

#include <algorithm>
#include <string>

namespace dreamscope {

namespace {

char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

} // namespace

bool is_communication_kernel(std::string_view name) {
  // Lower-cased once, then plain searches: this runs on every GPU operation of a trace.
  std::string lower(name.size(), '\0');
  std::transform(name.begin(), name.end(), lower.begin(), ascii_lower);
  // Substrings, not prefixes: demangled names start with "void " and a namespace.
  for (std::string_view library : {"nccl", "rccl", "nvshmem", "hccl", "multimem_all_reduce", "multimem_all_gather",
                                   "multimem_reduce_scatter", "multimem_one_shot", "multimem_two_shot"}) {
    if (lower.find(library) != std::string::npos) return true;
  }
  return false;
}

} // namespace dreamscope
