// What a GPU kernel does, judged by its name, for dreamscope's own analyses and scenarios.
// One place for it: HTA's kernel-type regexes (analyzers/src/hta/hta.cpp, kept as HTA counts so
// that its numbers match) know only NCCL, `hip` and HCCL names, so B200's NVLS
// `multimem_all_reduce_kernel`, RCCL's `rccl*` and NVSHMEM's kernels count as computation
// there. docs/analyze.md says where the two differ.
#pragma once

#include <string_view>

namespace dreamscope {

// A collective or point-to-point communication kernel: NCCL (`ncclKernel_*`,
// `ncclDevKernel_*`), RCCL (`rccl*`), NVSHMEM (`nvshmem*`), HCCL, and the NVLink-SHARP
// multimem collectives PyTorch's symmetric memory launches (`multimem_all_reduce_kernel`,
// `multimem_all_gather`...). Case-insensitive.
bool is_communication_kernel(std::string_view name);

} // namespace dreamscope
