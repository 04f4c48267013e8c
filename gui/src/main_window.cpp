#include "main_window.h"

#include "format.h"
#include "models/details_model.h"
#include "models/kernel_table_model.h"
#include "models/search_model.h"
#include "timeline_view.h"
#include "breakdown_panel.h"
#include "whatif_panel.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStatusBar>
#include <QTimer>
#include <QToolButton>
#include <QTreeView>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

namespace dreamscope::gui {

namespace {
constexpr int kMaxRecent = 10;
const char* const kRecentKey = "recentFiles";

QSettings settings() { return QSettings(QStringLiteral("dreamscope"), QStringLiteral("dreamscope-gui")); }

QTreeView* make_table_view(QWidget* parent) {
  auto* v = new QTreeView(parent);
  v->setRootIsDecorated(false);
  v->setUniformRowHeights(true);
  v->setAlternatingRowColors(true);
  v->setSelectionBehavior(QAbstractItemView::SelectRows);
  v->setSelectionMode(QAbstractItemView::SingleSelection);
  v->setEditTriggers(QAbstractItemView::NoEditTriggers);
  return v;
}
} // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle(QStringLiteral("dreamscope"));
  setAcceptDrops(true);
  auto* timelines = new QSplitter(Qt::Vertical, this);
  timeline_ = new TimelineView(timelines);
  predicted_box_ = new QWidget(timelines);
  auto* pl = new QVBoxLayout(predicted_box_);
  pl->setContentsMargins(0, 0, 0, 0);
  pl->setSpacing(0);
  predicted_title_ = new QLabel(predicted_box_);
  predicted_title_->setContentsMargins(6, 3, 6, 3);
  predicted_title_->setStyleSheet(QStringLiteral("background: #fff4e0; font-weight: bold;"));
  predicted_timeline_ = new TimelineView(predicted_box_);
  pl->addWidget(predicted_title_);
  pl->addWidget(predicted_timeline_, 1);
  timelines->addWidget(timeline_);
  timelines->addWidget(predicted_box_);
  predicted_box_->hide();
  setCentralWidget(timelines);
  // One time axis: zooming or panning either timeline moves both (set_scale ignores a
  // scale it already has, which ends the ping-pong).
  connect(timeline_, &TimelineView::scale_changed, predicted_timeline_, [this] {
    if (predicted_box_->isVisible()) predicted_timeline_->set_scale(timeline_->scale());
  });
  connect(predicted_timeline_, &TimelineView::scale_changed, timeline_, [this] {
    if (predicted_box_->isVisible()) timeline_->set_scale(predicted_timeline_->scale());
  });
  details_ = new DetailsModel(this);
  search_results_ = new SearchResultsModel(this);
  kernels_ = new KernelTableModel(this);
  kernel_proxy_ = new QSortFilterProxyModel(this);
  kernel_proxy_->setSourceModel(kernels_);
  kernel_proxy_->setSortRole(KernelTableModel::SortRole);
  kernel_proxy_->setFilterKeyColumn(KernelTableModel::Name);
  kernel_proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);

  build_docks();
  build_menus();

  status_ = new QLabel(tr("No trace open"), this);
  progress_ = new QProgressBar(this);
  progress_->setRange(0, 1000);
  progress_->setMaximumWidth(240);
  progress_->hide();
  statusBar()->addWidget(status_, 1);
  statusBar()->addPermanentWidget(progress_);

  connect(&watcher_, &QFutureWatcher<LoadOutcome>::progressValueChanged, progress_, &QProgressBar::setValue);
  connect(&watcher_, &QFutureWatcher<LoadOutcome>::finished, this, &MainWindow::load_finished);
  connect(timeline_, &TimelineView::selection_changed, this, &MainWindow::on_selection);
  resize(1400, 860);
}

MainWindow::~MainWindow() { watcher_.waitForFinished(); }

