#include "trace_document.h"

#include <dreamscope/storage/trace_file.h>
#include <dreamscope/storage/importers.h>
#include <dreamscope/storage/job.h>

#include <QHash>

#include <algorithm>
#include <chrono>
#include <exception>
#include <new>
#include <unordered_map>

namespace dreamscope::gui {

namespace {

// Hues spread by the name's text, so a kernel keeps its colour across traces and runs.
QRgb color_for_name(std::string_view name) {
  const std::size_t h = qHash(QByteArrayView(name.data(), static_cast<qsizetype>(name.size())), 0x5eed);
  const int hue = static_cast<int>(h % 360);
  const int sat = 110 + static_cast<int>((h >> 12) % 70);
  const int val = 190 + static_cast<int>((h >> 20) % 50);
  return QColor::fromHsv(hue, sat, val).rgb();
}

// The columns by reference: taken by value, each lane copied two whole columns of its table.
template <class Column>
TimeNs longest(const Lane& lane, const Column& start, const Column& end) {
  TimeNs m = 0;
  for (std::size_t k = 0; k < lane.size(); ++k) {
    const std::uint32_t i = lane.at(k);
    m = std::max(m, end[i] - start[i]);
  }
  return m;
}

} // namespace

TraceDocument::TraceDocument(Trace trace, QString path, const std::function<void(double)>& progress)
    : trace_(std::move(trace)), path_(std::move(path)) {
  const auto& tracks = trace_.tracks();
  const auto& ann = trace_.annotations();
  const auto& api = trace_.cuda_api();
  const auto& ops = trace_.gpu_ops();
  lanes_.resize(tracks.size());
  cpu_load_.resize(tracks.size());
  for (const ThreadLoadRecord& l : trace_.thread_loads()) {
    // A window the thread did not run in has nothing to draw; one of unknown CPU time neither.
    if (l.track >= tracks.size() || l.cpu_ns == kNoValue || l.cpu_ns <= 0 || l.end <= l.start) continue;
    const double share = static_cast<double>(l.cpu_ns) / static_cast<double>(l.end - l.start);
    cpu_load_[l.track].push_back(CpuLoadWindow{l.start, l.end, std::clamp(share, 0.0, 1.0)});
  }
  for (auto& windows : cpu_load_) {
    std::sort(windows.begin(), windows.end(), [](const CpuLoadWindow& a, const CpuLoadWindow& b) { return a.start < b.start; });
  }
  for (TrackId t{0}; t < tracks.size(); ++t) {
    TrackLanes& tl = lanes_[t];
    const EventRange ar = trace_.annotations_on(t);
    if (!ar.empty()) {
      int max_depth = 0;
      for (auto i = ar.begin; i < ar.end; ++i) max_depth = std::max<int>(max_depth, ann.depth[i]);
      tl.annotation_lanes = max_depth + 1;
      for (int d = 0; d <= max_depth; ++d) {
        Lane lane{.table = EventTable::Annotation, .label = QStringLiteral("depth %1").arg(d)};
        if (max_depth == 0) {
          lane.range = {ar.begin, ar.end};
        }
        tl.lanes.push_back(std::move(lane));
      }
      if (max_depth > 0) {
        for (auto i = ar.begin; i < ar.end; ++i) tl.lanes[ann.depth[i]].rows.push_back(i);
      }
      for (auto& lane : tl.lanes) lane.max_duration = longest(lane, ann.start, ann.end);
    }
    const EventRange cr = trace_.cuda_api_on(t);
    if (!cr.empty()) {
      std::size_t drivers = 0;
      for (auto i = cr.begin; i < cr.end; ++i) drivers += api.kind[i] == ApiKind::Driver;
      tl.api_lane = static_cast<int>(tl.lanes.size());
      // The runtime calls the driver inside its own calls: one lane each keeps both visible.
      tl.api_split = drivers != 0 && drivers != cr.size();
      if (!tl.api_split) {
        tl.lanes.push_back(Lane{.table = EventTable::CudaApi,
                                .range = {cr.begin, cr.end},
                                .label = drivers ? QStringLiteral("driver") : QStringLiteral("CUDA API")});
      } else {
        Lane runtime{.table = EventTable::CudaApi, .label = QStringLiteral("runtime")};
        Lane driver{.table = EventTable::CudaApi, .label = QStringLiteral("driver")};
        for (auto i = cr.begin; i < cr.end; ++i) (api.kind[i] == ApiKind::Driver ? driver : runtime).rows.push_back(i);
        tl.lanes.push_back(std::move(runtime));
        tl.lanes.push_back(std::move(driver));
      }
      for (std::size_t l = tl.api_lane; l < tl.lanes.size(); ++l) tl.lanes[l].max_duration = longest(tl.lanes[l], api.start, api.end);
    }
    const EventRange gr = trace_.gpu_ops_on(t);
    if (!gr.empty()) {
      tl.gpu_lane = static_cast<int>(tl.lanes.size());
      Lane lane{.table = EventTable::GpuOp, .range = {gr.begin, gr.end}, .label = QStringLiteral("GPU")};
      lane.max_duration = longest(lane, ops.start, ops.end);
      tl.lanes.push_back(std::move(lane));
    }
    tl.events = ar.size() + cr.size() + gr.size();
    if (progress) progress(0.8 * (t + 1) / static_cast<double>(tracks.size()));
  }

  const auto& strings = trace_.strings();
  name_colors_.resize(strings.size());
  for (std::size_t s = 0; s < strings.size(); ++s) name_colors_[s] = color_for_name(strings[s]);

  std::unordered_map<StringId, std::size_t> by_name;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops.kind[i] != GpuOpKind::Kernel) continue;
    const TimeNs d = ops.end[i] - ops.start[i];
    total_gpu_time_ += d;
    auto [it, fresh] = by_name.try_emplace(ops.name[i], kernel_stats_.size());
    if (fresh) kernel_stats_.push_back(KernelStats{.name = ops.name[i], .min = d, .max = d});
    KernelStats& k = kernel_stats_[it->second];
    ++k.count;
    k.total += d;
    k.min = std::min(k.min, d);
    k.max = std::max(k.max, d);
  }
  std::sort(kernel_stats_.begin(), kernel_stats_.end(), [](const KernelStats& a, const KernelStats& b) {
    return a.total != b.total ? a.total > b.total : a.name < b.name;
  });
  if (progress) progress(1.0);
}

