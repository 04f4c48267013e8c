#include "dreamscope/storage/trace_merge.h"

#include "dreamscope/storage/job.h"

#include "dreamscope/storage/steps.h"
#include "dreamscope/storage/trace_copy.h"
#include "dreamscope/storage/trace_log.h"
#include "dreamscope/storage/trace_summary.h"
#include "probe_step_fill.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>

namespace dreamscope {

namespace fs = std::filesystem;

namespace {

struct Part {
  fs::path path;
  Trace trace;
  std::int64_t start = 0;
  std::int64_t pid = 0;
  bool exec_ended = false;
};

// Where each batch was produced (end of its last prep) and consumed (end of its wait).
// By (rank, batch id): the ranks of a job number their batches alike, and a batch never
// crosses ranks (a rank's loader workers inherit its rank; kNoValue in a single-process run).
struct BatchEnds {
  std::map<std::pair<std::int64_t, std::int64_t>, std::pair<TrackId, TimeNs>> produced, consumed;
};

// dreamscope's Python instrumentation records in its own domain (annotate.h, DS_AUTO_DOMAIN).
// A job's own annotations of a kind replace the automatic ones of that kind: steps, and the
// data pipeline (wait, fetch, prep and their cpu marks) as a whole, since a batch is linked by
// an id that both of its ends must number alike.
constexpr std::string_view kAutoDomain = "dreamscope.auto";

struct HandAnnotations {
  bool steps = false;
  bool pipeline = false;
};

bool is_pipeline(std::string_view category) {
  using namespace annotation_category;
  return category == kWait || category == kFetch || category == kPrep || category == kCpu;
}

HandAnnotations hand_annotations(const std::vector<Part>& parts) {
  HandAnnotations hand;
  for (const Part& p : parts) {
    const std::optional<StringId> own = p.trace.find_string("dreamscope");
    if (!own) continue;
    const auto& ann = p.trace.annotations();
    for (AnnotationIndex i{0}; i < ann.size(); ++i) {
      if (ann.domain[i] != *own) continue;
      const std::string_view category = p.trace.str(ann.category[i]);
      hand.steps = hand.steps || category == annotation_category::kStep;
      hand.pipeline = hand.pipeline || (is_pipeline(category) && category != annotation_category::kCpu);
    }
  }
  return hand;
}

// The automatic steps of one part: its "step begin", "step boundary", "step boundary moved",
// "step boundaries merged" and "step cancel" marks, per thread in time order, made into step
// ranges. A boundary ends the open step and begins the next, a moved boundary puts the last
// boundary here instead (the step it ended ends here, the open one begins here), merged
// boundaries (payload N) make the open step take in the N steps before it, a begin opens one
// where none is, a cancel drops the open one, and one still open at the end is no step; nor is
// one that spans a pause of recording (its marks inside went unrecorded: it may hold many).
// Steps are numbered from 0 in time order.
class AutoSteps {
 public:
  void note(TrackId track, TimeNs time, std::string_view name, std::int64_t payload) {
    Kind kind;
    if (name == "step begin") {
      kind = Kind::Begin;
    } else if (name == "step boundary") {
      kind = Kind::Boundary;
    } else if (name == "step boundary moved") {
      kind = Kind::Moved;
    } else if (name == "step boundaries merged") {
      kind = Kind::Merged;
    } else if (name == "step cancel") {
      kind = Kind::Cancel;
    } else {
      return;
    }
    marks_.push_back({track, time, marks_.size(), kind, payload});
  }

