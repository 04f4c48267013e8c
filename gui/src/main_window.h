// The application window: the timeline in the middle, docks for the selection's details,
// the search and the kernel table. Files open from the menu, the command line, drag and
// drop and the recent-files list; loading runs on a worker thread (QtConcurrent) while the
// window stays responsive, and a file that cannot be read gets a dialog naming the problem.
#pragma once

#include "trace_document.h"

#include <QFutureWatcher>
#include <QMainWindow>
#include <QRegularExpression>

#include <memory>

class QLabel;
class QLineEdit;
class QMenu;
class QProgressBar;
class QSortFilterProxyModel;
class QTreeView;

namespace dreamscope::gui {

class BreakdownPanel;
class DetailsModel;
class WhatIfPanel;
class KernelTableModel;
class SearchResultsModel;
class TimelineView;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Starts loading `path` in the background; loaded() or load_failed() follows.
  void open_file(const QString& path);
  // A distributed job: several trace files (one per rank), a folder of them, or a glob.
  void open_files(const QStringList& inputs);
  // Shows a trace already in memory (tests, what-if results).
  void set_document(std::shared_ptr<const TraceDocument> doc);
  const TraceDocument* document() const { return doc_.get(); }
  // From open_file() until the result is shown: the reader may have finished while its result
  // waits in the event loop, and until then the window is still loading.
  bool loading() const { return loading_; }

  TimelineView* timeline() const { return timeline_; }
  // The predicted run of the selected what-if, under the measured one on the same time
  // axis; hidden until there is one.
  TimelineView* predicted_timeline() const { return predicted_timeline_; }
  // nullptr when built without the analyzers / the what-if engine.
  BreakdownPanel* breakdowns() const { return breakdowns_; }
  WhatIfPanel* whatif() const { return whatif_; }
  DetailsModel* details() const { return details_; }
  SearchResultsModel* search_results() const { return search_results_; }
  KernelTableModel* kernels() const { return kernels_; }
  QSortFilterProxyModel* kernel_proxy() const { return kernel_proxy_; }
  QLineEdit* search_field() const { return search_field_; }
  QLineEdit* kernel_filter() const { return kernel_filter_; }
  const QString& last_error() const { return last_error_; }

  // Runs the search in the field now (the field also searches as you type, debounced).
  void run_search();
  void next_match(int direction);
  // Selects the launch of the selected GPU op, or the kernel of the selected launch.
  void jump_to_counterpart();

  static QStringList recent_files();

 signals:
  void loaded(const QString& path);
  void load_failed(const QString& message);

 protected:
  void dragEnterEvent(QDragEnterEvent* e) override;
  void dropEvent(QDropEvent* e) override;
  void closeEvent(QCloseEvent* e) override;

 private:
  void build_menus();
  void build_docks();
  void open_dialog();
  void load_finished();
  void remember_recent(const QString& path);
  void rebuild_recent_menu();
  void on_selection(EventRef e);

  std::shared_ptr<const TraceDocument> doc_;
  QFutureWatcher<LoadOutcome> watcher_;
  bool loading_ = false;
  QString loading_path_;
  QString last_error_;

  TimelineView* timeline_ = nullptr;
  TimelineView* predicted_timeline_ = nullptr;
  QWidget* predicted_box_ = nullptr;
  QLabel* predicted_title_ = nullptr;
  BreakdownPanel* breakdowns_ = nullptr;
  WhatIfPanel* whatif_ = nullptr;
  DetailsModel* details_ = nullptr;
  SearchResultsModel* search_results_ = nullptr;
  KernelTableModel* kernels_ = nullptr;
  QSortFilterProxyModel* kernel_proxy_ = nullptr;
  QTreeView* details_view_ = nullptr;
  QTreeView* search_view_ = nullptr;
  QTreeView* kernel_view_ = nullptr;
  QLineEdit* search_field_ = nullptr;
  QLabel* search_status_ = nullptr;
  QLineEdit* kernel_filter_ = nullptr;
  QMenu* recent_menu_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QLabel* status_ = nullptr;
  QTimer* search_timer_ = nullptr;
};

} // namespace dreamscope::gui
