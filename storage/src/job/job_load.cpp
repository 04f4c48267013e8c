// Loading a job from the traces of its ranks: finding the files, giving each
// its rank, putting their clocks on one, and merging them (job.h).
#include "dreamscope/storage/import_issues.h"
#include "dreamscope/storage/importers.h"
#include "dreamscope/storage/job.h"
#include "dreamscope/storage/limits.h"
#include "dreamscope/storage/trace_copy.h"

#include "importers/common/import_input.h"

#include <glob.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <exception>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

namespace dreamscope {

namespace {

// "rank2" before "rank10": digit runs compare as numbers.
bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      std::size_t i2 = i, j2 = j;
      while (i2 < a.size() && std::isdigit(static_cast<unsigned char>(a[i2]))) ++i2;
      while (j2 < b.size() && std::isdigit(static_cast<unsigned char>(b[j2]))) ++j2;
      std::string_view x(a.data() + i, i2 - i), y(b.data() + j, j2 - j);
      while (x.size() > 1 && x.front() == '0') x.remove_prefix(1);
      while (y.size() > 1 && y.front() == '0') y.remove_prefix(1);
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
      i = i2;
      j = j2;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

void sort_natural(std::vector<std::filesystem::path>& files) {
  std::stable_sort(files.begin(), files.end(),
                   [](const auto& a, const auto& b) { return natural_less(a.string(), b.string()); });
}

bool has_glob_chars(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

std::size_t worker_count(const JobLoadOptions& options, std::size_t jobs) {
  std::size_t n = options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  return std::max<std::size_t>(1, std::min(n, jobs));
}

// Runs work(i) for i in [0, n) on `threads` threads; the first exception stops
// the rest and is rethrown here.
void parallel_for(std::size_t n, std::size_t threads, const std::function<void(std::size_t)>& work) {
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto run = [&] {
    // Each thread imports file after file: the next file's text goes into the memory of the
    // last one's (import_input.h).
    const BufferReuse reuse;
    for (std::size_t i; !failed && (i = next++) < n;) {
      try {
        work(i);
      } catch (...) {
        std::lock_guard lock(error_mutex);
        if (!error) error = std::current_exception();
        failed = true;
      }
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(run);
  run();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

Trace load_checked(const std::filesystem::path& path, const JobLoadOptions& options) {
  Trace t = load_trace(path, nullptr, {}, options.detail);
  if (options.check_file) options.check_file(path, t);
  return t;
}

// The ranks a file's own processes name.
std::set<std::int64_t> ranks_in(const Trace& t) {
  std::set<std::int64_t> out;
  for (const ProcessInfo& p : t.processes()) {
    if (p.is_rank()) out.insert(p.rank);
  }
  return out;
}

// What a file contributes to the job: its ranks (from the file, its name or its
// place), its host, its clock domain.
struct FilePlan {
  std::set<std::int64_t> ranks;
  std::int64_t assigned_rank = kNoValue; // for a file whose processes have no rank
  std::string host;
  std::int64_t domain = 0;
  TimeNs offset = 0;
};

// Gives every file its ranks, refusing two files of one rank. `notes` says what
// was inferred.
std::vector<FilePlan> plan_ranks(const std::vector<std::filesystem::path>& files, const std::vector<Trace>& traces,
                                 std::vector<std::string>& notes) {
  std::vector<FilePlan> plans(files.size());
  std::size_t from_name = 0, from_order = 0;
  for (std::size_t i = 0; i < files.size(); ++i) {
    plans[i].ranks = ranks_in(traces[i]);
    for (const ProcessInfo& p : traces[i].processes()) {
      if (p.is_rank() && !p.host.empty()) plans[i].host = p.host;
    }
  }
  std::set<std::int64_t> taken;
  for (const auto& p : plans) taken.insert(p.ranks.begin(), p.ranks.end());
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (!plans[i].ranks.empty()) continue;
    std::int64_t r = rank_from_file_name(files[i]);
    if (r != kNoValue) {
      ++from_name;
    } else {
      r = static_cast<std::int64_t>(i);
      ++from_order;
    }
    plans[i].assigned_rank = r;
    plans[i].ranks = {r};
  }
  std::map<std::int64_t, std::size_t> owner;
  for (std::size_t i = 0; i < files.size(); ++i) {
    for (std::int64_t r : plans[i].ranks) {
      auto [it, fresh] = owner.emplace(r, i);
      if (!fresh) {
        throw TraceError(files[it->second].string() + " and " + files[i].string() + " are both rank " +
                         std::to_string(r) + "; a job has one trace per rank");
      }
    }
  }
  if (from_name) notes.push_back(std::to_string(from_name) + " file(s) say no rank: each took the one its name gives");
  if (from_order)
    notes.push_back(std::to_string(from_order) +
                    " file(s) say no rank and their names give none: each took "
                    "its place in the list");
  // Clock domains: files naming the same host share a clock; every other file
  // has its own.
  std::map<std::string, std::int64_t> host_domain;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    std::int64_t d = static_cast<std::int64_t>(i);
    if (!plans[i].host.empty()) d = host_domain.emplace(plans[i].host, d).first->second;
    plans[i].domain = d;
  }
  return plans;
}

// A file's collective calls, with the rank the plan gave a file that named
// none.
std::vector<CollectiveCall> file_collectives(const Trace& t, const FilePlan& plan) {
  std::vector<CollectiveCall> calls = find_collectives(t).calls;
  for (auto& c : calls) {
    if (c.rank == kNoValue) c.rank = plan.assigned_rank;
  }
  return calls;
}

void compute_offsets(std::vector<FilePlan>& plans, const std::vector<std::vector<CollectiveCall>>& calls,
                     ClockAlignment mode, std::vector<std::string>& notes) {
  std::set<std::int64_t> domains;
  for (const auto& p : plans) domains.insert(p.domain);
  if (mode == ClockAlignment::Never || domains.size() < 2) return;
  std::vector<CollectiveCall> all;
  std::map<std::int64_t, std::int64_t> domain_of_rank;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    all.insert(all.end(), calls[i].begin(), calls[i].end());
    for (std::int64_t r : plans[i].ranks) domain_of_rank[r] = plans[i].domain;
  }
  const auto offsets = clock_offsets(match_collectives(std::move(all)), domain_of_rank, mode);
  std::size_t shifted = 0;
  TimeNs largest = 0;
  for (auto& p : plans) {
    auto it = offsets.find(p.domain);
    if (it == offsets.end() || it->second == 0) continue;
    p.offset = it->second;
    ++shifted;
    largest = std::max(largest, p.offset < 0 ? -p.offset : p.offset);
  }
  if (shifted) {
    notes.push_back(std::to_string(shifted) + " file(s) on other clocks put on rank " +
                    std::to_string(domain_of_rank.begin()->first) + "'s by their collectives (largest shift " +
                    std::to_string(largest / 1000) + " us)");
  }
}

// The job's meta: the first file's, with counts summed and `complete` only when
// every file is.
void merge_meta(TraceBuilder& b, const std::vector<std::map<std::string, std::string>>& metas) {
  if (metas.empty()) return;
  for (const auto& [k, v] : metas.front()) b.set_meta(k, v);
  if (metas.size() == 1) return;
  auto as_int = [](const std::string& s) -> std::optional<std::int64_t> {
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
    return v;
  };
  for (const char* key : {"dropped_events", "tracer_writer_cpu_ns", "import_events_read", "import_input_cpu_events",
                          "import_input_gpu_events"}) {
    std::int64_t sum = 0;
    bool any = false;
    for (const auto& m : metas) {
      auto it = m.find(key);
      if (it == m.end()) continue;
      if (auto v = as_int(it->second)) {
        sum += *v;
        any = true;
      }
    }
    if (any) b.set_meta(key, std::to_string(sum));
  }
  bool complete = true;
  std::map<std::string, RecordedImportIssue> issues;
  std::vector<std::string> warnings;
  for (const auto& m : metas) {
    auto it = m.find("complete");
    complete = complete && it != m.end() && it->second == "1";
    if (auto is = m.find("import_issues"); is != m.end()) {
      for (const auto& issue : parse_import_issues(is->second)) {
        auto [slot, fresh] = issues.emplace(issue.id, issue);
        if (!fresh) slot->second.count += issue.count;
      }
    }
    if (auto w = m.find("warnings"); w != m.end() && !w->second.empty() &&
                                     std::find(warnings.begin(), warnings.end(), w->second) == warnings.end()) {
      warnings.push_back(w->second);
    }
  }
  b.set_meta("complete", complete ? "1" : "0");
  if (!issues.empty()) {
    std::string text;
    for (const auto& [id, issue] : issues) {
      text += issue.id + '\t' + std::to_string(issue.count) + '\t' +
              (issue.severity == ImportSeverity::Info ? "info" : "warning") + '\t' +
              std::string(to_string(issue.effect)) + '\n';
    }
    b.set_meta("import_issues", text);
  }
  std::string joined;
  for (const auto& w : warnings) joined += (joined.empty() ? "" : "; ") + w;
  if (!joined.empty()) b.set_meta("warnings", joined);
}

// Appends one rank's file to the job: ranks given where it named none, times
// shifted onto the job's clock.
void append_file(TraceBuilder& b, const Trace& t, const FilePlan& plan, CorrelationSpace& correlations) {
  const TimeNs shift = plan.offset;
  const std::int64_t renumber = correlations.shift_for(t);
  TraceCopyEdits edits;
  edits.process = [&](ProcessInfo& p) {
    if (!p.is_rank() && plan.assigned_rank != kNoValue) p.rank = plan.assigned_rank;
    if (shift != 0) {
      p.clock_offset += shift;
      if (p.start != kNoValue) p.start += shift;
      if (p.end != kNoValue) p.end += shift;
    }
  };
  if (shift != 0 || renumber != 0) {
    edits.cuda_api = [&](CudaApiIndex, CudaApiRecord& r) {
      r.start += shift;
      r.end += shift;
      if (r.correlation != kNoValue) r.correlation += renumber;
      return true;
    };
    edits.gpu_op = [&](GpuOpIndex, GpuOpRecord& r) {
      r.start += shift;
      r.end += shift;
      if (r.correlation != kNoValue) r.correlation += renumber;
      return true;
    };
  }
  if (shift != 0) {
    edits.annotation = [&](AnnotationIndex, AnnotationRecord& r) {
      r.start += shift;
      r.end += shift;
      return true;
    };
    edits.flow = [&](FlowRecord& f) {
      f.from_time += shift;
      f.to_time += shift;
      return true;
    };
    edits.overhead = [&](OverheadRecord& o) {
      o.start += shift;
      o.end += shift;
      return true;
    };
    edits.thread_load = [&](ThreadLoadRecord& l) {
      l.start += shift;
      l.end += shift;
      return true;
    };
    edits.memory_event = [&](MemoryEventRecord& m) {
      m.time += shift;
      return true;
    };
  }
  const TraceIdMap ids = append_trace_ids(b, t, edits);
  append_trace_rows(b, t, ids, edits);
}

} // namespace

std::vector<std::filesystem::path> job_files(const std::vector<std::string>& inputs) {
  std::vector<std::filesystem::path> out;
  std::set<std::filesystem::path> seen;
  auto add = [&](const std::filesystem::path& p) {
    if (seen.insert(std::filesystem::weakly_canonical(p)).second) out.push_back(p);
  };
  for (const std::string& input : inputs) {
    std::error_code ec;
    if (std::filesystem::is_directory(input, ec)) {
      std::vector<std::filesystem::path> found;
      for (const auto& entry : std::filesystem::directory_iterator(input, ec)) {
        if (!entry.is_regular_file(ec)) continue;
        if (detect_trace_format(entry.path()) != TraceFormat::Unknown) found.push_back(entry.path());
      }
      if (ec) throw TraceError(input + ": cannot list the folder: " + ec.message());
      if (found.empty()) throw TraceError(input + ": a folder with no trace in it");
      sort_natural(found);
      for (const auto& f : found) add(f);
    } else if (std::filesystem::exists(input, ec) || !has_glob_chars(input)) {
      add(input); // a file, or a path whose load will say what is wrong with it
    } else {
      glob_t g{};
      const int rc = ::glob(input.c_str(), 0, nullptr, &g);
      std::vector<std::filesystem::path> found;
      for (std::size_t i = 0; rc == 0 && i < g.gl_pathc; ++i) {
        if (std::filesystem::is_regular_file(g.gl_pathv[i], ec)) found.emplace_back(g.gl_pathv[i]);
      }
      globfree(&g);
      if (found.empty()) throw TraceError(input + ": no file matches the pattern");
      sort_natural(found);
      for (const auto& f : found) add(f);
    }
  }
  return out;
}

std::int64_t rank_from_file_name(const std::filesystem::path& path) {
  std::string name = path.filename().string();
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (std::string_view word : {"rank", "worker"}) {
    for (std::size_t at = name.find(word); at != std::string::npos; at = name.find(word, at + 1)) {
      std::size_t i = at + word.size();
      while (i < name.size() && (name[i] == '-' || name[i] == '_' || name[i] == '.')) ++i;
      std::int64_t r = 0;
      const auto [end, ec] = std::from_chars(name.data() + i, name.data() + name.size(), r);
      if (ec == std::errc() && end != name.data() + i && r >= 0 && r < limits::kMaxWorldSize) return r;
    }
  }
  return kNoValue;
}

std::map<std::int64_t, TimeNs> clock_offsets(const JobCollectives& collectives,
                                             const std::map<std::int64_t, std::int64_t>& domain_of_rank,
                                             ClockAlignment mode) {
  std::map<std::int64_t, TimeNs> out;
  if (mode == ClockAlignment::Never || domain_of_rank.empty()) return out;
  const std::int64_t reference = domain_of_rank.begin()->second;
  auto domain = [&](std::int64_t rank) {
    auto it = domain_of_rank.find(rank);
    return it == domain_of_rank.end() ? kNoValue : it->second;
  };
  static const std::set<std::string> kCoincidentEnds = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all",
                                                        "barrier"};
  const bool any_coincident = std::any_of(collectives.instances.begin(), collectives.instances.end(),
                                          [](const CollectiveInstance& i) { return kCoincidentEnds.count(i.op) > 0; });
  // Per domain, (reference end - own end) over the instances both took part in:
  // each domain's own ends are averaged first, as are the reference's.
  std::map<std::int64_t, std::vector<TimeNs>> differences;
  for (const CollectiveInstance& inst : collectives.instances) {
    if (any_coincident && !kCoincidentEnds.count(inst.op)) continue;
    std::map<std::int64_t, std::pair<long double, int>> ends; // domain -> (sum, count)
    for (std::uint32_t c : inst.calls) {
      const CollectiveCall& call = collectives.calls[c];
      const std::int64_t d = domain(call.rank);
      if (d == kNoValue) continue;
      auto& [sum, n] = ends[d];
      sum += static_cast<long double>(call.end);
      ++n;
    }
    auto ref = ends.find(reference);
    if (ref == ends.end()) continue;
    const long double ref_end = ref->second.first / ref->second.second;
    for (const auto& [d, sn] : ends) {
      if (d == reference) continue;
      differences[d].push_back(static_cast<TimeNs>(ref_end - sn.first / sn.second));
    }
  }
  for (auto& [d, diffs] : differences) {
    std::nth_element(diffs.begin(), diffs.begin() + static_cast<std::ptrdiff_t>(diffs.size() / 2), diffs.end());
    const TimeNs median = diffs[diffs.size() / 2];
    if (mode == ClockAlignment::Auto && (median < kClockTolerance && median > -kClockTolerance)) continue;
    out[d] = median;
  }
  return out;
}

LoadedJob load_job(const std::vector<std::filesystem::path>& files, const JobLoadOptions& options) {
  if (files.empty()) throw TraceError("no trace to load");
  LoadedJob job;
  if (files.size() == 1) {
    job.trace = load_checked(files.front(), options);
    return job;
  }
  std::vector<Trace> traces(files.size());
  parallel_for(files.size(), worker_count(options, files.size()),
               [&](std::size_t i) { traces[i] = load_checked(files[i], options); });
  std::vector<FilePlan> plans = plan_ranks(files, traces, job.notes);
  std::vector<std::vector<CollectiveCall>> calls(files.size());
  parallel_for(files.size(), worker_count(options, files.size()),
               [&](std::size_t i) { calls[i] = file_collectives(traces[i], plans[i]); });
  compute_offsets(plans, calls, options.align, job.notes);

  TraceBuilder b;
  b.set_origin(files.front().string() + " and " + std::to_string(files.size() - 1) + " more");
  std::vector<std::map<std::string, std::string>> metas;
  for (const Trace& t : traces) metas.push_back(t.meta());
  merge_meta(b, metas);
  b.set_source(traces.front().source());
  std::string list;
  for (const auto& f : files) list += (list.empty() ? "" : "\n") + f.string();
  b.set_meta("job_files", list);
  bool calibrated = false;
  CorrelationSpace correlations;
  for (std::size_t i = 0; i < files.size(); ++i) {
    append_file(b, traces[i], plans[i], correlations);
    if (!calibrated && !traces[i].calibration().empty()) {
      for (const CalibrationRecord& c : traces[i].calibration()) b.add(c);
      calibrated = true;
    }
    traces[i] = Trace(); // what is merged need not be held twice
  }
  std::string notes;
  for (const auto& n : job.notes) notes += (notes.empty() ? "" : "\n") + n;
  if (!notes.empty()) b.set_meta("job_notes", notes);
  job.trace = std::move(b).build();
  return job;
}

void for_each_rank(
    const std::vector<std::filesystem::path>& files, const JobLoadOptions& options,
    const std::function<void(std::int64_t rank, Trace&& trace, const std::filesystem::path& file)>& visit) {
  if (files.size() == 1) {
    Trace t = load_checked(files.front(), options);
    const auto ranks = job_ranks(t);
    if (ranks.size() < 2) {
      // One rank or none: the file is that rank's trace as it stands, as a job's one-rank files
      // are below; no copy of it.
      visit(ranks.empty() ? kNoValue : ranks.front().rank, std::move(t), files.front());
      return;
    }
    parallel_for(ranks.size(), worker_count(options, ranks.size()),
                 [&](std::size_t i) { visit(ranks[i].rank, rank_subtrace(t, ranks[i].rank), files.front()); });
    return;
  }
  // Ranks that a file does not name come from its name or place, as load_job
  // gives them.
  std::vector<std::string> notes;
  std::mutex plan_mutex;
  std::set<std::int64_t> seen;
  parallel_for(files.size(), worker_count(options, files.size()), [&](std::size_t i) {
    Trace t = load_checked(files[i], options);
    std::set<std::int64_t> ranks = ranks_in(t);
    if (ranks.empty()) {
      std::int64_t r = rank_from_file_name(files[i]);
      ranks = {r == kNoValue ? static_cast<std::int64_t>(i) : r};
    }
    {
      std::lock_guard lock(plan_mutex);
      for (std::int64_t r : ranks) {
        if (!seen.insert(r).second) {
          throw TraceError(files[i].string() + " is rank " + std::to_string(r) +
                           ", as another file of the job is; a "
                           "job has one trace per rank");
        }
      }
    }
    if (ranks.size() == 1) {
      visit(*ranks.begin(), std::move(t), files[i]);
    } else {
      for (std::int64_t r : ranks) visit(r, rank_subtrace(t, r), files[i]);
    }
  });
}

} // namespace dreamscope
