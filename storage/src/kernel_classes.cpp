#include "dreamscope/kernel_classes.h"

#include <cctype>

namespace dreamscope {

namespace {

bool contains_nocase(std::string_view hay, std::string_view needle) {
  if (needle.size() > hay.size()) return false;
  for (std::size_t i = 0; i + needle.size() <= hay.size(); ++i) {
    std::size_t k = 0;
    while (k < needle.size() &&
           std::tolower(static_cast<unsigned char>(hay[i + k])) == static_cast<unsigned char>(needle[k])) {
      ++k;
    }
    if (k == needle.size()) return true;
  }
  return false;
}

} // namespace

bool is_communication_kernel(std::string_view name) {
  // Substrings, not prefixes: demangled names start with "void " and a namespace.
  for (std::string_view library : {"nccl", "rccl", "nvshmem", "hccl", "multimem_all_reduce", "multimem_all_gather",
                                   "multimem_reduce_scatter", "multimem_one_shot", "multimem_two_shot"}) {
    if (contains_nocase(name, library)) return true;
  }
  return false;
}

} // namespace dreamscope
