// Breakdowns and what-if, where the GUI is built with the analyzers and the what-if engine:
// their models under QAbstractItemModelTester, the panel fed by the real analyzers, and a
// what-if run end to end through the window.
#include "gui_test_support.h"
#include "main_window.h"
#include "timeline_view.h"

#include "breakdown_panel.h"
#include "models/breakdown_models.h"

#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QHorizontalStackedBarSeries>
#include <QStackedBarSeries>
#include "models/whatif_models.h"
#include "whatif_panel.h"

#include <QAbstractItemModelTester>
#include <QSignalSpy>

#include <gtest/gtest.h>

namespace dreamscope::gui {
namespace {

using test::app;

// Three GPU-bound steps: in each, the thread launches a 60 us GEMM and waits for it.
Trace make_gpu_bound_trace() {
  TraceBuilder b;
  b.set_source(TraceSource::Tracer);
  const auto proc = b.add_process(ProcessInfo{.pid = 7, .name = "train"});
  DeviceInfo d;
  d.name = "Test GPU";
  d.process = proc;
  const auto dev = b.add_device(d);
  const TrackId cpu = b.thread_track(proc, 7, "main");
  const TrackId gpu = b.stream_track(dev, 7);
  const StringId step = b.intern("step"), step_category = b.intern("step"), forward = b.intern("forward");
  const StringId launch = b.intern("cudaLaunchKernel"), sync = b.intern("cudaDeviceSynchronize");
  const StringId gemm = b.intern("sm80_xmma_gemm_f32");
  for (int i = 0; i < 3; ++i) {
    const TimeNs s = 1000 + i * 100000;
    b.add(AnnotationRecord{.track = cpu, .start = s, .end = s + 80000, .name = step, .category = step_category, .payload = i});
    b.add(AnnotationRecord{.track = cpu, .start = s + 1000, .end = s + 79000, .name = forward});
    b.add(CudaApiRecord{.track = cpu, .start = s + 5000, .end = s + 10000, .name = launch, .correlation = i + 1});
    b.add(CudaApiRecord{.track = cpu, .start = s + 10000, .end = s + 75000, .name = sync, .correlation = 100 + i});
    b.add(GpuOpRecord{.track = gpu, .kind = GpuOpKind::Kernel, .start = s + 12000, .end = s + 72000, .name = gemm,
                      .correlation = i + 1});
    b.add(GpuOpRecord{.track = gpu, .kind = GpuOpKind::Sync, .subkind = 4, .start = s + 72000, .end = s + 74000,
                      .name = b.intern("Context Sync"), .correlation = 100 + i});
  }
  return std::move(b).build();
}

TEST(Breakdowns, ShowTheAnalyzersResultsInModelsAndCharts) {
  app();
  auto doc = std::make_shared<const TraceDocument>(make_gpu_bound_trace());
  BreakdownPanel panel;
  QAbstractItemModelTester t1(panel.cross_stack(), QAbstractItemModelTester::FailureReportingMode::Fatal);
  QAbstractItemModelTester t2(panel.stalls(), QAbstractItemModelTester::FailureReportingMode::Fatal);
  QSignalSpy shown(&panel, &BreakdownPanel::analysis_shown);
  panel.set_document(doc); // shows an empty analysis at once, then the worker's
  ASSERT_TRUE(shown.count() >= 2 || shown.wait(20000));
  while (shown.count() < 2) ASSERT_TRUE(shown.wait(20000));

  const analyzers::CrossStackBreakdown expected = analyzers::cross_stack_breakdown(doc->trace());
  ASSERT_EQ(panel.cross_stack()->rowCount(), static_cast<int>(expected.operations.size()));
  ASSERT_GT(panel.cross_stack()->rowCount(), 0);
  for (int r = 0; r < panel.cross_stack()->rowCount(); ++r) {
    const auto& op = expected.operations[r];
    EXPECT_EQ(panel.cross_stack()->index(r, CrossStackModel::Operation).data().toString().toStdString(), op.name);
    EXPECT_EQ(panel.cross_stack()->index(r, CrossStackModel::Total).data(CrossStackModel::SortRole).toLongLong(), op.total());
    EXPECT_EQ(panel.cross_stack()->index(r, CrossStackModel::GpuOnly).data(CrossStackModel::SortRole).toLongLong(), op.gpu_only);
  }
  // One bar per operation (up to the chart's limit), stacked from the four kinds of time.
  QChart* chart = panel.operation_chart()->chart();
  ASSERT_EQ(chart->series().size(), 1);
  auto* bars = qobject_cast<QHorizontalStackedBarSeries*>(chart->series().front());
  ASSERT_NE(bars, nullptr);
  ASSERT_EQ(bars->count(), 4);
  EXPECT_EQ(bars->barSets().front()->count(), std::min<int>(BreakdownPanel::kChartOperations, static_cast<int>(expected.operations.size())));
  // Step chart: one bar per step.
  auto* steps = qobject_cast<QStackedBarSeries*>(panel.step_chart()->chart()->series().front());
  ASSERT_NE(steps, nullptr);
  EXPECT_EQ(steps->barSets().front()->count(), static_cast<int>(analyzers::step_breakdown(doc->trace()).steps.size()));
}

TEST(WhatIf, ParameterOverridesAreWhatTheUserChanged) {
  app();
  ScenarioParametersModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  const whatif::Scenario amp = whatif::find_scenario("amp");
  model.set_parameters(amp.parameters());
  ASSERT_EQ(model.rowCount(), static_cast<int>(amp.parameters().size()));
  EXPECT_TRUE(model.overrides().empty());
  int ratio_row = -1;
  for (int r = 0; r < model.rowCount(); ++r) {
    if (model.index(r, ScenarioParametersModel::Name).data().toString() == QStringLiteral("tensor_core_ratio")) ratio_row = r;
  }
  ASSERT_GE(ratio_row, 0);
  EXPECT_TRUE(model.flags(model.index(ratio_row, ScenarioParametersModel::Value)) & Qt::ItemIsEditable);
  EXPECT_FALSE(model.flags(model.index(ratio_row, ScenarioParametersModel::Name)) & Qt::ItemIsEditable);
  ASSERT_TRUE(model.setData(model.index(ratio_row, ScenarioParametersModel::Value), QStringLiteral("0.5")));
  const auto overrides = model.overrides();
  ASSERT_EQ(overrides.size(), 1u);
  EXPECT_EQ(overrides.at("tensor_core_ratio"), "0.5");
}

TEST(WhatIf, RunsEndToEndAndShowsThePredictionUnderTheMeasuredRun) {
  app();
  MainWindow w;
  w.show();
  auto doc = std::make_shared<const TraceDocument>(make_gpu_bound_trace());
  w.set_document(doc);
  WhatIfPanel* panel = w.whatif();
  ASSERT_NE(panel, nullptr);
  QAbstractItemModelTester t1(panel->predictions(), QAbstractItemModelTester::FailureReportingMode::Fatal);
  QAbstractItemModelTester t2(panel->steps(), QAbstractItemModelTester::FailureReportingMode::Fatal);
  EXPECT_FALSE(panel->choose_scenario(QStringLiteral("no-such-scenario")));
  ASSERT_TRUE(panel->choose_scenario(QStringLiteral("amp")));

  QSignalSpy finished(panel, &WhatIfPanel::finished);
  panel->run();
  ASSERT_TRUE(finished.count() == 1 || finished.wait(60000));
  ASSERT_TRUE(finished.front().front().toBool()) << panel->last_error().toStdString();

  // The engine's own answer, computed here directly, is what the panel shows.
  const whatif::ScenarioRequest request{whatif::find_scenario("amp"), {}};
  const PredictionResult direct = run_prediction(*doc, request);
  ASSERT_TRUE(direct.error.isEmpty()) << direct.error.toStdString();
  ASSERT_EQ(panel->predictions()->rowCount(), 1);
  const auto shown = panel->predictions()->at(0);
  EXPECT_DOUBLE_EQ(shown->prediction.speedup, direct.prediction.speedup);
  // GEMMs at a third of their time in GPU-bound steps: the steps get faster.
  EXPECT_GT(shown->prediction.speedup, 1.3);
  ASSERT_EQ(panel->steps()->rowCount(), 3);

  // The predicted run is drawn under the measured one, on the same time axis.
  ASSERT_TRUE(w.predicted_timeline()->isVisibleTo(&w));
  ASSERT_NE(w.predicted_timeline()->document(), nullptr);
  EXPECT_EQ(w.predicted_timeline()->document()->trace().gpu_ops().size(), doc->trace().gpu_ops().size());
  EXPECT_EQ(w.predicted_timeline()->scale(), w.timeline()->scale());
  w.timeline()->zoom(3, 100);
  EXPECT_EQ(w.predicted_timeline()->scale(), w.timeline()->scale());
  w.predicted_timeline()->pan(40);
  EXPECT_EQ(w.predicted_timeline()->scale(), w.timeline()->scale());

  // A second run with another parameter value is kept beside the first.
  panel->parameters()->setData(panel->parameters()->index(0, ScenarioParametersModel::Value), QStringLiteral("1.0"));
  panel->run();
  ASSERT_TRUE(finished.count() == 2 || finished.wait(60000));
  EXPECT_EQ(panel->predictions()->rowCount(), 2);
}

TEST(GuiBuild, SaysWhichPanelsItHas) {
  app();
  MainWindow w;
  EXPECT_NE(w.breakdowns(), nullptr);
  EXPECT_NE(w.whatif(), nullptr);
}

} // namespace
} // namespace dreamscope::gui
