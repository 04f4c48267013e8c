// How a dreamscope command process keeps the memory it frees for its own next allocations.
#pragma once

namespace dreamscope {

// Called first thing by the `dreamscope` command's main and by whatif_scaling_bench, which
// times its commands' growth (never by the tracer, which lives in the traced process, nor by
// the desktop app, which should give a closed trace's memory back): freed memory stays in the
// process for reuse instead of going back to the kernel. A command builds and drops vectors of
// hundreds of MB in turn (a what-if simulates the baseline, then each prediction);
// glibc serves blocks over 32 MB with mmap and unmaps them when freed, so every such vector
// was faulted in page by page again: 20 to 30 % of `whatif` on 5 M events. Peak memory is
// the same, since what is kept is what the next step asks for. A no-op off glibc.
void keep_freed_memory_for_reuse() noexcept;

} // namespace dreamscope
