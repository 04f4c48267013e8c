#include "whatif_panel.h"

#include "format.h"

#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QTreeView>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

namespace dreamscope::gui {

namespace {
QTreeView* table(QAbstractItemModel* model, QWidget* parent) {
  auto* v = new QTreeView(parent);
  v->setModel(model);
  v->setRootIsDecorated(false);
  v->setUniformRowHeights(true);
  v->setAlternatingRowColors(true);
  return v;
}
} // namespace

PredictionResult run_prediction(const TraceDocument& measured, const whatif::ScenarioRequest& request) {
  PredictionResult out;
  try {
    whatif::WhatIfOptions options;
    options.make_trace = true;
    whatif::WhatIfReport report = whatif::run_whatif(measured.trace(), {request}, options);
    if (report.predictions.empty()) {
      out.error = QStringLiteral("the what-if engine made no prediction");
      return out;
    }
    out.prediction = std::move(report.predictions.back());
    out.measured_step_median = report.measured_step_median;
    out.replayed_step_median = report.replayed_step_median;
    if (out.prediction.predicted) {
      out.predicted = std::make_shared<const TraceDocument>(
          std::move(*out.prediction.predicted),
          QStringLiteral("predicted: %1").arg(QString::fromStdString(out.prediction.label)));
      out.prediction.predicted.reset();
    }
  } catch (const std::exception& e) {
    out.error = QString::fromUtf8(e.what());
  }
  return out;
}

WhatIfPanel::WhatIfPanel(QWidget* parent) : QWidget(parent) {
  parameters_ = new ScenarioParametersModel(this);
  predictions_ = new PredictionsModel(this);
  steps_ = new StepTimesModel(this);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  auto* top = new QHBoxLayout;
  scenario_box_ = new QComboBox(this);
  for (const whatif::BuiltinScenario& s : whatif::builtin_scenarios()) {
    scenario_box_->addItem(to_qstring(s.name), to_qstring(s.name));
  }
  auto* file_button = new QPushButton(tr("TOML file..."), this);
  run_button_ = new QPushButton(tr("Run"), this);
  run_button_->setEnabled(false);
  busy_ = new QProgressBar(this);
  busy_->setRange(0, 0); // the engine reports no progress: show that it is working
  busy_->setMaximumWidth(120);
  busy_->hide();
  top->addWidget(new QLabel(tr("Scenario:"), this));
  top->addWidget(scenario_box_, 1);
  top->addWidget(file_button);
  top->addWidget(run_button_);
  top->addWidget(busy_);
  layout->addLayout(top);
  description_ = new QLabel(this);
  description_->setWordWrap(true);
  layout->addWidget(description_);
  status_ = new QLabel(this);
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  auto* split = new QSplitter(Qt::Horizontal, this);
  auto* params_view = table(parameters_, split);
  params_view->setEditTriggers(QAbstractItemView::AllEditTriggers);
  params_view->setToolTip(tr("Edit a value to override the scenario's default"));
  predictions_view_ = table(predictions_, split);
  predictions_view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  auto* steps_view = table(steps_, split);
  split->addWidget(params_view);
  split->addWidget(predictions_view_);
  split->addWidget(steps_view);
  layout->addWidget(split, 1);
  layout->addWidget(status_);

  connect(scenario_box_, &QComboBox::currentIndexChanged, this, &WhatIfPanel::scenario_changed);
  connect(file_button, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Scenario file"), {}, tr("Scenarios (*.toml);;All files (*)"));
    if (!path.isEmpty()) choose_scenario(path);
  });
  connect(run_button_, &QPushButton::clicked, this, &WhatIfPanel::run);
  connect(&watcher_, &QFutureWatcher<PredictionResult>::finished, this, &WhatIfPanel::run_finished);
  connect(predictions_view_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& current) { show_prediction(current.row()); });
  scenario_changed();
}

void WhatIfPanel::set_document(std::shared_ptr<const TraceDocument> doc) {
  doc_ = std::move(doc);
  predictions_->clear();
  steps_->set_steps({});
  run_button_->setEnabled(doc_ && scenario_ && !watcher_.isRunning());
  status_->clear();
}

bool WhatIfPanel::choose_scenario(const QString& name_or_path) {
  int index = scenario_box_->findData(name_or_path);
  if (index < 0) {
    const QFileInfo info(name_or_path);
    if (!info.exists()) {
      last_error_ = tr("%1: no such built-in scenario or file").arg(name_or_path);
      status_->setText(last_error_);
      return false;
    }
    scenario_box_->addItem(info.fileName(), info.absoluteFilePath());
    index = scenario_box_->count() - 1;
  }
  scenario_box_->setCurrentIndex(index);
  scenario_changed();
  return scenario_ != nullptr;
}

void WhatIfPanel::scenario_changed() {
  scenario_.reset();
  parameters_->set_parameters({});
  description_->clear();
  const QString key = scenario_box_->currentData().toString();
  if (!key.isEmpty()) {
    try {
      scenario_ = std::make_unique<whatif::Scenario>(whatif::find_scenario(key.toStdString()));
      parameters_->set_parameters(scenario_->parameters());
      description_->setText(QString::fromStdString(scenario_->description()));
      status_->clear();
    } catch (const std::exception& e) {
      last_error_ = QString::fromUtf8(e.what());
      status_->setText(last_error_);
    }
  }
  run_button_->setEnabled(doc_ && scenario_ && !watcher_.isRunning());
}

void WhatIfPanel::run() {
  if (!doc_ || !scenario_ || watcher_.isRunning()) return;
  whatif::ScenarioRequest request{*scenario_, parameters_->overrides()};
  run_button_->setEnabled(false);
  busy_->show();
  status_->setText(tr("Simulating %1 ...").arg(QString::fromStdString(scenario_->name())));
  watcher_.setFuture(QtConcurrent::run([doc = doc_, request = std::move(request)] { return run_prediction(*doc, request); }));
}

void WhatIfPanel::run_finished() {
  busy_->hide();
  run_button_->setEnabled(doc_ && scenario_);
  PredictionResult r = watcher_.result();
  if (!r.error.isEmpty()) {
    last_error_ = r.error;
    status_->setText(tr("The what-if failed: %1").arg(r.error));
    emit finished(false);
    return;
  }
  last_error_.clear();
  status_->setText(tr("%1: predicted step %2 (measured %3, replayed %4), speedup %5")
                       .arg(QString::fromStdString(r.prediction.label), format_duration(static_cast<TimeNs>(r.prediction.step_median)),
                            format_duration(static_cast<TimeNs>(r.measured_step_median)),
                            format_duration(static_cast<TimeNs>(r.replayed_step_median)))
                       .arg(format_speedup(r.prediction.speedup)));
  predictions_->add(std::make_shared<const PredictionResult>(std::move(r)));
  predictions_view_->setCurrentIndex(predictions_->index(predictions_->rowCount() - 1, 0));
  emit finished(true);
}

void WhatIfPanel::show_prediction(int row) {
  auto p = predictions_->at(row);
  steps_->set_steps(p ? p->prediction.steps : std::vector<whatif::StepTime>{});
  emit prediction_selected(p);
}

} // namespace dreamscope::gui
