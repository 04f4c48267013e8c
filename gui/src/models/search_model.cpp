#include "search_model.h"

#include "format.h"

#include <algorithm>

namespace dreamscope::gui {

SearchResultsModel::SearchResultsModel(QObject* parent) : QAbstractTableModel(parent) {}

void SearchResultsModel::set_results(std::shared_ptr<const TraceDocument> doc, std::vector<EventRef> events,
                                     std::size_t total) {
  beginResetModel();
  doc_ = std::move(doc);
  events_ = doc_ ? std::move(events) : std::vector<EventRef>{};
  total_ = doc_ ? total : 0;
  endResetModel();
}

void SearchResultsModel::clear() { set_results(nullptr, {}, 0); }

EventRef SearchResultsModel::event(int row) const {
  return row >= 0 && row < static_cast<int>(events_.size()) ? events_[row] : EventRef{};
}

int SearchResultsModel::row_of(EventRef e) const {
  auto it = std::find(events_.begin(), events_.end(), e);
  return it == events_.end() ? -1 : static_cast<int>(it - events_.begin());
}

int SearchResultsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(events_.size());
}

int SearchResultsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant SearchResultsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= static_cast<int>(events_.size())) return {};
  const EventRef e = events_[index.row()];
  const TraceDocument& d = *doc_;
  if (role == Qt::DisplayRole || role == Qt::ToolTipRole) {
    switch (index.column()) {
      case Name: return d.name_text(e);
      case Start: return format_duration(d.start(e) - d.trace().begin_time());
      case Duration: return format_duration(d.end(e) - d.start(e));
      case Track: return d.track_label(d.track(e));
    }
  }
  if (role == Qt::TextAlignmentRole && (index.column() == Start || index.column() == Duration)) {
    return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
  }
  return {};
}

QVariant SearchResultsModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Name: return tr("Name");
    case Start: return tr("Start");
    case Duration: return tr("Duration");
    case Track: return tr("Thread / stream");
  }
  return {};
}

} // namespace dreamscope::gui
