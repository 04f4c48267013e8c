#include "details_model.h"

#include "format.h"

#include <QFont>

namespace dreamscope::gui {

DetailsModel::DetailsModel(QObject* parent) : QAbstractTableModel(parent) {}

void DetailsModel::set_event(std::shared_ptr<const TraceDocument> doc, EventRef e) {
  beginResetModel();
  rows_.clear();
  doc_ = std::move(doc);
  event_ = doc_ ? e : EventRef{};
  counterpart_ = {};
  if (event_.valid()) {
    const TraceDocument& d = *doc_;
    const Trace& t = d.trace();
    auto add = [&](QString p, QString v, EventRef link = {}) { rows_.push_back({std::move(p), std::move(v), link}); };
    auto opt = [](std::int64_t v) { return v == kNoValue ? QStringLiteral("-") : QString::number(v); };
    const TimeNs s = d.start(e), en = d.end(e);
    const TrackId track = d.track(e);
    add(tr("name"), d.name_text(e));
    add(tr("start"), QStringLiteral("%1 (%2 ns)").arg(format_duration(s - t.begin_time())).arg(s));
    add(tr("duration"), format_duration(en - s));
    const TrackInfo& ti = t.tracks()[track];
    if (ti.kind == TrackKind::CpuThread) {
      add(tr("thread"), d.track_label(track));
      add(tr("process"), d.process_label(ti.process));
    } else {
      add(tr("stream"), d.track_label(track));
      add(tr("device"), d.device_label(ti.device));
    }
    std::int64_t correlation = kNoValue;
    switch (e.table) {
      case EventTable::CudaApi: {
        const CudaApiRecord r = t.cuda_api().row(CudaApiIndex{e.index});
        correlation = r.correlation;
        add(tr("kind"), r.kind == ApiKind::Runtime ? tr("CUDA runtime API") : tr("CUDA driver API"));
        add(tr("correlation id"), opt(r.correlation));
        add(tr("callback id"), QString::number(r.cbid));
        add(tr("result"), QString::number(r.result));
        if (r.stream != kNoValue) add(tr("stream argument"), QString::number(r.stream));
        if (correlation != kNoValue) {
          for (GpuOpIndex op : t.gpu_ops_with_correlation(correlation)) {
            const EventRef k{EventTable::GpuOp, op};
            if (!counterpart_.valid()) counterpart_ = k;
            add(tr("launched"), QStringLiteral("%1 (%2)").arg(d.name_text(k), format_duration(d.end(k) - d.start(k))), k);
          }
        }
        break;
      }
      case EventTable::GpuOp: {
        const auto& ops = t.gpu_ops();
        const GpuOpKind kind = ops.kind[e.index];
        correlation = ops.correlation[e.index];
        QString kind_text = to_qstring(to_string(kind));
        if (kind == GpuOpKind::Memcpy) kind_text += QStringLiteral(" %1").arg(to_qstring(to_string(static_cast<CopyKind>(ops.subkind[e.index]))));
        if (kind == GpuOpKind::Sync) kind_text += QStringLiteral(" (%1)").arg(to_qstring(to_string(static_cast<SyncKind>(ops.subkind[e.index]))));
        add(tr("kind"), kind_text);
        add(tr("correlation id"), opt(correlation));
        if (kind == GpuOpKind::Kernel && ops.launch[e.index] != 0) {
          const LaunchConfig& c = t.launch_configs()[ops.launch[e.index]];
          add(tr("grid"), QStringLiteral("%1 x %2 x %3").arg(c.grid[0]).arg(c.grid[1]).arg(c.grid[2]));
          add(tr("block"), QStringLiteral("%1 x %2 x %3").arg(c.block[0]).arg(c.block[1]).arg(c.block[2]));
          add(tr("registers per thread"), QString::number(c.registers_per_thread));
          add(tr("shared memory"), c.shared_memory_recorded()
                                       ? QStringLiteral("%1 B static, %2 B dynamic").arg(c.shared_memory_static).arg(c.shared_memory_dynamic)
                                       : tr("not recorded"));
        }
        if (kind == GpuOpKind::Memcpy || kind == GpuOpKind::Memset) {
          add(tr("bytes"), format_count(static_cast<std::uint64_t>(std::max<std::int64_t>(ops.bytes[e.index], 0))));
          if (kind == GpuOpKind::Memcpy && en > s) {
            add(tr("bandwidth"), QStringLiteral("%1 GB/s").arg(static_cast<double>(ops.bytes[e.index]) / static_cast<double>(en - s), 0, 'f', 2));
          }
        }
        if (correlation != kNoValue) {
          if (auto api = t.cuda_api_with_correlation(correlation)) {
            const EventRef a{EventTable::CudaApi, *api};
            counterpart_ = a;
            add(tr("launched by"), QStringLiteral("%1 on %2").arg(d.name_text(a), d.track_label(d.track(a))), a);
            add(tr("launch latency"), format_duration(s - d.start(a)));
          }
        }
        break;
      }
      case EventTable::Annotation: {
        const AnnotationRecord r = t.annotations().row(AnnotationIndex{e.index});
        const std::string_view domain = t.str(r.domain), category = t.str(r.category);
        if (!domain.empty()) add(tr("domain"), to_qstring(domain));
        if (!category.empty()) add(tr("category"), to_qstring(category));
        if (r.payload != kNoValue) add(tr("payload"), QString::number(r.payload));
        add(tr("depth"), QString::number(t.annotations().depth[e.index]));
        if (r.filled_from != kNoValue) {
          add(tr("recorded"), tr("no: counted in a probe step, copied from the step at %1 and stretched with its "
                                 "phase (times estimated)")
                                  .arg(format_duration(r.filled_from - t.begin_time())));
        }
        break;
      }
    }
    // Enclosing annotations: the parent chain for annotations, the innermost annotation
    // around the start for API calls, and around the launch for GPU ops.
    std::optional<AnnotationIndex> outer;
    if (e.table == EventTable::Annotation) {
      const AnnotationIndex p = t.annotations().parent[e.index];
      if (p != kNoIndex) outer = p;
    } else if (e.table == EventTable::CudaApi) {
      outer = t.innermost_annotation_at(track, s);
    } else if (counterpart_.valid()) {
      outer = t.innermost_annotation_at(d.track(counterpart_), d.start(counterpart_));
    }
    for (int guard = 0; outer && guard < 256; ++guard) {
      const EventRef a{EventTable::Annotation, *outer};
      add(guard == 0 ? tr("enclosed by") : QString(), d.name_text(a), a);
      const AnnotationIndex p = t.annotations().parent[*outer];
      outer = p == kNoIndex ? std::nullopt : std::optional<AnnotationIndex>(p);
    }
  }
  endResetModel();
}

EventRef DetailsModel::link(int row) const {
  return row >= 0 && row < static_cast<int>(rows_.size()) ? rows_[row].link : EventRef{};
}

int DetailsModel::row_of(const QString& name) const {
  for (int r = 0; r < static_cast<int>(rows_.size()); ++r) {
    if (rows_[r].property == name) return r;
  }
  return -1;
}

int DetailsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int DetailsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant DetailsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= static_cast<int>(rows_.size())) return {};
  const Row& r = rows_[index.row()];
  if (role == Qt::DisplayRole || role == Qt::ToolTipRole) return index.column() == Property ? r.property : r.value;
  if (role == Qt::FontRole && index.column() == Value && r.link.valid()) {
    QFont f;
    f.setUnderline(true);
    return f;
  }
  if (role == Qt::ForegroundRole && index.column() == Value && r.link.valid()) return QColor(0x1a, 0x55, 0xb0);
  return {};
}

QVariant DetailsModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  return section == Property ? tr("Property") : tr("Value");
}

} // namespace dreamscope::gui
