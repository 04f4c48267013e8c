// The what-if panel's tables: a scenario's parameters (the value column is editable), the
// predictions made so far, and the measured and predicted time of each step of one.
#pragma once

#include "trace_document.h"

#include <dreamscope/whatif/whatif_engine.h>

#include <QAbstractTableModel>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dreamscope::gui {

class ScenarioParametersModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { Name, Value, Help, ColumnCount };

  explicit ScenarioParametersModel(QObject* parent = nullptr);
  void set_parameters(std::vector<whatif::Parameter> parameters);
  // The values the user changed from their defaults, as `-p name=value` would give them.
  std::map<std::string, std::string> overrides() const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  std::vector<whatif::Parameter> parameters_;
  std::vector<QString> values_;
};

// One finished what-if run: the engine's numbers and the predicted run as a document.
struct PredictionResult {
  whatif::Prediction prediction; // without its Trace, which lives in `predicted`
  std::shared_ptr<const TraceDocument> predicted;
  double measured_step_median = 0; // ns
  double replayed_step_median = 0; // ns: the unmodified graph replayed
  QString error;
};

class PredictionsModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { Label, Parameters, MeasuredStep, PredictedStep, Speedup, ColumnCount };

  explicit PredictionsModel(QObject* parent = nullptr);
  void add(std::shared_ptr<const PredictionResult> p);
  void clear();
  std::shared_ptr<const PredictionResult> at(int row) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  std::vector<std::shared_ptr<const PredictionResult>> rows_;
};

class StepTimesModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { Step, Measured, Predicted, Change, ColumnCount };

  explicit StepTimesModel(QObject* parent = nullptr);
  void set_steps(std::vector<whatif::StepTime> steps);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  std::vector<whatif::StepTime> steps_;
};

} // namespace dreamscope::gui
