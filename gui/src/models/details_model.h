// The selected event as property/value rows. Rows that name another event (the launch of
// a kernel, the kernels of a launch, the enclosing annotations) carry it in link(row), so
// the details view can jump there.
#pragma once

#include "trace_document.h"

#include <QAbstractTableModel>

#include <memory>
#include <vector>

namespace dreamscope::gui {

class DetailsModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { Property, Value, ColumnCount };

  explicit DetailsModel(QObject* parent = nullptr);

  void set_event(std::shared_ptr<const TraceDocument> doc, EventRef e);
  EventRef event() const { return event_; }
  EventRef link(int row) const;
  // The launch of a GPU op, or the first GPU op of a launch: what "jump" goes to.
  EventRef counterpart() const { return counterpart_; }
  // The row whose property is `name`, or -1 (for tests and the details view).
  int row_of(const QString& name) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  struct Row {
    QString property;
    QString value;
    EventRef link;
  };
  std::vector<Row> rows_;
  std::shared_ptr<const TraceDocument> doc_;
  EventRef event_;
  EventRef counterpart_;
};

} // namespace dreamscope::gui