TimeNs TraceDocument::start(EventRef e) const {
  switch (e.table) {
    case EventTable::CudaApi: return trace_.cuda_api().start[e.index];
    case EventTable::GpuOp: return trace_.gpu_ops().start[e.index];
    case EventTable::Annotation: return trace_.annotations().start[e.index];
  }
  return 0;
}

TimeNs TraceDocument::end(EventRef e) const {
  switch (e.table) {
    case EventTable::CudaApi: return trace_.cuda_api().end[e.index];
    case EventTable::GpuOp: return trace_.gpu_ops().end[e.index];
    case EventTable::Annotation: return trace_.annotations().end[e.index];
  }
  return 0;
}

StringId TraceDocument::name(EventRef e) const {
  switch (e.table) {
    case EventTable::CudaApi: return trace_.cuda_api().name[e.index];
    case EventTable::GpuOp: return trace_.gpu_ops().name[e.index];
    case EventTable::Annotation: return trace_.annotations().name[e.index];
  }
  return 0;
}

TrackId TraceDocument::track(EventRef e) const {
  switch (e.table) {
    case EventTable::CudaApi: return trace_.cuda_api().track[e.index];
    case EventTable::GpuOp: return trace_.gpu_ops().track[e.index];
    case EventTable::Annotation: return trace_.annotations().track[e.index];
  }
  return TrackId{0};
}

