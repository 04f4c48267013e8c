// The SQL of trace schema v1, in one place for the writer, the reader and the docs test.
#pragma once

#include "dreamscope/storage/columns.h"

#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace dreamscope::schema {

// How a CREATE TABLE statement frames a table's columns (tables.h): what comes before them
// (`lead`: a column of SQL's own, by its definition, such as a row id; or a column of the table
// pulled to the front, by its member's name), how many go on each line of the statement (the
// last count repeats), and what follows them (a key on a line of its own, options after the
// parenthesis). The layout is schema v1's, to the character: SQLite keeps each statement's text.
struct Frame {
  std::vector<std::string_view> lead = {};
  std::vector<std::size_t> per_line = {4};
  std::string_view key = {};
  std::string_view options = {};
};

// (member name, SQLite column definition) of each column of a tuple of them (columns.h).
template <class Columns>
std::vector<std::pair<std::string_view, std::string_view>> definitions(const Columns& columns) {
  std::vector<std::pair<std::string_view, std::string_view>> out;
  columns::each(columns, [&](const auto& c) { out.emplace_back(c.name, c.sql); });
  return out;
}

inline std::string create_table(std::string_view table,
                                std::vector<std::pair<std::string_view, std::string_view>> columns,
                                const Frame& frame) {
  std::vector<std::string_view> ordered;
  for (std::string_view lead : frame.lead) {
    if (lead.find(' ') != std::string_view::npos) { // SQL's own column
      ordered.push_back(lead);
      continue;
    }
    auto it = std::find_if(columns.begin(), columns.end(), [&](const auto& c) { return c.first == lead; });
    ordered.push_back(it->second);
    columns.erase(it);
  }
  for (const auto& c : columns) ordered.push_back(c.second);
  std::vector<std::string> lines;
  for (std::size_t i = 0, line = 0; i < ordered.size(); ++line) {
    const std::size_t n = frame.per_line[std::min(line, frame.per_line.size() - 1)];
    std::string text = "  ";
    for (std::size_t k = 0; k < n && i < ordered.size(); ++k, ++i) text += std::string(k ? ", " : "") += ordered[i];
    lines.push_back(std::move(text));
  }
  if (!frame.key.empty()) lines.push_back("  " + std::string(frame.key));
  std::string sql = "CREATE TABLE " + std::string(table) + "(\n";
  for (std::size_t i = 0; i < lines.size(); ++i) sql += lines[i] + (i + 1 < lines.size() ? ",\n" : "");
  return sql + ")" + std::string(frame.options) + ";\n";
}

template <class Record>
std::string create_table(const Frame& frame) {
  using D = columns::Definition<Record>;
  return create_table(D::name, definitions(D::columns), frame);
}

// The event tables begin with their primary key: they are WITHOUT ROWID and clustered on (track,
// start, id), so a track's events lie together on disk in time order, a time-window query on one
// track is a range scan of the primary key with no second index to store, and the reader streams
// each track already sorted. Events store `dur` rather than `end` (a short duration is 1-3 bytes,
// an absolute time 6-8), and kernels share deduplicated launch configurations: both keep an event
// near 35 bytes on disk. `id` numbers the events of all three tables, for the args.
inline constexpr std::array<std::string_view, 4> kEventLead = {"track", "start", "id INTEGER NOT NULL", "end"};

// Where an event table's columns (definition order), then its id, stand in the table (the order
// of CREATE TABLE). The writer's batched INSERT lists them so: SQLite then stores each row of a
// multi-row VALUES as it comes, where a list in another order costs a copy of every value.
template <class Record>
constexpr std::array<std::size_t, columns::count<Record> + 1> event_positions() {
  std::array<std::string_view, columns::count<Record>> names{};
  columns::each_indexed(columns::Definition<Record>::columns, [&](const auto& c, auto i) { names[i] = c.name; });
  std::array<std::size_t, columns::count<Record> + 1> at{};
  std::array<bool, columns::count<Record>> lead{};
  for (std::size_t k = 0; k < kEventLead.size(); ++k) {
    if (kEventLead[k].find(' ') != std::string_view::npos) {
      at[names.size()] = k; // the id
      continue;
    }
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (names[i] == kEventLead[k]) {
        at[i] = k;
        lead[i] = true;
      }
    }
  }
  std::size_t next = kEventLead.size();
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (!lead[i]) at[i] = next++;
  }
  return at;
}

// "grid_x, grid_y, ...": the launch table's columns, its id apart (columns::for_each_field).
inline std::string launch_columns() {
  std::string names;
  const LaunchConfig none;
  columns::for_each_field(none, [&](std::int32_t, std::string_view sql) {
    (names += names.empty() ? "" : ", ") += sql.substr(0, sql.find(' '));
  });
  return names;
}

