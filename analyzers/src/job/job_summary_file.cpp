// A rank's summary as a small SQLite file (schema in docs/multi-rank.md, "The summary file").
// Its own tables, none named like a trace's, so that no trace reader takes it for a trace.
#include "dreamscope/analyzers/job_analysis.h"

#include "dreamscope/storage/job.h"
#include "dreamscope/storage/sqlite_file.h"
#include "dreamscope/storage/trace_file.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>

namespace dreamscope::analyzers {

namespace {

constexpr const char* kSchema = R"sql(
CREATE TABLE summary_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE rank_info(rank INTEGER NOT NULL, local_rank INTEGER, world_size INTEGER, host TEXT NOT NULL,
  trace_name TEXT NOT NULL, source TEXT NOT NULL, begin_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,
  events INTEGER NOT NULL, data_source TEXT NOT NULL);
CREATE TABLE hta_rank(idle_us INTEGER NOT NULL, compute_us INTEGER NOT NULL, non_compute_us INTEGER NOT NULL,
  kernel_time_us INTEGER NOT NULL, idle_pct REAL NOT NULL, compute_pct REAL NOT NULL, non_compute_pct REAL NOT NULL,
  comm_comp_overlap_pct REAL, launches INTEGER NOT NULL, mean_cpu_duration_us REAL NOT NULL,
  mean_gpu_duration_us REAL NOT NULL, mean_launch_delay_us REAL NOT NULL, max_launch_delay_us INTEGER NOT NULL,
  short_kernels INTEGER NOT NULL, profiler_steps INTEGER NOT NULL, step_filter_applied INTEGER NOT NULL);
CREATE TABLE hta_kernel_type(kernel_type TEXT NOT NULL, sum_us INTEGER NOT NULL, percentage REAL NOT NULL);
CREATE TABLE hta_kernel(name TEXT NOT NULL, kernel_type TEXT NOT NULL, count INTEGER NOT NULL, sum_us INTEGER NOT NULL,
  min_us INTEGER NOT NULL, max_us INTEGER NOT NULL, mean_us REAL NOT NULL, stddev_us REAL NOT NULL);
CREATE TABLE hta_idle_time(device INTEGER, stream INTEGER, host_wait_us INTEGER NOT NULL,
  kernel_wait_us INTEGER NOT NULL, other_us INTEGER NOT NULL, host_wait_ratio REAL NOT NULL,
  kernel_wait_ratio REAL NOT NULL, other_ratio REAL NOT NULL);
CREATE TABLE step(number INTEGER, name TEXT NOT NULL, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,
  data_wait_ns INTEGER NOT NULL);
CREATE TABLE data_wait(start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL);
CREATE TABLE collective(communicator TEXT NOT NULL, sequence INTEGER NOT NULL, pytorch_sequence INTEGER NOT NULL,
  step INTEGER, op TEXT NOT NULL, bytes INTEGER, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL);
)sql";

// ---- Writing

// Binds a row's values in column order.
class Binder {
 public:
  explicit Binder(sqlite::Statement& s) : s_(s) {}
  Binder& i(std::int64_t v) {
    s_.bind(++n_, v);
    return *this;
  }
  Binder& maybe(std::int64_t v) { // kNoValue is NULL
    s_.bind_optional(++n_, v);
    return *this;
  }
  Binder& d(double v) {
    s_.bind(++n_, v);
    return *this;
  }
  Binder& maybe(const std::optional<double>& v) {
    if (v) s_.bind(++n_, *v);
    else s_.bind_null(++n_);
    return *this;
  }
  Binder& t(std::string_view v) {
    s_.bind(++n_, v);
    return *this;
  }

