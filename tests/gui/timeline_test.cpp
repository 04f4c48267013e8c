// The timeline rendered offscreen: rows and events must be drawn where the layout and the
// time scale put them; zoom, pan, select and search are driven with QTest.
#include "gui_test_support.h"
#include "timeline_view.h"

#include <QImage>
#include <QPainter>
#include <QScrollBar>
#include <QTest>
#include <QWheelEvent>

#include <gtest/gtest.h>

namespace dreamscope::gui {
namespace {

using test::app;
using test::find_named;
using test::make_step_document;

constexpr int kWidth = 1210; // a 1000-pixel time area
constexpr int kHeight = 420;

struct Fixture {
  QApplication& application = app(); // before any widget member
  std::shared_ptr<const TraceDocument> doc = make_step_document();
  TimelineView view;

  Fixture() {
    view.setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    view.resize(kWidth + 2 * view.frameWidth(), kHeight + 2 * view.frameWidth());
    view.show();
    view.set_document(doc);
    view.fit_all();
  }

  QImage render() const {
    QImage img(view.viewport()->size(), QImage::Format_RGB32);
    QPainter p(&img);
    view.paint(p, img.size());
    return img;
  }

  // Viewport pixel at time t on an event's lane, vertically centred.
  QPoint at(EventRef e, TimeNs t) const {
    const int lane_top = view.layout().lane_y(doc->track(e), doc->lane_of(e));
    return QPoint(TimelineView::kLabelWidth + static_cast<int>(view.scale().x_of(t)),
                  lane_top - view.verticalScrollBar()->value() + TimelineView::kRulerHeight +
                      TimelineLayout::kLaneHeight / 2);
  }
  QPoint middle(EventRef e) const { return at(e, (doc->start(e) + doc->end(e)) / 2); }
};

TEST(Timeline, LaysOutProcessAndGpuGroupsWithTheirLanes) {
  Fixture f;
  const TimelineLayout& layout = f.view.layout();
  ASSERT_EQ(layout.groups().size(), 2u);
  EXPECT_EQ(layout.groups()[0].label, QStringLiteral("python (pid 100)"));
  EXPECT_EQ(layout.groups()[1].label, QStringLiteral("GPU 0: Test GPU"));
  ASSERT_EQ(layout.rows().size(), 4u);
  // Thread: two annotation depths and the API lane; stream: one GPU lane.
  const TrackId main = layout.rows()[1].track;
  EXPECT_EQ(f.doc->lanes(main).lanes.size(), 3u);
  EXPECT_EQ(layout.rows()[1].height, 2 * TimelineLayout::kTrackPadding + 3 * TimelineLayout::kLaneHeight);
  EXPECT_EQ(layout.rows()[2].y, layout.rows()[1].y + layout.rows()[1].height);
  EXPECT_EQ(f.doc->lane_of(find_named(*f.doc, EventTable::CudaApi, "cudaLaunchKernel")), 2);
}

// A thread that recorded no event but ran (PyTorch's intra-op pool, the autograd engine's
// thread) has a row, drawn as its CPU use per load window: bars as tall as the share of the
// window it was on a core. A thread that neither recorded nor ran has none.
TEST(Timeline, AThreadWithOnlyCpuTimeIsShownByItsLoad) {
  QApplication& application = app();
  (void)application;
  TraceBuilder b;
  b.set_source(TraceSource::Tracer);
  const auto proc = b.add_process(ProcessInfo{.pid = 100, .name = "python"});
  const TrackId main = b.thread_track(proc, 100, "MainThread");
  const TrackId pool = b.thread_track(proc, 101, "omp_worker");
  const TrackId idle = b.thread_track(proc, 102, "idle");
  b.add(AnnotationRecord{.track = main, .start = 0, .end = 100000, .name = b.intern("step")});
  b.add(ThreadLoadRecord{.track = pool, .start = 0, .end = 50000, .cpu_ns = 50000});
  b.add(ThreadLoadRecord{.track = pool, .start = 50000, .end = 100000, .cpu_ns = 12500});
  b.add(ThreadLoadRecord{.track = idle, .start = 0, .end = 100000, .cpu_ns = 0});
  auto doc = std::make_shared<const TraceDocument>(std::move(b).build(), QStringLiteral("loads"));
  ASSERT_EQ(doc->cpu_load(pool).size(), 2u);
  EXPECT_DOUBLE_EQ(doc->cpu_load(pool)[0].utilization, 1.0);
  EXPECT_DOUBLE_EQ(doc->cpu_load(pool)[1].utilization, 0.25);
  EXPECT_TRUE(doc->cpu_load(idle).empty());

  TimelineView view;
  view.setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  view.resize(kWidth + 2 * view.frameWidth(), kHeight + 2 * view.frameWidth());
  view.show();
  view.set_document(doc);
  view.fit_all();
  const TimelineLayout& layout = view.layout();
  const int pool_row = layout.row_of_track(pool);
  ASSERT_GE(pool_row, 0) << "a thread that only ran has a row";
  EXPECT_LT(layout.row_of_track(idle), 0) << "one that neither recorded nor ran has none";

  QImage img(view.viewport()->size(), QImage::Format_RGB32);
  QPainter p(&img);
  view.paint(p, img.size());
  p.end();
  const TimelineRow& row = layout.rows()[pool_row];
  const int bottom = row.y + row.height - 3 + TimelineView::kRulerHeight;
  const int top = row.y + 3 + TimelineView::kRulerHeight;
  auto x_at = [&](TimeNs t) { return TimelineView::kLabelWidth + static_cast<int>(view.scale().x_of(t)); };
  // Fully busy: the bar reaches the top of the row; a quarter busy: only the bottom.
  EXPECT_NE(img.pixelColor(x_at(25000), bottom), QColor(Qt::white));
  EXPECT_NE(img.pixelColor(x_at(25000), top), QColor(Qt::white));
  EXPECT_NE(img.pixelColor(x_at(75000), bottom), QColor(Qt::white));
  EXPECT_EQ(img.pixelColor(x_at(75000), top), QColor(Qt::white));
}

TEST(Timeline, DrawsEachEventInItsColourWhereTheScalePutsIt) {
  Fixture f;
  const QImage img = f.render();
  for (auto [table, name] : {std::pair{EventTable::Annotation, "step"}, {EventTable::Annotation, "forward"},
                             {EventTable::Annotation, "backward"}, {EventTable::CudaApi, "cudaLaunchKernel"},
                             {EventTable::GpuOp, "gemm_kernel"}, {EventTable::GpuOp, "relu_kernel"},
                             {EventTable::GpuOp, "Memcpy HtoD"}}) {
    const EventRef e = find_named(*f.doc, table, name);
    ASSERT_TRUE(e.valid()) << name;
    const QColor expected = f.doc->name_color(f.doc->name(e));
    // Just inside both ends and in the middle; a label may cover the middle of wide ones,
    // so the ends are checked at the lane's top edge, under the text.
    QPoint left = f.at(e, f.doc->start(e));
    left += QPoint(2, -6);
    QPoint right = f.at(e, f.doc->end(e));
    right += QPoint(-3, -6);
    EXPECT_EQ(img.pixelColor(left), expected) << name << " at " << left.x() << "," << left.y();
    EXPECT_EQ(img.pixelColor(right), expected) << name << " at " << right.x() << "," << right.y();
  }
  // Between the two kernels the GPU lane is empty, and so is the time before the trace.
  const EventRef gemm = find_named(*f.doc, EventTable::GpuOp, "gemm_kernel");
  EXPECT_EQ(img.pixelColor(f.at(gemm, 55000)), QColor(Qt::white));
  EXPECT_EQ(img.pixelColor(f.at(gemm, 500) + QPoint(0, -6)), QColor(Qt::white));
  // Through the widget's own paint path as well.
  const QImage grabbed = f.view.viewport()->grab().toImage();
  EXPECT_EQ(grabbed.pixelColor(f.middle(gemm) + QPoint(0, -6)), f.doc->name_color(f.doc->name(gemm)));
}

TEST(Timeline, CollapsingAGroupHidesItsTracks) {
  Fixture f;
  const EventRef gemm = find_named(*f.doc, EventTable::GpuOp, "gemm_kernel");
  const QPoint gemm_pos = f.middle(gemm);
  // Click the CPU group's header: the GPU group moves up by the thread row's height.
  const int thread_height = f.view.layout().rows()[1].height;
  QTest::mouseClick(f.view.viewport(), Qt::LeftButton, {}, QPoint(50, TimelineView::kRulerHeight + 5));
  EXPECT_TRUE(f.view.layout().collapsed(0));
  EXPECT_EQ(f.view.layout().row_of_track(f.doc->track(find_named(*f.doc, EventTable::Annotation, "step"))), -1);
  EXPECT_EQ(f.middle(gemm).y(), gemm_pos.y() - thread_height);
  const QImage img = f.render();
  EXPECT_EQ(img.pixelColor(f.middle(gemm) + QPoint(0, -6)), f.doc->name_color(f.doc->name(gemm)));
  // Selecting an event in a collapsed group expands it.
  f.view.select(find_named(*f.doc, EventTable::Annotation, "forward"));
  EXPECT_FALSE(f.view.layout().collapsed(0));
}

TEST(Timeline, KeysAndWheelZoomAroundTheRightPoint) {
  Fixture f;
  const double fitted = f.view.scale().ns_per_pixel();
  EXPECT_NEAR(fitted, 100000.0 / (1000 - 16), 1e-6);
  QTest::keyClick(&f.view, Qt::Key_Plus);
  EXPECT_NEAR(f.view.scale().ns_per_pixel(), fitted / 1.5, 1e-6);
  QTest::keyClick(&f.view, Qt::Key_Minus);
  EXPECT_NEAR(f.view.scale().ns_per_pixel(), fitted, 1e-6);

  // The wheel zooms in at the cursor: the time under it stays put.
  const QPoint cursor(TimelineView::kLabelWidth + 400, 100);
  const TimeNs under = f.view.scale().time_at(400);
  QWheelEvent wheel(cursor, f.view.viewport()->mapToGlobal(cursor), QPoint(), QPoint(0, 240), Qt::NoButton,
                    Qt::NoModifier, Qt::NoScrollPhase, false);
  QApplication::sendEvent(f.view.viewport(), &wheel);
  EXPECT_LT(f.view.scale().ns_per_pixel(), fitted * 0.8);
  EXPECT_NEAR(static_cast<double>(f.view.scale().time_at(400)), static_cast<double>(under), f.view.scale().ns_per_pixel());

  // Pan with the keys, then fit all again.
  const TimeNs origin = f.view.scale().origin();
  QTest::keyClick(&f.view, Qt::Key_Right);
  EXPECT_GT(f.view.scale().origin(), origin);
  QTest::keyClick(&f.view, Qt::Key_F);
  EXPECT_NEAR(f.view.scale().ns_per_pixel(), fitted, 1e-6);
}

TEST(Timeline, DraggingARangeZoomsToIt) {
  Fixture f;
  const EventRef gemm = find_named(*f.doc, EventTable::GpuOp, "gemm_kernel");
  const QPoint a = f.at(gemm, 20000), b = f.at(gemm, 45000);
  QTest::mousePress(f.view.viewport(), Qt::RightButton, {}, a);
  QTest::mouseMove(f.view.viewport(), (a + b) / 2);
  QTest::mouseMove(f.view.viewport(), b);
  QTest::mouseRelease(f.view.viewport(), Qt::RightButton, {}, b);
  // The kernel now fills the time area, give or take the pixel the drag snapped to.
  const double px = 25000.0 / 1000;
  EXPECT_NEAR(f.view.scale().ns_per_pixel(), px, px * 0.15);
  EXPECT_NEAR(static_cast<double>(f.view.scale().time_at(0)), 20000.0, 200 * px);
  // Left-drag pans: the content follows the mouse.
  const TimeNs before = f.view.scale().time_at(500);
  const QPoint start(TimelineView::kLabelWidth + 500, 200);
  QTest::mousePress(f.view.viewport(), Qt::LeftButton, {}, start);
  QTest::mouseMove(f.view.viewport(), start + QPoint(50, 0));
  QTest::mouseMove(f.view.viewport(), start + QPoint(100, 0));
  QTest::mouseRelease(f.view.viewport(), Qt::LeftButton, {}, start + QPoint(100, 0));
  EXPECT_NEAR(static_cast<double>(f.view.scale().time_at(600)), static_cast<double>(before), 2 * px);
}

TEST(Timeline, ClickSelectsAndDrawsTheLaunchArrow) {
  Fixture f;
  const EventRef gemm = find_named(*f.doc, EventTable::GpuOp, "gemm_kernel");
  EventRef signalled;
  QObject::connect(&f.view, &TimelineView::selection_changed, [&](EventRef e) { signalled = e; });
  QTest::mouseClick(f.view.viewport(), Qt::LeftButton, {}, f.middle(gemm));
  EXPECT_EQ(f.view.selection(), gemm);
  EXPECT_EQ(signalled, gemm);

  // The arrow runs from the launch's start (bottom of the API lane) to the kernel's start
  // (top of the GPU lane); its middle is red.
  const EventRef launch = find_named(*f.doc, EventTable::CudaApi, "cudaLaunchKernel");
  const QPoint from = f.at(launch, 10000) + QPoint(0, TimelineLayout::kLaneHeight / 2);
  const QPoint to = f.at(gemm, 20000) - QPoint(0, TimelineLayout::kLaneHeight / 2);
  const QPoint mid = (from + to) / 2;
  const QImage img = f.render();
  int red = 0;
  for (int dx = -2; dx <= 2; ++dx) {
    const QColor c = img.pixelColor(mid + QPoint(dx, 0));
    red += c.red() > 150 && c.green() < 120 && c.blue() < 120;
  }
  EXPECT_GT(red, 0) << "no arrow near " << mid.x() << "," << mid.y();

  // A click on empty space clears the selection; Esc does too.
  QTest::mouseClick(f.view.viewport(), Qt::LeftButton, {}, f.at(gemm, 55000));
  EXPECT_FALSE(f.view.selection().valid());
  f.view.select(gemm);
  QTest::keyClick(&f.view, Qt::Key_Escape);
  EXPECT_FALSE(f.view.selection().valid());
}

TEST(Timeline, SearchDimsEverythingButTheMatches) {
  Fixture f;
  std::vector<bool> matched(f.doc->trace().strings().size(), false);
  matched[*f.doc->trace().find_string("gemm_kernel")] = true;
  f.view.set_matched_names(matched);
  const QImage img = f.render();
  const EventRef gemm = find_named(*f.doc, EventTable::GpuOp, "gemm_kernel");
  const EventRef relu = find_named(*f.doc, EventTable::GpuOp, "relu_kernel");
  EXPECT_EQ(img.pixelColor(f.middle(gemm) + QPoint(0, -6)), f.doc->name_color(f.doc->name(gemm)));
  EXPECT_EQ(img.pixelColor(f.middle(relu) + QPoint(0, -6)), QColor(0xe3, 0xe3, 0xe3));
}

TEST(Timeline, FoldsSubPixelEventsIntoCountedBlocks) {
  app();
  // 200 000 kernels of 10 ns, 40 ns apart, then one long one: zoomed out, the short ones
  // are far below a pixel each.
  TraceBuilder b;
  const auto dev = b.add_device(DeviceInfo{.name = "g"});
  const TrackId s = b.stream_track(dev, 1);
  const StringId tiny = b.intern("tiny"), longk = b.intern("long");
  for (int i = 0; i < 200000; ++i) b.add(GpuOpRecord{.track = s, .start = i * 40, .end = i * 40 + 10, .name = tiny});
  b.add(GpuOpRecord{.track = s, .start = 8000000, .end = 16000000, .name = longk});
  auto doc = std::make_shared<const TraceDocument>(std::move(b).build());
  TimelineView view;
  view.resize(kWidth, kHeight);
  view.show();
  view.set_document(doc);
  view.fit_all();
  QImage img(view.viewport()->size(), QImage::Format_RGB32);
  {
    QPainter p(&img);
    view.paint(p, img.size());
  }
  const int y = TimelineView::kRulerHeight + view.layout().lane_y(s, 0) + 3;
  const int x_tiny = TimelineView::kLabelWidth + static_cast<int>(view.scale().x_of(4000000));
  const int x_long = TimelineView::kLabelWidth + static_cast<int>(view.scale().x_of(12000000));
  EXPECT_EQ(img.pixelColor(x_tiny, y), QColor(0x8c, 0x97, 0xa8)); // one folded block
  EXPECT_EQ(img.pixelColor(x_long, y), doc->name_color(longk));     // the long kernel stays itself
  // The tooltip's count: all events within the fold distance of the point.
  const TimelineView::Hit hit = view.hit_test(QPoint(x_tiny, y));
  const double per_px = view.scale().ns_per_pixel() / 40;
  EXPECT_NEAR(static_cast<double>(hit.folded), 2 * TimelineView::kFoldPixels * per_px, 3.0);
  // Zoomed in far enough, single tiny kernels are drawn apart, each in its own colour.
  view.zoom_to(400000, 400400);
  img.fill(Qt::black);
  {
    QPainter p(&img);
    view.paint(p, img.size());
  }
  const int x_one = TimelineView::kLabelWidth + static_cast<int>(view.scale().x_of(400005));
  const int x_gap = TimelineView::kLabelWidth + static_cast<int>(view.scale().x_of(400025));
  EXPECT_EQ(img.pixelColor(x_one, y), doc->name_color(tiny));
  EXPECT_EQ(img.pixelColor(x_gap, y), QColor(Qt::white));
  // Deep inside the long kernel, which began 200 000 events earlier, it is still drawn.
  view.zoom_to(15000000, 15000400);
  {
    QPainter p(&img);
    view.paint(p, img.size());
  }
  EXPECT_EQ(img.pixelColor(TimelineView::kLabelWidth + 500, y), doc->name_color(longk));
}

} // namespace
} // namespace dreamscope::gui