// Tables, created empty when a trace file is made. Tables added after a file format was
// released (thread_load, process_rank, memory_event) may be missing from older files: the reader
// takes a missing one as empty, and older readers never look at it; so may a column added to a
// table since, which the reader takes as its default. memory_event is clustered on (time, id),
// the order the memory view and curve read it in.
inline const std::string& create_tables() {
  static const std::string sql = [] {
    std::vector<std::pair<std::string_view, std::string_view>> launch;
    const LaunchConfig none;
    columns::for_each_field(none, [&](auto, std::string_view definition) { launch.emplace_back("", definition); });
    const std::string_view id = "id INTEGER PRIMARY KEY";
    const Frame events = {.lead = {kEventLead.begin(), kEventLead.end()},
                          .key = "PRIMARY KEY(track, start, id)",
                          .options = " WITHOUT ROWID"};
    return "\nCREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;\n"
           "CREATE TABLE string(id INTEGER PRIMARY KEY, value TEXT NOT NULL);\n" +
           create_table("process", definitions(columns::Definition<ProcessInfo>::process_columns),
                        {.lead = {id}, .per_line = {5, 3}}) +
           create_table<DeviceInfo>({.lead = {id, "process"}, .per_line = {3, 4, 2, 2, 1}}) +
           create_table<TrackInfo>({.lead = {id}, .per_line = {3, 4}}) + create_table<CudaApiRecord>(events) +
           create_table("launch", launch, {.lead = {id}, .per_line = {5, 4}}) + create_table<GpuOpRecord>(events) +
           create_table<AnnotationRecord>(events) + create_table<FlowRecord>({.lead = {id}}) +
           create_table<CalibrationRecord>({}) +
           "CREATE TABLE arg(\n"
           "  event INTEGER NOT NULL, key INTEGER NOT NULL, type INTEGER NOT NULL, int_value INTEGER,\n"
           "  real_value REAL, text INTEGER);\n" +
           create_table<OverheadRecord>({.lead = {id}}) +
           create_table("process_rank", definitions(columns::Definition<ProcessInfo>::rank_columns),
                        {.lead = {"process INTEGER PRIMARY KEY REFERENCES process"}, .per_line = {3}}) +
           create_table<ThreadLoadRecord>({.per_line = {4, 3, 2}}) +
           create_table<MemoryEventRecord>({.lead = {"track", "time", "id INTEGER NOT NULL"},
                                            .key = "PRIMARY KEY(time, id)",
                                            .options = " WITHOUT ROWID"});
  }();
  return sql;
}

// Views that resolve names, so that `sqlite3 trace.db` answers questions directly.
inline constexpr const char* kCreateViews = R"sql(
CREATE VIEW thread AS
  SELECT t.id AS track, p.pid AS pid, t.tid AS tid, t.name AS name
  FROM track t LEFT JOIN process p ON p.id = t.process WHERE t.kind = 0;
CREATE VIEW stream AS
  SELECT t.id AS track, d.ordinal AS device, t.stream AS stream, t.name AS name
  FROM track t LEFT JOIN device d ON d.id = t.device WHERE t.kind = 1;
CREATE VIEW kernel AS
  SELECT g.id, g.track, g.start, g.start + g.dur AS end, g.dur, s.value AS name, g.correlation,
         l.grid_x, l.grid_y, l.grid_z, l.block_x, l.block_y, l.block_z,
         l.registers_per_thread, l.shared_memory_static, l.shared_memory_dynamic
  FROM gpu_op g JOIN string s ON s.id = g.name LEFT JOIN launch l ON l.id = g.launch
  WHERE g.kind = 0;
CREATE VIEW gpu_op_named AS
  SELECT g.id, g.track, g.start, g.start + g.dur AS end, g.dur,
         CASE g.kind WHEN 0 THEN 'kernel' WHEN 1 THEN 'memcpy' WHEN 2 THEN 'memset'
                     WHEN 3 THEN 'sync' END AS kind,
         s.value AS name, g.correlation, g.bytes
  FROM gpu_op g JOIN string s ON s.id = g.name;
CREATE VIEW cuda_api_named AS
  SELECT a.id, a.track, a.start, a.start + a.dur AS end, a.dur, s.value AS name,
         CASE a.kind WHEN 0 THEN 'runtime' ELSE 'driver' END AS api, a.cbid,
         a.correlation, a.result
  FROM cuda_api a JOIN string s ON s.id = a.name;
CREATE VIEW arg_named AS
  SELECT a.event, k.value AS key,
         CASE a.type WHEN 0 THEN a.int_value WHEN 1 THEN a.real_value ELSE t.value END AS value,
         CASE a.type WHEN 0 THEN 'int' WHEN 1 THEN 'double' WHEN 2 THEN 'string' ELSE 'json' END AS type
  FROM arg a JOIN string k ON k.id = a.key LEFT JOIN string t ON t.id = a.text;
CREATE VIEW annotation_named AS
  SELECT a.id, a.track, a.start, a.start + a.dur AS end, a.dur, s.value AS name,
         d.value AS domain, c.value AS category, a.payload, a.filled_from
  FROM annotation a JOIN string s ON s.id = a.name
       LEFT JOIN string d ON d.id = a.domain LEFT JOIN string c ON c.id = a.category;
)sql";

} // namespace dreamscope::schema
