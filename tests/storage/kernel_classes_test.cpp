// Which kernels are communication for dreamscope's own analyses (kernel_classes.h).
#include <dreamscope/storage/kernel_classes.h>

#include <gtest/gtest.h>

namespace dreamscope {
namespace {

TEST(KernelClasses, CommunicationKernelsOfEveryLibrary) {
  for (const char* name : {"ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
                           "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                           "void c10d::symmetric_memory::multimem_all_reduce_kernel<c10::BFloat16, 16, 8>(...)",
                           "rcclGenericKernel_AllReduce", "void nvshmemi_transfer_put_nbi_kernel(...)",
                           "hccl:allgather", "NCCLKERNEL_upper"}) {
    EXPECT_TRUE(is_communication_kernel(name)) << name;
  }
}

TEST(KernelClasses, ComputeAndCopiesAreNot) {
  for (const char* name : {"void at::native::vectorized_elementwise_kernel<4>(int)", "volta_sgemm_128x32_nt",
                           "Memcpy HtoD (Pageable -> Device)", "Cijk_Alik_Bljk_HHS_BH_MT128x128x32",
                           "hipLaunchKernel", "multi_tensor_apply_kernel"}) {
    EXPECT_FALSE(is_communication_kernel(name)) << name;
  }
}

} // namespace
} // namespace dreamscope
