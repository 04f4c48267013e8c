// Every item model under QAbstractItemModelTester, driven through the changes the GUI
// makes to it.
#include "gui_test_support.h"
#include "models/details_model.h"
#include "models/kernel_table_model.h"
#include "models/search_model.h"

#include <QAbstractItemModelTester>
#include <QSortFilterProxyModel>

#include <gtest/gtest.h>

namespace dreamscope::gui {
namespace {

using test::app;
using test::find_named;
using test::make_step_document;

TEST(DetailsModel, ShowsAKernelWithItsLaunchAndEnclosingAnnotations) {
  app();
  auto doc = make_step_document();
  DetailsModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  EXPECT_EQ(model.rowCount(), 0);

  const EventRef gemm = find_named(*doc, EventTable::GpuOp, "gemm_kernel");
  model.set_event(doc, gemm);
  auto value = [&](const char* property) {
    const int row = model.row_of(QString::fromUtf8(property));
    return row < 0 ? QStringLiteral("<missing>") : model.index(row, DetailsModel::Value).data().toString();
  };
  EXPECT_EQ(value("name"), QStringLiteral("gemm_kernel"));
  EXPECT_EQ(value("duration"), QStringLiteral("25.000 us"));
  EXPECT_EQ(value("correlation id"), QStringLiteral("1"));
  EXPECT_EQ(value("grid"), QStringLiteral("64 x 1 x 1"));
  EXPECT_EQ(value("block"), QStringLiteral("256 x 1 x 1"));
  EXPECT_EQ(value("registers per thread"), QStringLiteral("32"));
  EXPECT_EQ(value("launch latency"), QStringLiteral("10.000 us"));
  EXPECT_TRUE(value("stream").contains(QStringLiteral("stream 7")));

  const EventRef launch = model.counterpart();
  ASSERT_TRUE(launch.valid());
  EXPECT_EQ(launch.table, EventTable::CudaApi);
  EXPECT_EQ(doc->start(launch), 10000);
  EXPECT_EQ(model.link(model.row_of(QStringLiteral("launched by"))), launch);

  // The launch sits inside forward, inside step: both listed, innermost first.
  const int enclosed = model.row_of(QStringLiteral("enclosed by"));
  ASSERT_GE(enclosed, 0);
  EXPECT_EQ(model.index(enclosed, DetailsModel::Value).data().toString(), QStringLiteral("forward"));
  EXPECT_EQ(model.index(enclosed + 1, DetailsModel::Value).data().toString(), QStringLiteral("step"));
  EXPECT_EQ(model.link(enclosed), find_named(*doc, EventTable::Annotation, "forward"));

  model.set_event(doc, launch);
  EXPECT_EQ(model.counterpart(), gemm);
  EXPECT_EQ(value("kind"), QStringLiteral("CUDA runtime API"));
  model.set_event(nullptr, launch);
  EXPECT_EQ(model.rowCount(), 0);
}

// A range a probe step counted, filled in at merge from a recorded step: the details say it was not
// recorded and where it came from; a recorded one says nothing of the kind.
TEST(DetailsModel, SaysARangeFilledIntoAProbeStepWasNotRecorded) {
  app();
  TraceBuilder b;
  b.set_source(TraceSource::Tracer);
  const TrackId main = b.thread_track(b.add_process(ProcessInfo{.pid = 100, .name = "train"}), 100, "MainThread");
  const StringId nvtx = b.intern("nvtx"), layer = b.intern("layer");
  b.add(AnnotationRecord{.track = main, .start = 1000, .end = 2000, .name = b.intern("step"), .domain = nvtx});
  b.add(AnnotationRecord{.track = main, .start = 1100, .end = 1200, .name = layer, .domain = nvtx});
  b.add(AnnotationRecord{.track = main, .start = 2000, .end = 2900, .name = b.intern("step"), .domain = nvtx});
  b.add(AnnotationRecord{.track = main, .start = 2090, .end = 2180, .name = layer, .domain = nvtx, .filled_from = 1000});
  auto doc = std::make_shared<const TraceDocument>(std::move(b).build(), QStringLiteral("probe"));
  DetailsModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  const auto& ann = doc->trace().annotations();
  for (AnnotationIndex i{0}; i < ann.size(); ++i) {
    if (ann.name[i] != layer) continue;
    model.set_event(doc, EventRef{EventTable::Annotation, static_cast<std::uint32_t>(i)});
    const int row = model.row_of(QStringLiteral("recorded"));
    if (ann.filled_from[i] == kNoValue) {
      EXPECT_LT(row, 0) << "a recorded range";
    } else {
      ASSERT_GE(row, 0);
      const QString says = model.index(row, DetailsModel::Value).data().toString();
      EXPECT_TRUE(says.startsWith(QStringLiteral("no: counted in a probe step"))) << says.toStdString();
      EXPECT_TRUE(says.contains(QStringLiteral("step at 0 ns"))) << "the recorded step starts the trace: " << says.toStdString();
    }
  }
}

TEST(SearchResultsModel, ListsMatchesEarliestFirst) {
  app();
  auto doc = make_step_document();
  SearchResultsModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  std::vector<bool> matched(doc->trace().strings().size(), false);
  matched[*doc->trace().find_string("relu_kernel")] = true;
  matched[*doc->trace().find_string("gemm_kernel")] = true;
  matched[*doc->trace().find_string("forward")] = true;
  std::size_t total = 0;
  std::vector<EventRef> found = find_events(*doc, matched, SearchResultsModel::kMaxRows, &total);
  model.set_results(doc, std::move(found), total);
  ASSERT_EQ(model.rowCount(), 3);
  EXPECT_EQ(model.total_matches(), 3u);
  EXPECT_EQ(model.index(0, SearchResultsModel::Name).data().toString(), QStringLiteral("forward"));
  EXPECT_EQ(model.index(1, SearchResultsModel::Name).data().toString(), QStringLiteral("gemm_kernel"));
  EXPECT_EQ(model.index(2, SearchResultsModel::Name).data().toString(), QStringLiteral("relu_kernel"));
  EXPECT_EQ(model.index(1, SearchResultsModel::Start).data().toString(), QStringLiteral("19.000 us"));

  // A limit keeps the earliest matches and still counts all of them.
  found = find_events(*doc, matched, 2, &total);
  model.set_results(doc, std::move(found), total);
  ASSERT_EQ(model.rowCount(), 2);
  EXPECT_EQ(model.total_matches(), 3u);
  EXPECT_EQ(model.index(1, SearchResultsModel::Name).data().toString(), QStringLiteral("gemm_kernel"));
  model.clear();
  EXPECT_EQ(model.rowCount(), 0);
}

TEST(KernelTableModel, AggregatesPerKernelAndSortsNumerically) {
  app();
  TraceBuilder b;
  const auto dev = b.add_device(DeviceInfo{.name = "g"});
  const TrackId s = b.stream_track(dev, 1);
  const StringId big = b.intern("big"), small = b.intern("small");
  // "small" runs 9 times for 10 ns, "big" twice for 100 and 300 ns.
  for (int i = 0; i < 9; ++i) b.add(GpuOpRecord{.track = s, .start = i * 1000, .end = i * 1000 + 10, .name = small});
  b.add(GpuOpRecord{.track = s, .start = 20000, .end = 20100, .name = big});
  b.add(GpuOpRecord{.track = s, .start = 30000, .end = 30300, .name = big});
  auto doc = std::make_shared<const TraceDocument>(std::move(b).build());

  KernelTableModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  QSortFilterProxyModel proxy;
  proxy.setSourceModel(&model);
  proxy.setSortRole(KernelTableModel::SortRole);
  proxy.setFilterKeyColumn(KernelTableModel::Name);
  QAbstractItemModelTester proxy_tester(&proxy, QAbstractItemModelTester::FailureReportingMode::Fatal);
  model.set_document(doc);
  ASSERT_EQ(model.rowCount(), 2);
  EXPECT_EQ(model.index(0, KernelTableModel::Name).data().toString(), QStringLiteral("big"));
  EXPECT_EQ(model.index(0, KernelTableModel::Total).data(KernelTableModel::SortRole).toLongLong(), 400);
  EXPECT_EQ(model.index(0, KernelTableModel::Mean).data(KernelTableModel::SortRole).toLongLong(), 200);
  EXPECT_EQ(model.index(0, KernelTableModel::Min).data(KernelTableModel::SortRole).toLongLong(), 100);
  EXPECT_EQ(model.index(0, KernelTableModel::Max).data(KernelTableModel::SortRole).toLongLong(), 300);
  EXPECT_EQ(model.index(1, KernelTableModel::Count).data(KernelTableModel::SortRole).toULongLong(), 9u);
  EXPECT_NEAR(model.index(0, KernelTableModel::Share).data(KernelTableModel::SortRole).toDouble(), 100.0 * 400 / 490, 1e-9);

  // Sorting by launches puts "small" first; a string sort of "9" and "2" would not tell.
  proxy.sort(KernelTableModel::Count, Qt::DescendingOrder);
  EXPECT_EQ(proxy.index(0, KernelTableModel::Name).data().toString(), QStringLiteral("small"));
  proxy.setFilterRegularExpression(QRegularExpression(QStringLiteral("^b")));
  ASSERT_EQ(proxy.rowCount(), 1);
  EXPECT_EQ(proxy.index(0, KernelTableModel::Name).data().toString(), QStringLiteral("big"));
  model.set_document(nullptr);
  EXPECT_EQ(model.rowCount(), 0);
}

} // namespace
} // namespace dreamscope::gui