void MainWindow::build_docks() {
  // Details of the selection.
  auto* details_dock = new QDockWidget(tr("Selection"), this);
  details_dock->setObjectName(QStringLiteral("details"));
  auto* details_box = new QWidget(details_dock);
  auto* dl = new QVBoxLayout(details_box);
  dl->setContentsMargins(2, 2, 2, 2);
  details_view_ = make_table_view(details_box);
  details_view_->setModel(details_);
  details_view_->setAlternatingRowColors(false);
  details_view_->header()->setSectionResizeMode(DetailsModel::Property, QHeaderView::ResizeToContents);
  auto* jump = new QPushButton(tr("Jump to launch / kernel (J)"), details_box);
  jump->setEnabled(false);
  connect(jump, &QPushButton::clicked, this, &MainWindow::jump_to_counterpart);
  connect(details_, &QAbstractItemModel::modelReset, jump, [this, jump] { jump->setEnabled(details_->counterpart().valid()); });
  connect(details_view_, &QTreeView::activated, this, [this](const QModelIndex& i) {
    const EventRef link = details_->link(i.row());
    if (link.valid()) timeline_->select(link, true);
  });
  dl->addWidget(details_view_);
  dl->addWidget(jump);
  details_dock->setWidget(details_box);
  addDockWidget(Qt::RightDockWidgetArea, details_dock);

  // Search.
  auto* search_dock = new QDockWidget(tr("Search"), this);
  search_dock->setObjectName(QStringLiteral("search"));
  auto* search_box = new QWidget(search_dock);
  auto* sl = new QVBoxLayout(search_box);
  sl->setContentsMargins(2, 2, 2, 2);
  auto* row = new QHBoxLayout;
  search_field_ = new QLineEdit(search_box);
  search_field_->setPlaceholderText(tr("Event name (regular expression), Enter for the next match"));
  search_field_->setClearButtonEnabled(true);
  auto* prev = new QToolButton(search_box);
  prev->setArrowType(Qt::UpArrow);
  prev->setToolTip(tr("Previous match (Shift+F3)"));
  auto* next = new QToolButton(search_box);
  next->setArrowType(Qt::DownArrow);
  next->setToolTip(tr("Next match (F3)"));
  row->addWidget(search_field_, 1);
  row->addWidget(prev);
  row->addWidget(next);
  search_status_ = new QLabel(search_box);
  search_view_ = make_table_view(search_box);
  search_view_->setModel(search_results_);
  search_view_->header()->resizeSection(SearchResultsModel::Name, 420);
  search_view_->header()->resizeSection(SearchResultsModel::Start, 110);
  search_view_->header()->resizeSection(SearchResultsModel::Duration, 110);
  sl->addLayout(row);
  sl->addWidget(search_status_);
  sl->addWidget(search_view_, 1);
  search_dock->setWidget(search_box);
  addDockWidget(Qt::BottomDockWidgetArea, search_dock);

  search_timer_ = new QTimer(this);
  search_timer_->setSingleShot(true);
  search_timer_->setInterval(250);
  connect(search_timer_, &QTimer::timeout, this, &MainWindow::run_search);
  connect(search_field_, &QLineEdit::textChanged, search_timer_, qOverload<>(&QTimer::start));
  connect(search_field_, &QLineEdit::returnPressed, this, [this] {
    if (search_timer_->isActive()) run_search();
    next_match(+1);
  });
  connect(prev, &QToolButton::clicked, this, [this] { next_match(-1); });
  connect(next, &QToolButton::clicked, this, [this] { next_match(+1); });
  connect(search_view_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& current) {
            const EventRef e = search_results_->event(current.row());
            if (e.valid() && e != timeline_->selection()) timeline_->select(e, true);
          });

  // Kernels.
  auto* kernel_dock = new QDockWidget(tr("Kernels"), this);
  kernel_dock->setObjectName(QStringLiteral("kernels"));
  auto* kernel_box = new QWidget(kernel_dock);
  auto* kl = new QVBoxLayout(kernel_box);
  kl->setContentsMargins(2, 2, 2, 2);
  kernel_filter_ = new QLineEdit(kernel_box);
  kernel_filter_->setPlaceholderText(tr("Filter kernels by name (regular expression); double-click a kernel to find its launches"));
  kernel_filter_->setClearButtonEnabled(true);
  connect(kernel_filter_, &QLineEdit::textChanged, kernel_proxy_, [this](const QString& text) {
    kernel_proxy_->setFilterRegularExpression(QRegularExpression(text, QRegularExpression::CaseInsensitiveOption));
  });
  kernel_view_ = make_table_view(kernel_box);
  kernel_view_->setModel(kernel_proxy_);
  kernel_view_->setSortingEnabled(true);
  kernel_view_->sortByColumn(KernelTableModel::Total, Qt::DescendingOrder);
  kernel_view_->header()->setStretchLastSection(false);
  kernel_view_->header()->setSectionResizeMode(KernelTableModel::Name, QHeaderView::Stretch);
  connect(kernel_view_, &QTreeView::activated, this, [this](const QModelIndex& i) {
    const QString name = kernel_proxy_->data(kernel_proxy_->index(i.row(), KernelTableModel::Name)).toString();
    search_field_->setText(QStringLiteral("^%1$").arg(QRegularExpression::escape(name)));
    run_search();
    next_match(+1);
  });
  kl->addWidget(kernel_filter_);
  kl->addWidget(kernel_view_, 1);
  kernel_dock->setWidget(kernel_box);
  addDockWidget(Qt::BottomDockWidgetArea, kernel_dock);
  tabifyDockWidget(search_dock, kernel_dock);
  auto* breakdown_dock = new QDockWidget(tr("Breakdowns"), this);
  breakdown_dock->setObjectName(QStringLiteral("breakdowns"));
  breakdowns_ = new BreakdownPanel(breakdown_dock);
  breakdown_dock->setWidget(breakdowns_);
  addDockWidget(Qt::BottomDockWidgetArea, breakdown_dock);
  tabifyDockWidget(kernel_dock, breakdown_dock);
  auto* whatif_dock = new QDockWidget(tr("What-if"), this);
  whatif_dock->setObjectName(QStringLiteral("whatif"));
  whatif_ = new WhatIfPanel(whatif_dock);
  whatif_dock->setWidget(whatif_);
  addDockWidget(Qt::BottomDockWidgetArea, whatif_dock);
  tabifyDockWidget(kernel_dock, whatif_dock);
  connect(whatif_, &WhatIfPanel::prediction_selected, this, [this](std::shared_ptr<const PredictionResult> p) {
    if (!p || !p->predicted) {
      predicted_box_->hide();
      predicted_timeline_->set_document(nullptr);
      return;
    }
    predicted_title_->setText(tr("Predicted: %1   step %2 (measured %3), speedup %4")
                                  .arg(QString::fromStdString(p->prediction.label),
                                       format_duration(static_cast<TimeNs>(p->prediction.step_median)),
                                       format_duration(static_cast<TimeNs>(p->measured_step_median)))
                                  .arg(format_speedup(p->prediction.speedup)));
    // A new document fits itself, which would drag the measured view along: keep the
    // measured view's range for both.
    const TimeScale keep = timeline_->scale();
    predicted_timeline_->set_document(p->predicted);
    predicted_box_->show();
    timeline_->set_scale(keep);
    predicted_timeline_->set_scale(keep);
  });
  search_dock->raise();
  resizeDocks({details_dock}, {380}, Qt::Horizontal);
  resizeDocks({search_dock}, {230}, Qt::Vertical);
}

