#include <dreamscope/storage/memory_reuse.h>

#include <cstdlib> // defines __GLIBC__ where it is glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace dreamscope {

void keep_freed_memory_for_reuse() noexcept {
#if defined(__GLIBC__)
  // Every block from the heap (no mmap'd blocks, which free() unmaps), and the heap's free
  // top never trimmed back to the kernel (-1: mallopt(3)'s "disables trimming completely").
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, -1);
#endif
}

} // namespace dreamscope
