// The whole window: a trace file written by the storage writer opened through the
// background loader, search and jump driven as a user would, and a bad file reported.
#include "../common/required_data.h"
#include "gui_test_support.h"
#include "main_window.h"
#include "models/details_model.h"
#include "models/kernel_table_model.h"
#include "models/search_model.h"
#include "timeline_view.h"

#include <dreamscope/storage/trace_file.h>

#include <QLineEdit>
#include <QMessageBox>
#include <QPainter>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QTest>

#include <algorithm>
#include <cmath>
#include <fstream>

#include <gtest/gtest.h>

namespace dreamscope::gui {
namespace {

using test::app;
using test::find_named;

TEST(MainWindow, OpensATraceFileInTheBackgroundAndDrawsIt) {
  app();
  test::ScratchDir dir;
  const auto path = dir / "step.db";
  write_trace(test::make_step_trace(), path);

  MainWindow w;
  w.show();
  QSignalSpy loaded(&w, &MainWindow::loaded);
  QSignalSpy failed(&w, &MainWindow::load_failed);
  w.open_file(QString::fromStdString(path.string()));
  EXPECT_TRUE(w.loading() || loaded.count() == 1);
  ASSERT_TRUE(loaded.count() == 1 || loaded.wait(20000));
  EXPECT_EQ(failed.count(), 0);
  ASSERT_NE(w.document(), nullptr);
  EXPECT_EQ(w.document()->trace().event_count(), 8u);
  EXPECT_TRUE(MainWindow::recent_files().contains(QString::fromStdString(path.string())));
  EXPECT_EQ(w.kernels()->rowCount(), 2);

  // What was read from disk is drawn: the kernel in its colour at its place.
  TimelineView* view = w.timeline();
  view->fit_all();
  const TraceDocument& doc = *w.document();
  const EventRef relu = find_named(doc, EventTable::GpuOp, "relu_kernel");
  const auto pos = view->event_position(relu);
  ASSERT_TRUE(pos.has_value());
  QImage img(view->viewport()->size(), QImage::Format_RGB32);
  QPainter p(&img);
  view->paint(p, img.size());
  EXPECT_EQ(img.pixelColor(*pos - QPoint(0, 6)), doc.name_color(doc.name(relu)));
}

// A PyTorch profiler trace from HTA's test data, through the importer and the loader.
TEST(MainWindow, OpensAKinetoTraceAndDrawsItsKernels) {
  app();
  const std::filesystem::path path = std::filesystem::path(DREAMSCOPE_SHARED_DATA_DIR) /
                                     "kineto-hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz";
  DREAMSCOPE_REQUIRE_DATA(path);
  MainWindow w;
  w.resize(1400, 900);
  w.show();
  QSignalSpy loaded(&w, &MainWindow::loaded);
  w.open_file(QString::fromStdString(path.string()));
  ASSERT_TRUE(loaded.count() == 1 || loaded.wait(60000)) << w.last_error().toStdString();
  const TraceDocument& doc = *w.document();
  const Trace& t = doc.trace();
  ASSERT_GT(t.gpu_ops().size(), 1000u);
  EXPECT_GT(w.kernels()->rowCount(), 10);

  // Zoom onto the longest kernel: it must be drawn in its colour, with its name's colour,
  // at the middle of its extent on the stream's GPU lane.
  std::size_t longest = 0;
  for (std::size_t i = 0; i < t.gpu_ops().size(); ++i) {
    if (t.gpu_ops().end[i] - t.gpu_ops().start[i] > t.gpu_ops().end[longest] - t.gpu_ops().start[longest]) longest = i;
  }
  const EventRef k{EventTable::GpuOp, static_cast<std::uint32_t>(longest)};
  TimelineView* view = w.timeline();
  view->select(k, true);
  const TimeNs s = doc.start(k), e = doc.end(k);
  view->zoom_to(s - (e - s), e + (e - s));
  const auto pos = view->event_position(k);
  ASSERT_TRUE(pos.has_value());
  QImage img(view->viewport()->size(), QImage::Format_RGB32);
  {
    QPainter p(&img);
    view->paint(p, img.size());
  }
  // Just inside the left end, near the top: clear of the selection outline and the label.
  const int x = TimelineView::kLabelWidth + static_cast<int>(std::floor(view->scale().x_of(s))) + 2;
  EXPECT_EQ(img.pixelColor(x, pos->y() - 5), doc.name_color(doc.name(k)));
  // Before the kernel starts, the lane is empty there.
  const int before = TimelineView::kLabelWidth + static_cast<int>(std::floor(view->scale().x_of(s - (e - s) / 2)));
  EXPECT_NE(img.pixelColor(before, pos->y() - 5), doc.name_color(doc.name(k)));
  // The details name the kernel and its launch.
  EXPECT_EQ(w.details()->index(0, DetailsModel::Value).data().toString(), doc.name_text(k));
  EXPECT_GE(w.details()->row_of(QStringLiteral("launched by")), 0);
}

// A distributed job: a folder of one PyTorch-profiler file per rank opens as one trace whose
// processes are labelled with their rank.
TEST(MainWindow, OpensAFolderOfRanksAsOneJob) {
  app();
  const std::filesystem::path dir = std::filesystem::path(DREAMSCOPE_SHARED_DATA_DIR) / "wild/param-dlrm-v100x8-nccl";
  DREAMSCOPE_REQUIRE_DATA(dir);
  MainWindow w;
  w.show();
  QSignalSpy loaded(&w, &MainWindow::loaded);
  w.open_files({QString::fromStdString(dir.string())});
  ASSERT_TRUE(loaded.count() == 1 || loaded.wait(60000)) << w.last_error().toStdString();
  const TraceDocument& doc = *w.document();
  ASSERT_EQ(doc.trace().processes().size(), 8u);
  QStringList labels;
  for (ProcessId p{0}; p < 8; ++p) labels << doc.process_label(p);
  for (int r = 0; r < 8; ++r) {
    EXPECT_TRUE(std::any_of(labels.begin(), labels.end(),
                            [&](const QString& l) { return l.startsWith(QStringLiteral("rank %1: ").arg(r)); }))
        << labels.join(", ").toStdString();
  }
}

TEST(MainWindow, SearchStepsThroughMatchesAndJumpsToTheLaunch) {
  app();
  MainWindow w;
  w.show();
  auto doc = test::make_step_document();
  w.set_document(doc);
  QTest::keyClicks(w.search_field(), QStringLiteral("_KERNEL$"));
  w.run_search();
  // Case-insensitive: both kernels, not the launches.
  ASSERT_EQ(w.search_results()->rowCount(), 2);
  const EventRef gemm = find_named(*doc, EventTable::GpuOp, "gemm_kernel");
  const EventRef relu = find_named(*doc, EventTable::GpuOp, "relu_kernel");
  QTest::keyClick(w.search_field(), Qt::Key_Return);
  EXPECT_EQ(w.timeline()->selection(), gemm);
  w.next_match(+1);
  EXPECT_EQ(w.timeline()->selection(), relu);
  w.next_match(+1); // wraps around
  EXPECT_EQ(w.timeline()->selection(), gemm);
  w.next_match(-1);
  EXPECT_EQ(w.timeline()->selection(), relu);
  EXPECT_EQ(w.details()->index(0, DetailsModel::Value).data().toString(), QStringLiteral("relu_kernel"));

  // J goes to the launch of the selected kernel and back.
  w.jump_to_counterpart();
  const EventRef launch = w.timeline()->selection();
  ASSERT_EQ(launch.table, EventTable::CudaApi);
  EXPECT_EQ(doc->start(launch), 60000);
  w.jump_to_counterpart();
  EXPECT_EQ(w.timeline()->selection(), relu);

  // An invalid expression changes nothing and says why.
  w.search_field()->setText(QStringLiteral("(unclosed"));
  w.run_search();
  EXPECT_EQ(w.search_results()->rowCount(), 2);
  w.search_field()->clear();
  w.run_search();
  EXPECT_EQ(w.search_results()->rowCount(), 0);

  // The kernel filter narrows the table.
  w.kernel_filter()->setText(QStringLiteral("relu"));
  ASSERT_EQ(w.kernel_proxy()->rowCount(), 1);
  EXPECT_EQ(w.kernel_proxy()->index(0, KernelTableModel::Name).data().toString(), QStringLiteral("relu_kernel"));
}

TEST(MainWindow, ABadFileIsReportedWithItsName) {
  app();
  test::ScratchDir dir;
  const auto path = dir / "not-a-trace.db";
  std::ofstream(path) << "this is not a database, just some text that is long enough to be read\n";
  MainWindow w;
  w.show();
  QSignalSpy failed(&w, &MainWindow::load_failed);
  w.open_file(QString::fromStdString(path.string()));
  ASSERT_TRUE(failed.count() == 1 || failed.wait(20000));
  const QString message = failed.front().front().toString();
  EXPECT_TRUE(message.contains(QStringLiteral("not-a-trace.db"))) << message.toStdString();
  EXPECT_EQ(w.document(), nullptr);
  EXPECT_EQ(w.last_error(), message);
  auto* box = w.findChild<QMessageBox*>(QStringLiteral("load-error"));
  ASSERT_NE(box, nullptr);
  EXPECT_TRUE(box->isVisible());
  EXPECT_EQ(box->text(), message);

  // A missing file too.
  QSignalSpy failed_again(&w, &MainWindow::load_failed);
  w.open_file(QString::fromStdString((dir / "missing.db").string()));
  ASSERT_TRUE(failed_again.count() == 1 || failed_again.wait(20000));
  EXPECT_TRUE(failed_again.front().front().toString().contains(QStringLiteral("missing.db")));
}

} // namespace
} // namespace dreamscope::gui