QString TraceDocument::name_text(EventRef e) const {
  const std::string_view s = trace_.str(name(e));
  return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

int TraceDocument::lane_of(EventRef e) const {
  const TrackLanes& tl = lanes_[track(e)];
  switch (e.table) {
    case EventTable::Annotation: return trace_.annotations().depth[e.index];
    case EventTable::CudaApi:
      return tl.api_lane + (tl.api_split && trace_.cuda_api().kind[e.index] == ApiKind::Driver ? 1 : 0);
    case EventTable::GpuOp: return tl.gpu_lane;
  }
  return 0;
}

QString TraceDocument::track_label(TrackId t) const {
  const TrackInfo& info = trace_.tracks()[t];
  const QString name = QString::fromStdString(info.name);
  if (info.kind == TrackKind::CpuThread) {
    const QString tid = info.tid == kNoValue ? QStringLiteral("?") : QString::number(info.tid);
    return name.isEmpty() ? QStringLiteral("thread %1").arg(tid) : QStringLiteral("%1 (%2)").arg(name, tid);
  }
  const QString stream = info.stream == kNoValue ? QStringLiteral("?") : QString::number(info.stream);
  return name.isEmpty() ? QStringLiteral("stream %1").arg(stream) : QStringLiteral("%1 (stream %2)").arg(name, stream);
}

QString TraceDocument::process_label(ProcessId process) const {
  if (process >= trace_.processes().size()) return QStringLiteral("unknown process");
  const ProcessInfo& p = trace_.processes()[process];
  QString name = QString::fromStdString(p.name.empty() ? std::string("process") : p.name);
  if (p.is_rank()) name = QStringLiteral("rank %1: %2").arg(p.rank).arg(name);
  return p.pid == kNoValue ? name : QStringLiteral("%1 (pid %2)").arg(name).arg(p.pid);
}

QString TraceDocument::device_label(DeviceId device) const {
  if (device >= trace_.devices().size()) return QStringLiteral("unknown GPU");
  const DeviceInfo& d = trace_.devices()[device];
  return d.name.empty() ? QStringLiteral("GPU %1").arg(d.ordinal)
                        : QStringLiteral("GPU %1: %2").arg(d.ordinal).arg(QString::fromStdString(d.name));
}

LoadOutcome load_document(const std::vector<std::string>& inputs, const std::function<void(double)>& progress) {
  LoadOutcome out;
  const auto t0 = std::chrono::steady_clock::now();
  std::filesystem::path path = inputs.empty() ? std::filesystem::path() : std::filesystem::path(inputs.front());
  try {
    // Reading is most of the time; building the lanes the rest.
    constexpr double kReadShare = 0.85;
    const std::vector<std::filesystem::path> files = job_files(inputs);
    Trace trace;
    QString label = QString::fromStdString(path.string());
    if (files.size() == 1) {
      path = files.front();
      trace = load_trace(path, nullptr, [&](const ImportProgress& p) {
        if (progress && p.bytes_total) progress(kReadShare * p.bytes_done / static_cast<double>(p.bytes_total));
      });
    } else {
      // The ranks load in parallel: no byte counts to report until they are all in.
      trace = load_job(files).trace;
      if (progress) progress(kReadShare);
      label = QStringLiteral("%1 (%2 ranks' files)").arg(label).arg(files.size());
    }
    out.document = std::make_shared<const TraceDocument>(
        std::move(trace), label, [&](double f) { if (progress) progress(kReadShare + (1 - kReadShare) * f); });
  } catch (const TraceError& e) {
    out.error = QString::fromUtf8(e.what());
  } catch (const std::bad_alloc&) {
    out.error = QStringLiteral("%1: not enough memory to load this trace").arg(QString::fromStdString(path.string()));
  } catch (const std::exception& e) {
    out.error = QStringLiteral("%1: %2").arg(QString::fromStdString(path.string()), QString::fromUtf8(e.what()));
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

std::vector<EventRef> find_events(const TraceDocument& doc, const std::vector<bool>& matched_names,
                                  std::size_t limit, std::size_t* total) {
  std::vector<EventRef> found;
  const Trace& t = doc.trace();
  auto scan = [&](const std::vector<StringId>& names, EventTable table) {
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (matched_names[names[i]]) found.push_back(EventRef{table, static_cast<std::uint32_t>(i)});
    }
  };
  scan(t.annotations().name, EventTable::Annotation);
  scan(t.cuda_api().name, EventTable::CudaApi);
  scan(t.gpu_ops().name, EventTable::GpuOp);
  if (total) *total = found.size();
  auto earlier = [&](EventRef a, EventRef b) {
    const TimeNs sa = doc.start(a), sb = doc.start(b);
    if (sa != sb) return sa < sb;
    return std::pair(a.table, a.index) < std::pair(b.table, b.index);
  };
  if (found.size() > limit) {
    std::partial_sort(found.begin(), found.begin() + static_cast<std::ptrdiff_t>(limit), found.end(), earlier);
    found.resize(limit);
  } else {
    std::sort(found.begin(), found.end(), earlier);
  }
  return found;
}

} // namespace dreamscope::gui