 private:
  sqlite::Statement& s_;
  int n_ = 0;
};

void write_rows(sqlite::Database& db, const RankSummary& s) {
  {
    sqlite::Statement st = db.prepare("INSERT INTO summary_meta VALUES (?, ?)");
    const std::pair<const char*, std::string> meta[] = {{"format", std::string(kRankSummaryFormat)},
                                                        {"version", std::to_string(kRankSummaryVersion)},
                                                        {"dreamscope_version", DREAMSCOPE_VERSION}};
    for (const auto& [k, v] : meta) {
      Binder(st).t(k).t(v);
      st.run();
    }
  }
  {
    sqlite::Statement st = db.prepare("INSERT INTO rank_info VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    Binder(st)
        .i(s.rank)
        .maybe(s.local_rank)
        .maybe(s.world_size)
        .t(s.host)
        .t(s.trace_name)
        .t(s.source)
        .i(s.begin)
        .i(s.end)
        .i(s.events)
        .t(s.data_source);
    st.run();
  }
  {
    const TemporalBreakdown& t = s.hta.temporal;
    const LaunchSummary& l = s.hta.launches;
    sqlite::Statement st = db.prepare("INSERT INTO hta_rank VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    Binder(st)
        .i(t.idle)
        .i(t.compute)
        .i(t.non_compute)
        .i(t.kernel_time)
        .d(t.idle_pct)
        .d(t.compute_pct)
        .d(t.non_compute_pct)
        .maybe(s.hta.comm_comp_overlap_pct)
        .i(l.count)
        .d(l.mean_cpu_duration)
        .d(l.mean_gpu_duration)
        .d(l.mean_launch_delay)
        .i(l.max_launch_delay)
        .i(l.short_kernels)
        .i(s.hta.profiler_steps)
        .i(s.hta.step_filter_applied ? 1 : 0);
    st.run();
  }
  {
    sqlite::Statement st = db.prepare("INSERT INTO hta_kernel_type VALUES (?, ?, ?)");
    for (const auto& k : s.hta.kernel_types) {
      Binder(st).t(k.kernel_type).i(k.sum).d(k.percentage);
      st.run();
    }
  }
  {
    sqlite::Statement st = db.prepare("INSERT INTO hta_kernel VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
    for (const auto& k : s.hta.kernels) {
      Binder(st).t(k.name).t(to_string(k.type)).i(k.count).i(k.sum).i(k.min).i(k.max).d(k.mean).d(k.stddev);
      st.run();
    }
  }
  {
    sqlite::Statement st = db.prepare("INSERT INTO hta_idle_time VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
    for (const auto& i : s.hta.idle_time) {
      Binder(st)
          .maybe(i.device)
          .maybe(i.stream)
          .i(i.host_wait)
          .i(i.kernel_wait)
          .i(i.other)
          .d(i.host_wait_ratio)
          .d(i.kernel_wait_ratio)
          .d(i.other_ratio);
      st.run();
    }
  }
  {
    sqlite::Statement st = db.prepare("INSERT INTO step VALUES (?, ?, ?, ?, ?)");
    for (const auto& x : s.steps) {
      Binder(st).maybe(x.number).t(x.name).i(x.start).i(x.end).i(x.data_wait);
      st.run();
    }
  }
  {
    sqlite::Statement st = db.prepare("INSERT INTO data_wait VALUES (?, ?)");
    for (const auto& w : s.data_waits) {
      Binder(st).i(w.start).i(w.end);
      st.run();
    }
  }
  {
    sqlite::Statement st = db.prepare("INSERT INTO collective VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
    for (const auto& c : s.collectives) {
      Binder(st)
          .t(c.communicator)
          .i(c.sequence)
          .i(c.pytorch_sequence ? 1 : 0)
          .maybe(c.step)
          .t(c.op)
          .maybe(c.bytes)
          .i(c.start)
          .i(c.end);
      st.run();
    }
  }
}

// ---- Reading

// One row's columns, each checked for its type and, for what can only be a count, a duration
// or a share, its range; a bad one throws naming table, row and column. Every report and
// merge reads summaries through here, so none of them meets a negative time or a NaN.
class Row {
 public:
  Row(const sqlite::Database& db, const sqlite::Statement& s, const char* table, std::int64_t row)
      : db_(db), s_(s), table_(table), row_(row) {}

  std::int64_t i(int c) const {
    if (s_.type(c) != SQLITE_INTEGER) bad(c, "an integer");
    return s_.integer(c);
  }
  std::int64_t maybe_i(int c) const { return s_.type(c) == SQLITE_NULL ? kNoValue : i(c); }
  double d(int c) const {
    const int type = s_.type(c);
    if (type != SQLITE_FLOAT && type != SQLITE_INTEGER) bad(c, "a number");
    return s_.real(c);
  }
  std::optional<double> maybe_d(int c) const {
    return s_.type(c) == SQLITE_NULL ? std::nullopt : std::optional<double>(d(c));
  }
  // A count or a duration: an integer of at least 0.
  std::int64_t count(int c) const {
    const std::int64_t v = i(c);
    if (v < 0) out_of_range(c, std::to_string(v), "at least 0");
    return v;
  }
  std::int64_t maybe_count(int c) const { return s_.type(c) == SQLITE_NULL ? kNoValue : count(c); }
  // A mean or spread of durations: a finite number of at least 0.
  double amount(int c) const {
    const double v = d(c);
    if (!std::isfinite(v) || v < 0) out_of_range(c, number_text(v), "a finite number of at least 0");
    return v;
  }
  // A share, as a percentage (0-100) or a ratio (0-1); a little past the top is rounding.
  double share(int c, double top) const {
    const double v = d(c);
    if (!std::isfinite(v) || v < 0 || v > top * (1 + 1e-6)) {
      out_of_range(c, number_text(v), "between 0 and " + number_text(top));
    }
    return v;
  }
  std::optional<double> maybe_share(int c, double top) const {
    return s_.type(c) == SQLITE_NULL ? std::nullopt : std::optional<double>(share(c, top));
  }
  double finite(int c) const {
    const double v = d(c);
    if (!std::isfinite(v)) out_of_range(c, number_text(v), "a finite number");
    return v;
  }
  std::string t(int c) const {
    if (s_.type(c) != SQLITE_TEXT) bad(c, "text");
    return s_.text(c);
  }
  TimeSpan span(int c) const {
    TimeSpan s{i(c), i(c + 1)};
    if (s.end < s.start) problem("ends before it starts");
    return s;
  }
  [[noreturn]] void problem(const std::string& what) const {
    db_.fail("row " + std::to_string(row_) + " of table " + table_ + ": " + what);
  }

 private:
  [[noreturn]] void bad(int c, const char* expected) const {
    problem(std::string("column ") + s_.column_name(c) + " is not " + expected);
  }
  [[noreturn]] void out_of_range(int c, const std::string& value, const std::string& expected) const {
    problem(std::string("column ") + s_.column_name(c) + " is " + value + ", not " + expected);
  }
  static std::string number_text(double v) {
    std::ostringstream o;
    o << v;
    return o.str();
  }
  const sqlite::Database& db_;
  const sqlite::Statement& s_;
  const char* table_;
  std::int64_t row_;
};

template <class Fn>
std::int64_t for_each_row(const sqlite::Database& db, const char* table, const char* columns, Fn&& fn) {
  sqlite::Statement st = db.prepare(std::string("SELECT ") + columns + " FROM " + table + " ORDER BY rowid");
  std::int64_t n = 0;
  while (st.next()) fn(Row(db, st, table, ++n));
  return n;
}

KernelType kernel_type_named(const Row& row, const std::string& name) {
  for (KernelType t : {KernelType::Communication, KernelType::Memory, KernelType::Computation, KernelType::Other}) {
    if (to_string(t) == name) return t;
  }
  row.problem("names an unknown kernel type '" + name + "'");
}

RankSummary read_rows(const sqlite::Database& db) {
  RankSummary s;
  const std::int64_t infos = for_each_row(db, "rank_info",
                                          "rank, local_rank, world_size, host, trace_name, source, begin_ns, "
                                          "end_ns, events, data_source",
                                          [&](const Row& r) {
                                            s.rank = r.i(0);
                                            s.local_rank = r.maybe_i(1);
                                            s.world_size = r.maybe_i(2);
                                            s.host = r.t(3);
                                            s.trace_name = r.t(4);
                                            s.source = r.t(5);
                                            const TimeSpan span = r.span(6);
                                            s.begin = span.start;
                                            s.end = span.end;
                                            s.events = r.count(8);
                                            s.data_source = r.t(9);
                                            if (s.rank < 0) r.problem("has a negative rank");
                                          });
  if (infos != 1) db.fail("table rank_info has " + std::to_string(infos) + " rows, not 1");
  const std::int64_t htas =
      for_each_row(db, "hta_rank",
                   "idle_us, compute_us, non_compute_us, kernel_time_us, idle_pct, compute_pct, non_compute_pct, "
                   "comm_comp_overlap_pct, launches, mean_cpu_duration_us, mean_gpu_duration_us, mean_launch_delay_us, "
                   "max_launch_delay_us, short_kernels, profiler_steps, step_filter_applied",
                   [&](const Row& r) {
                     TemporalBreakdown& t = s.hta.temporal;
                     t.idle = r.count(0);
                     t.compute = r.count(1);
                     t.non_compute = r.count(2);
                     t.kernel_time = r.count(3);
                     t.idle_pct = r.share(4, 100);
                     t.compute_pct = r.share(5, 100);
                     t.non_compute_pct = r.share(6, 100);
                     s.hta.comm_comp_overlap_pct = r.maybe_share(7, 100);
                     LaunchSummary& l = s.hta.launches;
                     l.count = r.count(8);
                     l.mean_cpu_duration = r.amount(9);
                     l.mean_gpu_duration = r.amount(10);
                     // A launch delay can be negative: the CPU's and the GPU's clocks apart.
                     l.mean_launch_delay = r.finite(11);
                     l.max_launch_delay = r.i(12);
                     l.short_kernels = r.count(13);
                     s.hta.profiler_steps = r.count(14);
                     s.hta.step_filter_applied = r.i(15) != 0;
                   });
  if (htas != 1) db.fail("table hta_rank has " + std::to_string(htas) + " rows, not 1");
  for_each_row(db, "hta_kernel_type", "kernel_type, sum_us, percentage", [&](const Row& r) {
    s.hta.kernel_types.push_back({r.t(0), r.count(1), r.share(2, 100)});
  });
  for_each_row(db, "hta_kernel", "name, kernel_type, count, sum_us, min_us, max_us, mean_us, stddev_us",
               [&](const Row& r) {
                 KernelNameStats k;
                 k.name = r.t(0);
                 k.type = kernel_type_named(r, r.t(1));
                 k.count = r.count(2);
                 k.sum = r.count(3);
                 k.min = r.count(4);
                 k.max = r.count(5);
                 k.mean = r.amount(6);
                 k.stddev = r.amount(7);
                 if (k.min > k.max) r.problem("has min_us " + std::to_string(k.min) + " above max_us " + std::to_string(k.max));
                 s.hta.kernels.push_back(std::move(k));
               });
  for_each_row(db, "hta_idle_time",
               "device, stream, host_wait_us, kernel_wait_us, other_us, host_wait_ratio, kernel_wait_ratio, "
               "other_ratio",
               [&](const Row& r) {
                 s.hta.idle_time.push_back({.device = r.maybe_i(0),
                                            .stream = r.maybe_i(1),
                                            .host_wait = r.count(2),
                                            .kernel_wait = r.count(3),
                                            .other = r.count(4),
                                            .host_wait_ratio = r.share(5, 1),
                                            .kernel_wait_ratio = r.share(6, 1),
                                            .other_ratio = r.share(7, 1)});
               });
  for_each_row(db, "step", "number, name, start_ns, end_ns, data_wait_ns", [&](const Row& r) {
    const TimeSpan span = r.span(2);
    const TimeNs wait = r.i(4);
    if (wait < 0) r.problem("has a negative data wait");
    s.steps.push_back(
        {.number = r.maybe_i(0), .name = r.t(1), .start = span.start, .end = span.end, .data_wait = wait});
  });
  for_each_row(db, "data_wait", "start_ns, end_ns", [&](const Row& r) { s.data_waits.push_back(r.span(0)); });
  for_each_row(db, "collective", "communicator, sequence, pytorch_sequence, step, op, bytes, start_ns, end_ns",
               [&](const Row& r) {
                 const TimeSpan span = r.span(6);
                 s.collectives.push_back({.communicator = r.t(0),
                                          .sequence = r.i(1),
                                          .pytorch_sequence = r.i(2) != 0,
                                          .step = r.maybe_i(3),
                                          .op = r.t(4),
                                          .bytes = r.maybe_count(5),
                                          .start = span.start,
                                          .end = span.end});
               });
  return s;
}

bool sqlite_header(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  char head[16] = {};
  in.read(head, sizeof head);
  return in.gcount() == 16 && std::memcmp(head, "SQLite format 3", 16) == 0;
}

} // namespace

void write_rank_summary(const RankSummary& summary, const std::filesystem::path& path) {
  // Written beside the target and renamed over it: a reader never sees half a summary.
  check_replaceable_output(path);
  const std::filesystem::path partial = path.string() + ".partial";
  std::error_code ec;
  std::filesystem::remove(partial, ec);
  try {
    sqlite::Database db(partial, sqlite::Access::Create, path.string() + ": cannot write the summary");
    // Small pages: a summary is a few rows per table, and its tables are many.
    db.exec("PRAGMA page_size = 1024; PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;");
    db.exec("BEGIN");
    db.exec(kSchema);
    write_rows(db, summary);
    db.exec("COMMIT");
  } catch (const TraceError&) {
    std::filesystem::remove(partial, ec);
    throw;
  }
  std::filesystem::rename(partial, path, ec);
  if (ec) {
    std::filesystem::remove(partial, ec);
    throw TraceError(path.string() + ": cannot write the summary: " + ec.message());
  }
}

bool is_rank_summary_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec) || !sqlite_header(path)) return false;
  try {
    sqlite::Database db(path, sqlite::Access::ReadOnly);
    return db.has_table("summary_meta");
  } catch (const TraceError&) {
    return false;
  }
}

JobInputs sort_job_inputs(const std::vector<std::string>& inputs) {
  JobInputs in;
  for (const std::string& input : inputs) {
    std::error_code ec;
    if (std::filesystem::is_directory(input, ec)) {
      std::vector<std::filesystem::path> found;
      for (const auto& entry : std::filesystem::directory_iterator(input, ec)) {
        if (is_rank_summary_file(entry.path())) found.push_back(entry.path());
      }
      if (!found.empty()) {
        std::sort(found.begin(), found.end());
        in.summaries.insert(in.summaries.end(), found.begin(), found.end());
        continue;
      }
    }
    for (const std::filesystem::path& f : job_files({input})) {
      const bool summary = f.filename().string().ends_with(".summary.db") || is_rank_summary_file(f);
      (summary ? in.summaries : in.traces).push_back(f);
    }
  }
  return in;
}

RankSummary read_rank_summary(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw TraceError(path.string() + ": no such file");
  if (!std::filesystem::is_regular_file(path, ec)) throw TraceError(path.string() + ": not a file");
  if (!sqlite_header(path)) throw TraceError(path.string() + ": not a rank summary (not an SQLite file)");
  sqlite::Database db(path, sqlite::Access::ReadOnly);
  if (!db.has_table("summary_meta")) {
    throw TraceError(path.string() + ": not a rank summary (an SQLite file with no summary_meta table)");
  }
  std::map<std::string, std::string> meta;
  for_each_row(db, "summary_meta", "key, value", [&](const Row& r) { meta[r.t(0)] = r.t(1); });
  if (meta["format"] != kRankSummaryFormat) {
    throw TraceError(path.string() + ": not a rank summary (format '" + meta["format"] + "')");
  }
  if (meta["version"] != std::to_string(kRankSummaryVersion)) {
    throw TraceError(path.string() + ": rank summary version " + meta["version"] + "; this dreamscope reads version " +
                     std::to_string(kRankSummaryVersion) + " (summarise the rank again with this dreamscope)");
  }
  return read_rows(db);
}

} // namespace dreamscope::analyzers
