#include "kernel_table_model.h"

#include "format.h"

namespace dreamscope::gui {

KernelTableModel::KernelTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void KernelTableModel::set_document(std::shared_ptr<const TraceDocument> doc) {
  beginResetModel();
  doc_ = std::move(doc);
  endResetModel();
}

int KernelTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || !doc_ ? 0 : static_cast<int>(doc_->kernel_stats().size());
}

int KernelTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant KernelTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !doc_ || index.row() >= static_cast<int>(doc_->kernel_stats().size())) return {};
  const KernelStats& k = doc_->kernel_stats()[index.row()];
  const TimeNs mean = k.count ? k.total / static_cast<TimeNs>(k.count) : 0;
  const double share = doc_->total_gpu_time() ? 100.0 * static_cast<double>(k.total) / static_cast<double>(doc_->total_gpu_time()) : 0.0;
  if (role == SortRole) {
    switch (index.column()) {
      case Name: return to_qstring(doc_->trace().str(k.name));
      case Count: return QVariant::fromValue<qulonglong>(k.count);
      case Total: return QVariant::fromValue<qlonglong>(k.total);
      case Mean: return QVariant::fromValue<qlonglong>(mean);
      case Min: return QVariant::fromValue<qlonglong>(k.min);
      case Max: return QVariant::fromValue<qlonglong>(k.max);
      case Share: return share;
    }
  }
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case Name: return to_qstring(doc_->trace().str(k.name));
      case Count: return format_count(k.count);
      case Total: return format_duration(k.total);
      case Mean: return format_duration(mean);
      case Min: return format_duration(k.min);
      case Max: return format_duration(k.max);
      case Share: return QStringLiteral("%1 %").arg(share, 0, 'f', 1);
    }
  }
  if (role == Qt::ToolTipRole && index.column() == Name) return to_qstring(doc_->trace().str(k.name));
  if (role == Qt::TextAlignmentRole && index.column() != Name) return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
  return {};
}

QVariant KernelTableModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Name: return tr("Kernel");
    case Count: return tr("Launches");
    case Total: return tr("Total");
    case Mean: return tr("Mean");
    case Min: return tr("Min");
    case Max: return tr("Max");
    case Share: return tr("% of kernel time");
  }
  return {};
}

} // namespace dreamscope::gui