void MainWindow::build_menus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  QAction* open = file->addAction(tr("&Open..."), this, &MainWindow::open_dialog);
  open->setShortcut(QKeySequence::Open);
  recent_menu_ = file->addMenu(tr("Open &Recent"));
  rebuild_recent_menu();
  file->addSeparator();
  QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence::Quit);

  QMenu* view = menuBar()->addMenu(tr("&View"));
  QAction* fit = view->addAction(tr("&Fit all"), timeline_, &TimelineView::fit_all);
  fit->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_0));
  QAction* zin = view->addAction(tr("Zoom &in"), this, [this] { timeline_->zoom(2, TimelineView::time_area_width(timeline_->viewport()->width()) / 2.0); });
  zin->setShortcut(QKeySequence::ZoomIn);
  QAction* zout = view->addAction(tr("Zoom &out"), this, [this] { timeline_->zoom(0.5, TimelineView::time_area_width(timeline_->viewport()->width()) / 2.0); });
  zout->setShortcut(QKeySequence::ZoomOut);
  view->addSeparator();
  QAction* jump = view->addAction(tr("&Jump to launch / kernel"), this, &MainWindow::jump_to_counterpart);
  jump->setShortcut(QKeySequence(Qt::Key_J));
  QAction* find = view->addAction(tr("&Find..."), this, [this] {
    search_field_->setFocus();
    search_field_->selectAll();
  });
  find->setShortcut(QKeySequence::Find);
  QAction* next = view->addAction(tr("Find &next"), this, [this] { next_match(+1); });
  next->setShortcut(QKeySequence::FindNext);
  QAction* prev = view->addAction(tr("Find &previous"), this, [this] { next_match(-1); });
  prev->setShortcut(QKeySequence::FindPrevious);

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&Mouse and keys"), this, [this] {
    QMessageBox::information(
        this, tr("Mouse and keys"),
        tr("<b>Timeline</b><br>"
           "Wheel: zoom at the cursor &nbsp; Shift+wheel: scroll rows<br>"
           "Left-drag: pan &nbsp; Right-drag, Ctrl+drag or drag on the ruler: zoom to a range<br>"
           "Click: select &nbsp; Double-click: zoom to the event &nbsp; Click a group header: collapse it<br>"
           "+ / W, - / S: zoom &nbsp; Left / A, Right / D: pan &nbsp; F / Home: fit all &nbsp; Esc: clear the selection<br>"
           "<b>Elsewhere</b><br>"
           "Ctrl+F: search &nbsp; F3 / Shift+F3: next / previous match &nbsp; J: jump between a launch and its kernel<br>"
           "Double-click a linked detail to go to it; double-click a kernel to find its launches."));
  });
}

