// Tables of the analyzers' results: the cross-stack breakdown per operation (RL-Scope) and
// the data stalls per step. Qt::UserRole holds raw numbers for numeric sorting.
#pragma once

#include <dreamscope/analyzers/pipeline.h>

#include <QAbstractTableModel>

namespace dreamscope::gui {

class CrossStackModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { Operation, Instances, CpuFramework, CudaApi, GpuOnly, Overlap, Total, ColumnCount };
  static constexpr int SortRole = Qt::UserRole;

  explicit CrossStackModel(QObject* parent = nullptr);
  void set_breakdown(analyzers::CrossStackBreakdown b);
  const analyzers::CrossStackBreakdown& breakdown() const { return breakdown_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  analyzers::CrossStackBreakdown breakdown_;
};

class DataStallModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { Step, Duration, DataWait, Fetch, Prep, Batches, StallShare, ColumnCount };
  static constexpr int SortRole = Qt::UserRole;

  explicit DataStallModel(QObject* parent = nullptr);
  void set_stalls(analyzers::DataStalls s);
  const analyzers::DataStalls& stalls() const { return stalls_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  analyzers::DataStalls stalls_;
};

} // namespace dreamscope::gui
