#include "breakdown_models.h"

#include "format.h"

namespace dreamscope::gui {

namespace {
QVariant right_aligned() { return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter); }
} // namespace

CrossStackModel::CrossStackModel(QObject* parent) : QAbstractTableModel(parent) {}

void CrossStackModel::set_breakdown(analyzers::CrossStackBreakdown b) {
  beginResetModel();
  breakdown_ = std::move(b);
  endResetModel();
}

int CrossStackModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(breakdown_.operations.size());
}

int CrossStackModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant CrossStackModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= static_cast<int>(breakdown_.operations.size())) return {};
  const analyzers::OperationTime& op = breakdown_.operations[index.row()];
  auto time = [&](TimeNs t) -> QVariant {
    return role == SortRole ? QVariant::fromValue<qlonglong>(t) : QVariant(format_duration(t));
  };
  if (role == Qt::DisplayRole || role == SortRole) {
    switch (index.column()) {
      case Operation: return QString::fromStdString(op.name);
      case Instances: return role == SortRole ? QVariant::fromValue<qlonglong>(op.instances) : QVariant(format_count(static_cast<std::uint64_t>(op.instances)));
      case CpuFramework: return time(op.cpu_framework);
      case CudaApi: return time(op.cpu_cuda_api);
      case GpuOnly: return time(op.gpu_only);
      case Overlap: return time(op.cpu_gpu_overlap);
      case Total: return time(op.total());
    }
  }
  if (role == Qt::ToolTipRole && index.column() == Operation) return QString::fromStdString(op.name);
  if (role == Qt::TextAlignmentRole && index.column() != Operation) return right_aligned();
  return {};
}

QVariant CrossStackModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Operation: return tr("Operation");
    case Instances: return tr("Instances");
    case CpuFramework: return tr("CPU (framework)");
    case CudaApi: return tr("CPU (CUDA API)");
    case GpuOnly: return tr("GPU only");
    case Overlap: return tr("CPU + GPU");
    case Total: return tr("Total");
  }
  return {};
}

DataStallModel::DataStallModel(QObject* parent) : QAbstractTableModel(parent) {}

void DataStallModel::set_stalls(analyzers::DataStalls s) {
  beginResetModel();
  stalls_ = std::move(s);
  endResetModel();
}

int DataStallModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(stalls_.steps.size());
}

int DataStallModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant DataStallModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= static_cast<int>(stalls_.steps.size())) return {};
  const analyzers::StepDataStall& s = stalls_.steps[index.row()];
  auto time = [&](TimeNs t) -> QVariant {
    return role == SortRole ? QVariant::fromValue<qlonglong>(t) : QVariant(format_duration(t));
  };
  if (role == Qt::DisplayRole || role == SortRole) {
    switch (index.column()) {
      case Step: return QString::fromStdString(s.step);
      case Duration: return time(s.end - s.start);
      case DataWait: return time(s.data_wait);
      case Fetch: return time(s.fetch);
      case Prep: return time(s.prep);
      case Batches: return QVariant::fromValue<qlonglong>(s.batches);
      case StallShare:
        return role == SortRole ? QVariant(s.stall_fraction()) : QVariant(QStringLiteral("%1 %").arg(100 * s.stall_fraction(), 0, 'f', 1));
    }
  }
  if (role == Qt::TextAlignmentRole && index.column() != Step) return right_aligned();
  return {};
}

QVariant DataStallModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Step: return tr("Step");
    case Duration: return tr("Duration");
    case DataWait: return tr("Waiting for data");
    case Fetch: return tr("Fetch");
    case Prep: return tr("Preprocessing");
    case Batches: return tr("Batches");
    case StallShare: return tr("Stalled");
  }
  return {};
}

} // namespace dreamscope::gui
