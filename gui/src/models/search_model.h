// Events whose name matches the search, earliest first, one per row.
#pragma once

#include "trace_document.h"

#include <QAbstractTableModel>

#include <memory>
#include <vector>

namespace dreamscope::gui {

class SearchResultsModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { Name, Start, Duration, Track, ColumnCount };
  // More rows than this help nobody step through them; the count of all matches is kept.
  static constexpr std::size_t kMaxRows = 100000;

  explicit SearchResultsModel(QObject* parent = nullptr);

  void set_results(std::shared_ptr<const TraceDocument> doc, std::vector<EventRef> events, std::size_t total);
  void clear();
  EventRef event(int row) const;
  int row_of(EventRef e) const;
  std::size_t total_matches() const { return total_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  std::shared_ptr<const TraceDocument> doc_;
  std::vector<EventRef> events_;
  std::size_t total_ = 0;
};

} // namespace dreamscope::gui
