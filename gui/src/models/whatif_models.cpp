#include "whatif_models.h"

#include "format.h"

#include <QFont>

namespace dreamscope::gui {

namespace {
QVariant right_aligned() { return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter); }
QString ns_text(double ns) { return format_duration(static_cast<TimeNs>(ns)); }
} // namespace

ScenarioParametersModel::ScenarioParametersModel(QObject* parent) : QAbstractTableModel(parent) {}

void ScenarioParametersModel::set_parameters(std::vector<whatif::Parameter> parameters) {
  beginResetModel();
  parameters_ = std::move(parameters);
  values_.clear();
  for (const auto& p : parameters_) values_.push_back(QString::fromStdString(whatif::to_string(p.default_value)));
  endResetModel();
}

std::map<std::string, std::string> ScenarioParametersModel::overrides() const {
  std::map<std::string, std::string> out;
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    const std::string v = values_[i].trimmed().toStdString();
    if (v != whatif::to_string(parameters_[i].default_value)) out[parameters_[i].name] = v;
  }
  return out;
}

int ScenarioParametersModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(parameters_.size());
}

int ScenarioParametersModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant ScenarioParametersModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= static_cast<int>(parameters_.size())) return {};
  const whatif::Parameter& p = parameters_[index.row()];
  if (role == Qt::DisplayRole || role == Qt::EditRole) {
    switch (index.column()) {
      case Name: return QString::fromStdString(p.name);
      case Value: return values_[index.row()];
      case Help: return QString::fromStdString(p.help);
    }
  }
  if (role == Qt::ToolTipRole) return QString::fromStdString(p.help);
  if (role == Qt::FontRole && index.column() == Value &&
      values_[index.row()].trimmed().toStdString() != whatif::to_string(p.default_value)) {
    QFont f;
    f.setBold(true);
    return f;
  }
  return {};
}

bool ScenarioParametersModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (!index.isValid() || index.column() != Value || role != Qt::EditRole ||
      index.row() >= static_cast<int>(parameters_.size())) {
    return false;
  }
  values_[index.row()] = value.toString();
  emit dataChanged(index, index);
  return true;
}

Qt::ItemFlags ScenarioParametersModel::flags(const QModelIndex& index) const {
  Qt::ItemFlags f = QAbstractTableModel::flags(index);
  if (index.isValid() && index.column() == Value) f |= Qt::ItemIsEditable;
  return f;
}

QVariant ScenarioParametersModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Name: return tr("Parameter");
    case Value: return tr("Value");
    case Help: return tr("Meaning");
  }
  return {};
}

PredictionsModel::PredictionsModel(QObject* parent) : QAbstractTableModel(parent) {}

void PredictionsModel::add(std::shared_ptr<const PredictionResult> p) {
  const int row = static_cast<int>(rows_.size());
  beginInsertRows({}, row, row);
  rows_.push_back(std::move(p));
  endInsertRows();
}

void PredictionsModel::clear() {
  beginResetModel();
  rows_.clear();
  endResetModel();
}

std::shared_ptr<const PredictionResult> PredictionsModel::at(int row) const {
  return row >= 0 && row < static_cast<int>(rows_.size()) ? rows_[row] : nullptr;
}

int PredictionsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int PredictionsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant PredictionsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= static_cast<int>(rows_.size())) return {};
  const PredictionResult& r = *rows_[index.row()];
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case Label: return QString::fromStdString(r.prediction.label);
      case Parameters: {
        QStringList parts;
        for (const auto& [k, v] : r.prediction.parameters) parts << QStringLiteral("%1=%2").arg(QString::fromStdString(k), QString::fromStdString(v));
        return parts.join(QStringLiteral(", "));
      }
      case MeasuredStep: return ns_text(r.measured_step_median);
      case PredictedStep: return ns_text(r.prediction.step_median);
      case Speedup: return QStringLiteral("%1x").arg(r.prediction.speedup, 0, 'f', 2);
    }
  }
  if (role == Qt::TextAlignmentRole && index.column() >= MeasuredStep) return right_aligned();
  return {};
}

QVariant PredictionsModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Label: return tr("Scenario");
    case Parameters: return tr("Parameters");
    case MeasuredStep: return tr("Measured step");
    case PredictedStep: return tr("Predicted step");
    case Speedup: return tr("Speedup");
  }
  return {};
}

StepTimesModel::StepTimesModel(QObject* parent) : QAbstractTableModel(parent) {}

void StepTimesModel::set_steps(std::vector<whatif::StepTime> steps) {
  beginResetModel();
  steps_ = std::move(steps);
  endResetModel();
}

int StepTimesModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(steps_.size());
}

int StepTimesModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant StepTimesModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= static_cast<int>(steps_.size())) return {};
  const whatif::StepTime& s = steps_[index.row()];
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case Step: return QString::fromStdString(s.name);
      case Measured: return format_duration(s.measured());
      case Predicted: return format_duration(s.predicted());
      case Change: return QStringLiteral("%1%2 %").arg(s.error() >= 0 ? QStringLiteral("+") : QString()).arg(100 * s.error(), 0, 'f', 1);
    }
  }
  if (role == Qt::TextAlignmentRole && index.column() != Step) return right_aligned();
  return {};
}

QVariant StepTimesModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Step: return tr("Step");
    case Measured: return tr("Measured");
    case Predicted: return tr("Predicted");
    case Change: return tr("Change");
  }
  return {};
}

} // namespace dreamscope::gui
