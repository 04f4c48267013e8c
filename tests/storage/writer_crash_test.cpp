// A writer process killed with SIGKILL mid-write: the file opens, `complete` is 0, and every
// batch committed before the kill is there.
#include "test_traces.h"

#include <dreamscope/trace_file.h>

#include <gtest/gtest.h>

#include <csignal>
#include <sys/wait.h>

namespace dreamscope {
namespace {

TEST(WriterCrash, SigkillKeepsCommittedBatches) {
  test::ScratchDir dir;
  const auto path = dir / "killed.db";
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(fds[0]);
    TraceWriter w(path, TraceWriterOptions{.batch_rows = 1u << 30}); // commit only on flush()
    auto p = w.add_process(ProcessInfo{.pid = ::getpid(), .name = "victim"});
    TrackId t = w.add_track(TrackInfo{.kind = TrackKind::CpuThread, .process = p, .tid = ::getpid()});
    StringId n = w.intern("range");
    for (std::int64_t i = 0;; ++i) {
      w.add(AnnotationRecord{.track = t, .start = i * 10, .end = i * 10 + 5, .name = n, .domain = 0, .category = 0,
                             .payload = i, .external_id = kNoValue});
      if ((i + 1) % 1000 == 0) {
        w.flush();
        std::int64_t committed = i + 1;
        (void)!::write(fds[1], &committed, sizeof committed);
      }
    }
  }
  ::close(fds[1]);
  std::int64_t committed = 0, got = 0;
  // Wait until a few batches are committed, then kill in the middle of the next.
  while (committed < 20000 && ::read(fds[0], &got, sizeof got) == sizeof got) committed = got;
  ::kill(child, SIGKILL);
  while (::read(fds[0], &got, sizeof got) == sizeof got) committed = got; // batches that raced the kill
  ::close(fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));

  Trace t = read_trace(path);
  EXPECT_FALSE(t.complete());
  ASSERT_GE(static_cast<std::int64_t>(t.annotations().size()), committed);
  // What is there is exactly the events 0..n-1 in order: nothing torn, nothing repeated.
  for (std::size_t i = 0; i < t.annotations().size(); ++i) {
    ASSERT_EQ(t.annotations().payload[i], static_cast<std::int64_t>(i));
  }
}

} // namespace
} // namespace dreamscope
