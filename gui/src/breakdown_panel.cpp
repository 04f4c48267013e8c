#include "breakdown_panel.h"

#include "format.h"
#include "models/breakdown_models.h"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QHeaderView>
#include <QHorizontalStackedBarSeries>
#include <QLabel>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStackedBarSeries>
#include <QTabWidget>
#include <QTreeView>
#include <QValueAxis>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>

namespace dreamscope::gui {

namespace {

// Milliseconds: what the bars' axis shows.
double ms(TimeNs t) { return static_cast<double>(t) / 1e6; }

QTreeView* sortable_table(QAbstractItemModel* model, int sort_role, int sort_column, QWidget* parent) {
  auto* proxy = new QSortFilterProxyModel(parent);
  proxy->setSourceModel(model);
  proxy->setSortRole(sort_role);
  auto* view = new QTreeView(parent);
  view->setModel(proxy);
  view->setRootIsDecorated(false);
  view->setUniformRowHeights(true);
  view->setAlternatingRowColors(true);
  view->setSortingEnabled(true);
  view->sortByColumn(sort_column, sort_column == 0 ? Qt::AscendingOrder : Qt::DescendingOrder);
  view->header()->setSectionResizeMode(0, QHeaderView::Stretch);
  view->header()->setStretchLastSection(false);
  return view;
}

QChartView* chart_view(QWidget* parent) {
  auto* chart = new QChart;
  chart->legend()->setAlignment(Qt::AlignBottom);
  chart->setMargins(QMargins(4, 4, 4, 4));
  auto* v = new QChartView(chart, parent);
  v->setRenderHint(QPainter::Antialiasing, true);
  v->setMinimumHeight(220);
  return v;
}

// Qt Charts computes NaN bounds for an empty series; give it a range of its own.
void fit_axis(QValueAxis* axis, double max_value) {
  axis->setRange(0, max_value > 0 ? max_value : 1.0);
  if (max_value > 0) axis->applyNiceNumbers();
}

const QColor kSegmentColors[] = {QColor(0x4e, 0x79, 0xa7), QColor(0xf2, 0x8e, 0x2b), QColor(0x59, 0xa1, 0x4f),
                                 QColor(0xb0, 0x7a, 0xa1), QColor(0xe1, 0x57, 0x59), QColor(0x76, 0xb7, 0xb2),
                                 QColor(0xed, 0xc9, 0x48), QColor(0x9c, 0x75, 0x5f)};

} // namespace

TraceAnalysis analyze_trace(const Trace& trace) {
  TraceAnalysis a;
  try {
    a.cross_stack = analyzers::cross_stack_breakdown(trace);
    a.steps = analyzers::step_breakdown(trace);
    a.stalls = analyzers::data_stalls(trace);
  } catch (const std::exception& e) {
    a.error = QString::fromUtf8(e.what());
  }
  return a;
}

BreakdownPanel::BreakdownPanel(QWidget* parent) : QWidget(parent) {
  cross_stack_ = new CrossStackModel(this);
  stalls_ = new DataStallModel(this);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  status_ = new QLabel(tr("No trace open"), this);
  layout->addWidget(status_);
  auto* tabs = new QTabWidget(this);
  layout->addWidget(tabs, 1);

  auto* ops = new QSplitter(Qt::Horizontal, tabs);
  operation_chart_ = chart_view(ops);
  ops->addWidget(operation_chart_);
  ops->addWidget(sortable_table(cross_stack_, CrossStackModel::SortRole, CrossStackModel::Total, ops));
  operation_chart_->setMinimumWidth(420);
  ops->setSizes({700, 600});
  tabs->addTab(ops, tr("Per operation"));

  step_chart_ = chart_view(tabs);
  tabs->addTab(step_chart_, tr("Steps"));

  auto* stall_box = new QWidget(tabs);
  auto* sl = new QVBoxLayout(stall_box);
  sl->setContentsMargins(0, 0, 0, 0);
  stall_summary_ = new QLabel(stall_box);
  stall_summary_->setWordWrap(true);
  sl->addWidget(stall_summary_);
  sl->addWidget(sortable_table(stalls_, DataStallModel::SortRole, DataStallModel::Step, stall_box), 1);
  tabs->addTab(stall_box, tr("Data stalls"));
}

void BreakdownPanel::set_document(std::shared_ptr<const TraceDocument> doc) {
  doc_ = std::move(doc);
  show_analysis(TraceAnalysis{});
  if (!doc_) {
    status_->setText(tr("No trace open"));
    return;
  }
  status_->setText(tr("Analyzing ..."));
  // Heavy views are built off the GUI thread (hotspot's pattern); a result for a trace
  // that is no longer shown is dropped.
  std::weak_ptr<const TraceDocument> expected = doc_;
  QtConcurrent::run([doc = doc_] { return analyze_trace(doc->trace()); })
      .then(this, [this, expected](TraceAnalysis a) {
        if (expected.lock() != doc_) return;
        show_analysis(a);
      });
}

void BreakdownPanel::show_analysis(const TraceAnalysis& a) {
  cross_stack_->set_breakdown(a.cross_stack);
  stalls_->set_stalls(a.stalls);
  status_->setText(a.error.isEmpty() ? QString() : tr("Analysis failed: %1").arg(a.error));
  status_->setVisible(!status_->text().isEmpty());

  // Per operation: the largest first, at the top of the chart.
  {
    QChart* chart = operation_chart_->chart();
    chart->removeAllSeries();
    for (QAbstractAxis* axis : chart->axes()) chart->removeAxis(axis);
    auto* series = new QHorizontalStackedBarSeries;
    const char* names[] = {"CPU (framework)", "CPU (CUDA API)", "GPU only", "CPU + GPU"};
    QBarSet* sets[4];
    for (int i = 0; i < 4; ++i) {
      sets[i] = new QBarSet(tr(names[i]));
      sets[i]->setColor(kSegmentColors[i]);
      series->append(sets[i]);
    }
    const auto& ops = a.cross_stack.operations;
    const int shown = std::min<int>(kChartOperations, static_cast<int>(ops.size()));
    analyzers::OperationTime other;
    for (int i = shown; i < static_cast<int>(ops.size()); ++i) {
      other.cpu_framework += ops[i].cpu_framework;
      other.cpu_cuda_api += ops[i].cpu_cuda_api;
      other.gpu_only += ops[i].gpu_only;
      other.cpu_gpu_overlap += ops[i].cpu_gpu_overlap;
    }
    QStringList categories;
    auto add = [&](const analyzers::OperationTime& op, QString label) {
      *sets[0] << ms(op.cpu_framework);
      *sets[1] << ms(op.cpu_cuda_api);
      *sets[2] << ms(op.gpu_only);
      *sets[3] << ms(op.cpu_gpu_overlap);
      if (label.size() > 30) label = label.left(28) + QStringLiteral("...");
      categories << label;
    };
    if (static_cast<int>(ops.size()) > shown) add(other, tr("(%1 others)").arg(ops.size() - shown));
    for (int i = shown - 1; i >= 0; --i) add(ops[i], QString::fromStdString(ops[i].name));
    chart->addSeries(series);
    auto* y = new QBarCategoryAxis;
    y->append(categories);
    y->setTruncateLabels(false);
    chart->addAxis(y, Qt::AlignLeft);
    series->attachAxis(y);
    auto* x = new QValueAxis;
    x->setTitleText(tr("ms"));
    x->setLabelFormat(QStringLiteral("%.3g"));
    chart->addAxis(x, Qt::AlignBottom);
    series->attachAxis(x);
    fit_axis(x, std::max(ms(other.total()), ops.empty() ? 0.0 : ms(ops.front().total())));
    chart->setTitle(ops.empty() ? tr("No operations (no annotations on CPU threads)")
                                : tr("Cross-stack time per operation"));
  }

  // Steps in TensorBoard's categories.
  {
    QChart* chart = step_chart_->chart();
    chart->removeAllSeries();
    for (QAbstractAxis* axis : chart->axes()) chart->removeAxis(axis);
    auto* series = new QStackedBarSeries;
    const auto& steps = a.steps.steps;
    // Past a hundred steps the bars are too thin to read; the first hundred stand for them.
    const std::size_t shown = std::min<std::size_t>(steps.size(), 100);
    for (std::size_t c = 0; c < analyzers::kStepCategories; ++c) {
      const std::string_view name = analyzers::to_string(static_cast<analyzers::StepCategory>(c));
      auto* set = new QBarSet(to_qstring(name));
      set->setColor(kSegmentColors[c % std::size(kSegmentColors)]);
      for (std::size_t s = 0; s < shown; ++s) *set << ms(steps[s].time[c]);
      series->append(set);
    }
    QStringList categories;
    for (std::size_t s = 0; s < shown; ++s) categories << QString::fromStdString(steps[s].name);
    chart->addSeries(series);
    auto* x = new QBarCategoryAxis;
    x->append(categories);
    x->setLabelsAngle(categories.size() > 8 ? -60 : 0);
    chart->addAxis(x, Qt::AlignBottom);
    series->attachAxis(x);
    auto* y = new QValueAxis;
    y->setTitleText(tr("ms"));
    y->setLabelFormat(QStringLiteral("%.3g"));
    chart->addAxis(y, Qt::AlignLeft);
    series->attachAxis(y);
    double longest = 0;
    for (std::size_t st = 0; st < shown; ++st) longest = std::max(longest, ms(steps[st].duration()));
    fit_axis(y, longest);
    chart->setTitle(steps.empty() ? tr("No steps") : tr("Step time by category (TensorBoard's breakdown)"));
  }

  const analyzers::DataStalls& st = a.stalls;
  if (st.steps.empty()) {
    stall_summary_->setText(tr("No data-loading annotations or DataLoader operators in this trace."));
  } else {
    const double share = st.total_time ? 100.0 * static_cast<double>(st.total_wait) / static_cast<double>(st.total_time) : 0;
    stall_summary_->setText(tr("Training waited %1 for data in %2 of step time (%3 %), from %4.")
                                .arg(format_duration(st.total_wait), format_duration(st.total_time))
                                .arg(share, 0, 'f', 1)
                                .arg(QString::fromStdString(st.source)));
  }
  emit analysis_shown();
}

} // namespace dreamscope::gui
