// One row per kernel name: launches, total, mean, min and max time, share of all kernel
// time. Qt::UserRole holds the raw number of each cell, so a QSortFilterProxyModel with
// sortRole = Qt::UserRole sorts numerically.
#pragma once

#include "trace_document.h"

#include <QAbstractTableModel>

#include <memory>

namespace dreamscope::gui {

class KernelTableModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { Name, Count, Total, Mean, Min, Max, Share, ColumnCount };
  static constexpr int SortRole = Qt::UserRole;

  explicit KernelTableModel(QObject* parent = nullptr);

  void set_document(std::shared_ptr<const TraceDocument> doc);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  std::shared_ptr<const TraceDocument> doc_;
};

} // namespace dreamscope::gui
