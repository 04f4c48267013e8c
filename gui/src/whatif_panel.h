// What-if: pick a built-in scenario or a TOML file, set its parameters, run it on a worker
// thread, and keep each prediction (step times, speedup, the predicted run as a trace) to
// compare. The selected prediction's trace is offered to the window through
// prediction_selected(), which shows it under the measured timeline on the same time axis.
#pragma once

#include "models/whatif_models.h"
#include "trace_document.h"

#include <QFutureWatcher>
#include <QWidget>

#include <memory>

class QComboBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QTreeView;

namespace dreamscope::gui {

// Runs one scenario on a trace: the engine with make_trace, then the predicted run's
// document. Pure; never throws (errors land in PredictionResult::error).
PredictionResult run_prediction(const TraceDocument& measured, const whatif::ScenarioRequest& request);

class WhatIfPanel : public QWidget {
  Q_OBJECT

 public:
  explicit WhatIfPanel(QWidget* parent = nullptr);

  void set_document(std::shared_ptr<const TraceDocument> doc);
  // Selects a scenario by built-in name or file path (adding the file to the list).
  bool choose_scenario(const QString& name_or_path);
  void run();
  bool running() const { return watcher_.isRunning(); }

  ScenarioParametersModel* parameters() const { return parameters_; }
  PredictionsModel* predictions() const { return predictions_; }
  StepTimesModel* steps() const { return steps_; }
  const QString& last_error() const { return last_error_; }

 signals:
  void prediction_selected(std::shared_ptr<const dreamscope::gui::PredictionResult> p);
  void finished(bool ok);

 private:
  void scenario_changed();
  void run_finished();
  void show_prediction(int row);

  std::shared_ptr<const TraceDocument> doc_;
  std::unique_ptr<whatif::Scenario> scenario_;
  QFutureWatcher<PredictionResult> watcher_;
  QString last_error_;

  QComboBox* scenario_box_ = nullptr;
  QLabel* description_ = nullptr;
  ScenarioParametersModel* parameters_ = nullptr;
  PredictionsModel* predictions_ = nullptr;
  StepTimesModel* steps_ = nullptr;
  QTreeView* predictions_view_ = nullptr;
  QPushButton* run_button_ = nullptr;
  QProgressBar* busy_ = nullptr;
  QLabel* status_ = nullptr;
};

} // namespace dreamscope::gui