void MainWindow::open_dialog() {
  const QStringList recent = recent_files();
  const QString dir = recent.isEmpty() ? QString() : QFileInfo(recent.front()).absolutePath();
  const QString path = QFileDialog::getOpenFileName(
      this, tr("Open trace"), dir,
      tr("Traces (*.db *.sqlite *.json *.json.gz *.gz);;All files (*)"));
  if (!path.isEmpty()) open_file(path);
}

void MainWindow::open_file(const QString& path) { open_files({path}); }

void MainWindow::open_files(const QStringList& inputs) {
  if (inputs.isEmpty()) return;
  if (loading_) {
    statusBar()->showMessage(tr("Still loading %1").arg(loading_path_), 4000);
    return;
  }
  loading_path_ = inputs.size() == 1 ? inputs.front() : tr("%1 and %2 more").arg(inputs.front()).arg(inputs.size() - 1);
  loading_ = true;
  status_->setText(tr("Loading %1 ...").arg(loading_path_));
  progress_->setValue(0);
  progress_->show();
  std::vector<std::string> files;
  for (const QString& input : inputs) files.push_back(input.toStdString());
  watcher_.setFuture(QtConcurrent::run([files = std::move(files)](QPromise<LoadOutcome>& promise) {
    promise.setProgressRange(0, 1000);
    LoadOutcome out = load_document(files, [&](double f) { promise.setProgressValue(static_cast<int>(f * 1000)); });
    promise.addResult(std::move(out));
  }));
}

void MainWindow::load_finished() {
  loading_ = false;
  progress_->hide();
  const LoadOutcome out = watcher_.future().resultCount() > 0 ? watcher_.result() : LoadOutcome{};
  if (!out.document) {
    last_error_ = out.error.isEmpty() ? tr("%1: the trace could not be loaded").arg(loading_path_) : out.error;
    status_->setText(tr("Could not open %1").arg(loading_path_));
    // Not exec(): a modal loop here would stall tests and scripted use; the box still
    // blocks the window until dismissed.
    auto* box = new QMessageBox(QMessageBox::Critical, tr("Cannot open trace"), last_error_, QMessageBox::Ok, this);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->setObjectName(QStringLiteral("load-error"));
    box->open();
    emit load_failed(last_error_);
    return;
  }
  last_error_.clear();
  set_document(out.document);
  remember_recent(loading_path_);
  status_->setText(tr("%1: %2 events, %3 tracks, loaded in %4 s")
                       .arg(loading_path_, format_count(out.document->trace().event_count()))
                       .arg(out.document->trace().tracks().size())
                       .arg(out.seconds, 0, 'f', 2));
  emit loaded(loading_path_);
}

void MainWindow::set_document(std::shared_ptr<const TraceDocument> doc) {
  doc_ = std::move(doc);
  search_results_->clear();
  search_status_->clear();
  kernels_->set_document(doc_);
  kernel_view_->scrollToTop();
  timeline_->set_document(doc_);
  predicted_box_->hide();
  predicted_timeline_->set_document(nullptr);
  if (breakdowns_) breakdowns_->set_document(doc_);
  whatif_->set_document(doc_);
  const QString name = doc_ && !doc_->path().isEmpty() ? QFileInfo(doc_->path()).fileName() : tr("(in memory)");
  setWindowTitle(doc_ ? QStringLiteral("%1 - dreamscope").arg(name) : QStringLiteral("dreamscope"));
  if (doc_ && !search_field_->text().isEmpty()) run_search();
}