  void add_to(TraceBuilder& out, const std::vector<RecordingPause>& pauses) {
    std::sort(marks_.begin(), marks_.end(), [](const Mark& a, const Mark& b) {
      return std::tie(a.track, a.time, a.order) < std::tie(b.track, b.time, b.order);
    });
    std::vector<AnnotationRecord> steps;
    const StringId name = out.intern("step"), domain = out.intern(kAutoDomain);
    bool open = false;
    bool movable = false; // the open step began at a boundary that ended steps.back()
    TimeNs opened = 0;
    for (std::size_t i = 0; i < marks_.size(); ++i) {
      const Mark& m = marks_[i];
      if (i > 0 && marks_[i - 1].track != m.track) open = movable = false;
      if (m.kind == Kind::Cancel) {
        open = movable = false;
        continue;
      }
      if (m.kind == Kind::Moved) {
        if (open && movable) {
          steps.back().end = m.time;
          opened = m.time;
        }
        continue;
      }
      if (m.kind == Kind::Merged) {
        // The open step takes in the `payload` steps before it on its thread that end where it
        // begins, one after another.
        for (std::int64_t n = m.payload; n > 0 && open && !steps.empty() && steps.back().track == m.track &&
                                         steps.back().end == opened;
             --n) {
          opened = steps.back().start;
          steps.pop_back();
        }
        movable = false;
        continue;
      }
      if (m.kind == Kind::Boundary || !open) movable = false;
      if (m.kind == Kind::Boundary && open && opened < m.time) {
        steps.push_back(AnnotationRecord{.track = m.track, .start = opened, .end = m.time, .name = name,
                                         .domain = domain, .category = name});
        movable = true;
      }
      if (m.kind == Kind::Boundary || !open) {
        open = true;
        opened = m.time;
      }
    }
    std::erase_if(steps, [&](const AnnotationRecord& step) {
      return std::any_of(pauses.begin(), pauses.end(),
                         [&](const RecordingPause& p) { return p.start < step.end && step.start < p.end; });
    });
    std::stable_sort(steps.begin(), steps.end(),
                     [](const AnnotationRecord& a, const AnnotationRecord& b) { return a.start < b.start; });
    for (std::size_t n = 0; n < steps.size(); ++n) {
      steps[n].payload = static_cast<std::int64_t>(n);
      out.add(steps[n]);
    }
  }

