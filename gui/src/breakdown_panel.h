// Where the time went, from the analyzers: the cross-stack breakdown per operation
// (stacked bars and a sortable table), the step breakdown in TensorBoard's categories, and
// the data stalls per step. The analyses run on a worker thread when a trace is shown.
#pragma once

#include "trace_document.h"

#include <dreamscope/analyzers/pipeline.h>
#include <dreamscope/analyzers/tensorboard.h>

#include <QWidget>

#include <memory>

class QChartView;
class QLabel;
class QTreeView;

namespace dreamscope::gui {

class CrossStackModel;
class DataStallModel;

struct TraceAnalysis {
  analyzers::CrossStackBreakdown cross_stack;
  analyzers::StepBreakdown steps;
  analyzers::DataStalls stalls;
  QString error;
};

// The analyses the panel shows; a pure function, run off the GUI thread.
TraceAnalysis analyze_trace(const Trace& trace);

class BreakdownPanel : public QWidget {
  Q_OBJECT

 public:
  // Operations beyond this many are summed into one "other" bar.
  static constexpr int kChartOperations = 12;

  explicit BreakdownPanel(QWidget* parent = nullptr);

  void set_document(std::shared_ptr<const TraceDocument> doc);
  // Shows results already computed (the worker's, or a test's).
  void show_analysis(const TraceAnalysis& a);

  CrossStackModel* cross_stack() const { return cross_stack_; }
  DataStallModel* stalls() const { return stalls_; }
  QChartView* operation_chart() const { return operation_chart_; }
  QChartView* step_chart() const { return step_chart_; }

 signals:
  void analysis_shown();

 private:
  std::shared_ptr<const TraceDocument> doc_;
  CrossStackModel* cross_stack_ = nullptr;
  DataStallModel* stalls_ = nullptr;
  QChartView* operation_chart_ = nullptr;
  QChartView* step_chart_ = nullptr;
  QLabel* status_ = nullptr;
  QLabel* stall_summary_ = nullptr;
};

} // namespace dreamscope::gui