void MainWindow::run_search() {
  search_timer_->stop();
  const QString text = search_field_->text();
  if (!doc_ || text.isEmpty()) {
    search_results_->clear();
    timeline_->set_matched_names({});
    search_status_->clear();
    return;
  }
  const QRegularExpression re(text, QRegularExpression::CaseInsensitiveOption);
  if (!re.isValid()) {
    search_status_->setText(tr("Not a valid regular expression: %1").arg(re.errorString()));
    return;
  }
  // The regex runs once per distinct name, not per event.
  const auto& strings = doc_->trace().strings();
  std::vector<bool> matched(strings.size(), false);
  for (std::size_t s = 1; s < strings.size(); ++s) matched[s] = re.match(to_qstring(strings[s])).hasMatch();
  std::size_t total = 0;
  std::vector<EventRef> found = find_events(*doc_, matched, SearchResultsModel::kMaxRows, &total);
  search_results_->set_results(doc_, std::move(found), total);
  // With nothing matched, dimming every event would only hide the trace.
  timeline_->set_matched_names(total ? std::move(matched) : std::vector<bool>{});
  if (total == 0) search_status_->setText(tr("No match"));
  else if (total > SearchResultsModel::kMaxRows)
    search_status_->setText(tr("%1 matches; listing the first %2").arg(format_count(total), format_count(SearchResultsModel::kMaxRows)));
  else search_status_->setText(tr("%1 matches").arg(format_count(total)));
}

void MainWindow::next_match(int direction) {
  const int n = search_results_->rowCount();
  if (n == 0) return;
  int row = search_view_->currentIndex().isValid() ? search_view_->currentIndex().row() : -1;
  // Continue from the timeline's selection when it is one of the matches.
  if (const int at = search_results_->row_of(timeline_->selection()); at >= 0) row = at;
  row = row < 0 ? (direction > 0 ? 0 : n - 1) : ((row + direction) % n + n) % n;
  search_view_->setCurrentIndex(search_results_->index(row, 0));
}

void MainWindow::jump_to_counterpart() {
  if (details_->counterpart().valid()) timeline_->select(details_->counterpart(), true);
}

void MainWindow::on_selection(EventRef e) {
  details_->set_event(doc_, e);
  details_view_->resizeColumnToContents(DetailsModel::Property);
  const int row = search_results_->row_of(e);
  if (row >= 0 && search_view_->currentIndex().row() != row) search_view_->setCurrentIndex(search_results_->index(row, 0));
}

QStringList MainWindow::recent_files() { return settings().value(kRecentKey).toStringList(); }

void MainWindow::remember_recent(const QString& path) {
  const QString absolute = QFileInfo(path).absoluteFilePath();
  QStringList list = recent_files();
  list.removeAll(absolute);
  list.prepend(absolute);
  while (list.size() > kMaxRecent) list.removeLast();
  settings().setValue(kRecentKey, list);
  rebuild_recent_menu();
}

void MainWindow::rebuild_recent_menu() {
  recent_menu_->clear();
  const QStringList list = recent_files();
  for (const QString& path : list) {
    recent_menu_->addAction(path, this, [this, path] { open_file(path); });
  }
  recent_menu_->setEnabled(!list.isEmpty());
}

void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
  const QList<QUrl> urls = e->mimeData()->urls();
  if (!urls.isEmpty() && urls.front().isLocalFile()) e->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* e) {
  const QList<QUrl> urls = e->mimeData()->urls();
  if (!urls.isEmpty() && urls.front().isLocalFile()) {
    e->acceptProposedAction();
    // Several files dropped at once are the ranks of one job.
    QStringList files;
    for (const QUrl& url : urls) {
      if (url.isLocalFile()) files << url.toLocalFile();
    }
    open_files(files);
  }
}

void MainWindow::closeEvent(QCloseEvent* e) {
  // The reader cannot be interrupted; a close during a load waits for it.
  watcher_.waitForFinished();
  QMainWindow::closeEvent(e);
}

} // namespace dreamscope::gui