 private:
  enum class Kind { Begin, Boundary, Moved, Merged, Cancel };
  struct Mark {
    TrackId track;
    TimeNs time;
    std::size_t order;
    Kind kind;
    std::int64_t payload;
  };
  std::vector<Mark> marks_;
};

// What a range recorded from Python costs its caller beyond the tracer's recording, as the
// first process that measured it said (a "python range cost" mark of the automatic domain,
// payload in ns): a calibration row "python_range" of the merged trace, as the tracer's own
// start-up figures are.
constexpr std::string_view kPythonRangeCostMark = "python range cost";
constexpr std::string_view kPythonCalibrationRange = "dreamscope calibration"; // its measured ranges
constexpr std::int64_t kPythonCalibrationSamples = 5000;

std::vector<Part> read_parts(const fs::path& dir, MergedJob& result) {
  std::error_code ec;
  fs::directory_iterator entries(dir, ec);
  if (ec) throw TraceError(dir.string() + ": cannot list the trace parts: " + ec.message());
  std::vector<Part> parts;
  for (const auto& entry : entries) {
    if (entry.path().extension() != ".dslog") continue;
    try {
      Part p{.path = entry.path(), .trace = read_trace_log(entry.path())};
      p.start = std::atoll(p.trace.meta_value("start", "0").c_str());
      p.pid = p.trace.processes().empty() ? 0 : p.trace.processes().front().pid;
      p.exec_ended = p.trace.meta_value("ended_by") == "exec";
      parts.push_back(std::move(p));
    } catch (const std::exception& e) {
      result.warnings.push_back("part " + entry.path().string() + " could not be read and is left out: " + e.what());
      result.complete = false;
    }
  }
  // Start order; the path breaks ties so that the merge does not depend on the listing.
  std::sort(parts.begin(), parts.end(),
            [](const Part& a, const Part& b) { return std::tie(a.start, a.path) < std::tie(b.start, b.path); });
  return parts;
}

// The automatic fetches that made no batch: an iterable dataset's last attempt, which found
// the data exhausted, marked "fetch found no data" with its batch id on its thread. Each is
// left out with its mark: a fetch there is a batch that never comes.
constexpr std::string_view kFetchOfNoBatchMark = "fetch found no data";
std::set<std::pair<TrackId, std::int64_t>> automatic_fetches_of_no_batch(const Trace& in,
                                                                       std::optional<StringId> auto_domain) {
  std::set<std::pair<TrackId, std::int64_t>> out;
  const std::optional<StringId> mark = in.find_string(kFetchOfNoBatchMark);
  if (!auto_domain || !mark) return out;
  const auto& ann = in.annotations();
  for (AnnotationIndex i{0}; i < ann.size(); ++i) {
    if (ann.domain[i] == *auto_domain && ann.name[i] == *mark && ann.start[i] == ann.end[i]) {
      out.emplace(ann.track[i], ann.payload[i]);
    }
  }
  return out;
}

void add_part(TraceBuilder& out, const Part& part, const JobFacts& job, bool last_root_image, BatchEnds& batches,
              CorrelationSpace& correlations, const HandAnnotations& hand, std::int64_t& python_range_ns,
              probe_step_fill::FillCounts& fills) {
  TraceCopyEdits edits;
  edits.process = [&](ProcessInfo& p) {
    // The root's wait status is known only to the launcher; an image that exec'ed has none.
    if (p.pid != job.root_pid || !last_root_image) return;
    // A signal's death is the launcher's to tell: the process could not write it.
    if (p.exit_status == kNoValue || job.root_exit_status > 128) p.exit_status = job.root_exit_status;
  };
  const Trace& in = part.trace;
  const std::vector<std::int64_t> rank_of_track = track_ranks(in);
  AutoSteps auto_steps;
  // Only dreamscope's two domains are read: by id, not by string, for every row of a large part.
  const std::optional<StringId> own_domain = in.find_string("dreamscope"), auto_domain = in.find_string(kAutoDomain);
  const std::set<std::pair<TrackId, std::int64_t>> fetches_of_no_batch = automatic_fetches_of_no_batch(in, auto_domain);
  edits.annotation = [&](AnnotationIndex i, AnnotationRecord& r) {
    const StringId domain = in.annotations().domain[i];
    const bool automatic = auto_domain && domain == *auto_domain;
    if (!automatic && !(own_domain && domain == *own_domain)) return true;
    const std::string_view category = in.str(in.annotations().category[i]);
    if (automatic) {
      if (category == annotation_category::kStep) {
        // Marks, not steps: the steps are made from them below.
        if (!hand.steps && r.start == r.end)
          auto_steps.note(r.track, r.start, in.str(in.annotations().name[i]), r.payload);
        return r.start != r.end && !hand.steps;
      }
      if (hand.pipeline && is_pipeline(category)) return false;
      if (category == annotation_category::kFetch && fetches_of_no_batch.contains({in.annotations().track[i], r.payload})) {
        return false;
      }
      if (in.str(in.annotations().name[i]) == kPythonCalibrationRange) return false;
      if (r.start == r.end && in.str(in.annotations().name[i]) == kPythonRangeCostMark) {
        if (python_range_ns < 0 && r.payload >= 0 && r.payload < 1'000'000'000) python_range_ns = r.payload;
        return false;
      }
    }
    if (r.payload == kNoValue) return true;
    if (category == annotation_category::kPrep || category == annotation_category::kWait) {
      auto& ends = category == annotation_category::kPrep ? batches.produced : batches.consumed;
      const std::int64_t rank = rank_of_track[in.annotations().track[i]];
      auto [it, fresh] = ends.try_emplace({rank, r.payload}, r.track, r.end);
      if (!fresh && r.end > it->second.second) it->second = {r.track, r.end};
    }
    return true;
  };
  if (const std::int64_t shift = correlations.shift_for(in); shift != 0) {
    edits.cuda_api = [shift](CudaApiIndex, CudaApiRecord& r) {
      if (r.correlation != kNoValue) r.correlation += shift;
      return true;
    };
    edits.gpu_op = [shift](GpuOpIndex, GpuOpRecord& r) {
      if (r.correlation != kNoValue) r.correlation += shift;
      return true;
    };
  }
  const TraceIdMap ids = append_trace_ids(out, in, edits);
  append_trace_rows(out, in, ids, edits);
  auto_steps.add_to(out, recording_pauses(in));
  for (auto& [copy_of, r] : probe_step_fill::fill_probe_steps(in, fills)) {
    r.track = ids.tracks[r.track];
    if (r.track == kNoIndex) continue;
    r.name = ids.strings[r.name];
    r.domain = ids.strings[r.domain];
    r.category = ids.strings[r.category];
    // A copy is kept where its original was: the automatic ranges the program's own replace
    // are left out of the probe steps too.
    if (!edits.annotation(copy_of, r)) continue;
    out.add(r);
  }
}

// meta.warnings of a part: "; "-separated.
void split_warnings(const std::string& joined, std::set<std::string>& into) {
  std::size_t from = 0;
  while (!joined.empty() && from <= joined.size()) {
    const std::size_t to = joined.find("; ", from);
    into.insert(joined.substr(from, to == std::string::npos ? std::string::npos : to - from));
    if (to == std::string::npos) break;
    from = to + 2;
  }
}

// Why a job recorded no event, as well as the launcher and the parts can tell: the NVTX side,
// then the CUDA side.
std::string why_no_events(const JobFacts& job, const std::vector<Part>& parts, const std::set<std::string>& warnings,
                          bool paused) {
  auto any_part = [&](auto&& pred) { return std::any_of(parts.begin(), parts.end(), pred); };
  const bool window = any_part([](const Part& p) { return !p.trace.meta_value("window_from_ns").empty(); });
  const bool devices = any_part([](const Part& p) { return !p.trace.devices().empty(); });
  const bool cupti_failed =
      std::any_of(warnings.begin(), warnings.end(), [](const std::string& w) { return w.starts_with("CUPTI"); });
  std::string nvtx, cuda;
  if (job.sources.find("nvtx") == std::string::npos) {
    nvtx = "NVTX was not recorded (--trace " + job.sources + ")";
  } else if (paused) {
    nvtx = "no NVTX range or mark was recorded: the program paused recording (ds_tracing_pause)";
  } else if (window) {
    nvtx = "no NVTX range or mark fell in the --delay/--duration window";
  } else {
    nvtx = "no process of the job made an NVTX call";
  }
  if (job.sources.find("cuda") == std::string::npos) {
    cuda = "CUDA was not recorded (--trace " + job.sources + ")";
  } else if (!job.cuda_driver) {
    cuda = "no CUDA driver on this machine (libcuda.so.1 not loadable)";
  } else if (devices && window) {
    cuda = "no CUDA API call or GPU work fell in the --delay/--duration window";
  } else if (devices) {
    cuda = "CUDA was initialised, but no CUDA API call or GPU work was recorded";
  } else if (cupti_failed) {
    cuda = "no CUDA work was recorded: CUPTI could not record it (see the warnings)";
  } else {
    cuda = "no CUDA work was recorded: no process of the job initialised CUDA, or CUPTI could not record it";
  }
  return nvtx + "; " + cuda;
}

} // namespace

MergedJob merge_part_logs(const fs::path& dir, const JobFacts& job) {
  MergedJob result;
  std::vector<Part> parts = read_parts(dir, result);

  TraceBuilder out;
  out.set_source(TraceSource::Tracer);
  std::int64_t dropped = 0, writer_cpu = 0, start = INT64_MAX, end = INT64_MIN;
  std::string recording_paused; // the parts' meta recording_paused, joined
  std::int64_t writer_cpu_paused = 0;
  std::int64_t writer_yields = 0;
  std::set<std::string> warnings(job.warnings.begin(), job.warnings.end());
  std::string host;
  bool have_calibration = false;
  bool have_cuda_api_calibration = false;
  BatchEnds batches;
  CorrelationSpace correlations;
  const HandAnnotations hand = hand_annotations(parts);
  std::int64_t python_range_ns = -1;
  probe_step_fill::FillCounts fills;
  // The root's exit status belongs to its last image: the one that did not exec further.
  std::size_t last_root = parts.size();
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].pid == job.root_pid && !parts[i].exec_ended) last_root = i;
  }
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const Part& p = parts[i];
    add_part(out, p, job, i == last_root, batches, correlations, hand, python_range_ns, fills);
    // Every process measures the same machine; the first part's calibration stands for all.
    // CUPTI's cost per call is measured only by a process that used CUDA (a DataLoader
    // worker never does): the first such part's.
    for (const auto& c : p.trace.calibration()) {
      if (c.event_kind != "cuda_api" || have_cuda_api_calibration) continue;
      out.add(c);
      have_cuda_api_calibration = true;
      if (std::string v = p.trace.meta_value("cuda_api_calibration_calls"); !v.empty()) {
        out.set_meta("cuda_api_calibration_calls", v);
      }
    }
    if (!have_calibration && !p.trace.calibration().empty()) {
      for (const auto& c : p.trace.calibration()) {
        if (c.event_kind != "cuda_api") out.add(c);
      }
      have_calibration = true;
    }
    result.processes += p.trace.processes().size();
    if (!p.trace.complete()) {
      result.complete = false;
      result.warnings.push_back("process " + std::to_string(p.pid) +
                                " did not close its trace (killed or crashed): its events end at its last flush");
    }
    dropped += p.trace.dropped_events();
    if (p.trace.tracer_writer_cpu_ns() != kNoValue) writer_cpu += p.trace.tracer_writer_cpu_ns();
    start = std::min(start, p.start);
    end = std::max<std::int64_t>(end, std::atoll(p.trace.meta_value("end", "0").c_str()));
    if (host.empty()) host = p.trace.meta_value("host");
    for (const char* key : {"window_from_ns", "window_to_ns", "clock", "cpu_cores"}) {
      if (std::string v = p.trace.meta_value(key); !v.empty()) out.set_meta(key, v);
    }
    split_warnings(p.trace.meta_value("warnings"), warnings);
    writer_cpu_paused += std::atoll(p.trace.meta_value("tracer_writer_cpu_paused_ns", "0").c_str());
    writer_yields += std::atoll(p.trace.meta_value("tracer_writer_yields", "0").c_str());
    if (std::string v = p.trace.meta_value("recording_paused"); !v.empty()) {
      recording_paused += (recording_paused.empty() ? "" : "; ") + v;
    }
  }
  if (python_range_ns >= 0) {
    out.add(CalibrationRecord{.event_kind = "python_range", .cost_ns = static_cast<double>(python_range_ns),
                              .samples = kPythonCalibrationSamples,
                              .method = "a module call recorded as a range against the same call through "
                                        "PyTorch's own Module.__call__: median difference of 5 x 1000, alternating "
                                        "(dreamscope/pytorch.py)"});
  }
  if (fills.filled < fills.probe_steps) {
    result.warnings.push_back(std::to_string(fills.probe_steps - fills.filled) + " of " +
                              std::to_string(fills.probe_steps) +
                              " probe steps were not filled (no recorded step nearby ran the ranges they counted): "
                              "their `cost probe step` marks count those ranges, the trace does not hold them");
  }
  if (!recording_paused.empty()) out.set_meta("recording_paused", recording_paused);
  if (writer_cpu_paused > 0) out.set_meta("tracer_writer_cpu_paused_ns", std::to_string(writer_cpu_paused));
  if (writer_yields > 0) out.set_meta("tracer_writer_yields", std::to_string(writer_yields));
  result.parts = parts.size();
  const StringId batch_flow = out.intern("batch");
  for (const auto& [key, from] : batches.produced) {
    auto to = batches.consumed.find(key);
    if (to == batches.consumed.end()) continue;
    out.add(FlowRecord{.kind = batch_flow, .from_track = from.first, .from_time = from.second,
                       .to_track = to->second.first, .to_time = to->second.second, .id = key.second});
  }
  // A root process that recorded nothing left no part; it is still the job's process, with
  // the exit status the launcher saw.
  if (std::none_of(parts.begin(), parts.end(), [&](const Part& p) { return p.pid == job.root_pid; })) {
    out.add_process(ProcessInfo{.pid = job.root_pid, .name = fs::path(job.root_program).filename().string(),
                                .command = job.command, .exit_status = job.root_exit_status});
    ++result.processes;
  }
  warnings.insert(result.warnings.begin(), result.warnings.end());
  std::string joined;
  for (const auto& w : warnings) joined += (joined.empty() ? "" : "; ") + w;

  out.set_meta("source", "tracer");
  out.set_meta("command", job.command);
  if (!host.empty()) out.set_meta("host", host);
  if (job.cpu_cores > 0) out.set_meta("cpu_cores", std::to_string(job.cpu_cores));
  out.set_meta("dropped_events", std::to_string(dropped));
  if (writer_cpu > 0) out.set_meta("tracer_writer_cpu_ns", std::to_string(writer_cpu));
  if (!joined.empty()) out.set_meta("warnings", joined);
  if (start != INT64_MAX) out.set_meta("start", std::to_string(start));
  if (end != INT64_MIN) out.set_meta("end", std::to_string(end));
  out.set_meta("parts", std::to_string(parts.size()));
  if (std::all_of(parts.begin(), parts.end(), [](const Part& p) { return holds_no_events(p.trace); })) {
    result.no_events = why_no_events(job, parts, warnings, !recording_paused.empty());
    out.set_meta("no_events", result.no_events);
  }
  // A job with a process that never closed its part is not complete, merged or not.
  out.set_meta("complete", result.complete ? "1" : "0");
  result.trace = std::move(out).build();
  // What the trace holds: the merge leaves out the Python layer's calibration ranges and the
  // automatic annotations a job's own replace.
  result.events = result.trace.event_count();
  return result;
}

} // namespace dreamscope
