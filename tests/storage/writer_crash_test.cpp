// A writer process killed with SIGKILL mid-write: the file opens, `complete` is 0, and every
// batch committed before the kill is there.
#include "test_traces.h"

#include <dreamscope/storage/trace_file.h>

#include <gtest/gtest.h>

namespace dreamscope {
namespace {

TEST(WriterCrash, SigkillKeepsCommittedBatches) {
  test::ScratchDir dir;
  const auto path = dir / "killed.db";
  // Commits only on flush(): what survives is exactly what the writer had flushed.
  const std::int64_t committed = test::flushed_before_sigkill(
      [&] { return std::make_unique<TraceWriter>(path, TraceWriterOptions{.batch_rows = 1u << 30}); });
  Trace t = read_trace(path);
  EXPECT_FALSE(t.complete());
  ASSERT_GE(static_cast<std::int64_t>(t.annotations().size()), committed);
  test::expect_numbered_annotations(t);
}

} // namespace
} // namespace dreamscope
