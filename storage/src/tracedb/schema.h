// The SQL of trace schema v1, in one place for the writer, the reader and the docs test.
#pragma once

namespace dreamscope::schema {

// Tables, created empty when a trace file is made. Event tables are WITHOUT ROWID and
// clustered on (track, start, id): a track's events lie together on disk in time order,
// so a time-window query on one track is a range scan of the primary key with no second
// index to store, and the reader streams each track already sorted. Events store `dur`
// rather than `end` (a short duration is 1-3 bytes, an absolute time 6-8), and kernels
// share deduplicated launch configurations: both keep an event near 35 bytes on disk.
// Tables added after a file format was released (thread_load, process_rank, memory_event) may be
// missing from older files: the reader takes a missing one as empty, and older readers never look
// at it. memory_event is clustered on (time, id), the order the memory view and curve read it in.
inline constexpr const char* kCreateTables = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE string(id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE process(
  id INTEGER PRIMARY KEY, pid INTEGER NOT NULL, parent_pid INTEGER, name TEXT, command TEXT,
  start INTEGER, end INTEGER, exit_status INTEGER);
CREATE TABLE device(
  id INTEGER PRIMARY KEY, process INTEGER REFERENCES process, ordinal INTEGER NOT NULL,
  name TEXT, sm_count INTEGER, core_clock_khz INTEGER, memory_clock_khz INTEGER,
  memory_bus_width_bits INTEGER, memory_bandwidth_bytes_per_s INTEGER,
  global_memory_bytes INTEGER, compute_capability_major INTEGER,
  compute_capability_minor INTEGER);
CREATE TABLE track(
  id INTEGER PRIMARY KEY, kind INTEGER NOT NULL, process INTEGER REFERENCES process,
  tid INTEGER, device INTEGER REFERENCES device, stream INTEGER, name TEXT);
CREATE TABLE cuda_api(
  track INTEGER NOT NULL, start INTEGER NOT NULL, id INTEGER NOT NULL, dur INTEGER NOT NULL,
  name INTEGER NOT NULL, cbid INTEGER, kind INTEGER, correlation INTEGER,
  external_id INTEGER, result INTEGER, stream INTEGER, event INTEGER,
  PRIMARY KEY(track, start, id)) WITHOUT ROWID;
CREATE TABLE launch(
  id INTEGER PRIMARY KEY, grid_x INTEGER, grid_y INTEGER, grid_z INTEGER, block_x INTEGER,
  block_y INTEGER, block_z INTEGER, registers_per_thread INTEGER, shared_memory_static INTEGER,
  shared_memory_dynamic INTEGER);
CREATE TABLE gpu_op(
  track INTEGER NOT NULL, start INTEGER NOT NULL, id INTEGER NOT NULL, dur INTEGER NOT NULL,
  kind INTEGER NOT NULL, subkind INTEGER, name INTEGER NOT NULL, correlation INTEGER,
  launch INTEGER REFERENCES launch, bytes INTEGER, event INTEGER,
  PRIMARY KEY(track, start, id)) WITHOUT ROWID;
CREATE TABLE annotation(
  track INTEGER NOT NULL, start INTEGER NOT NULL, id INTEGER NOT NULL, dur INTEGER NOT NULL,
  name INTEGER NOT NULL, domain INTEGER, category INTEGER, payload INTEGER,
  external_id INTEGER,
  PRIMARY KEY(track, start, id)) WITHOUT ROWID;
CREATE TABLE flow(
  id INTEGER PRIMARY KEY, kind INTEGER, from_track INTEGER NOT NULL, from_time INTEGER NOT NULL,
  to_track INTEGER NOT NULL, to_time INTEGER NOT NULL, flow_id INTEGER);
CREATE TABLE calibration(
  event_kind TEXT PRIMARY KEY, cost_ns REAL NOT NULL, samples INTEGER, method TEXT);
CREATE TABLE arg(
  event INTEGER NOT NULL, key INTEGER NOT NULL, type INTEGER NOT NULL, int_value INTEGER,
  real_value REAL, text INTEGER);
CREATE TABLE overhead(
  id INTEGER PRIMARY KEY, track INTEGER NOT NULL, start INTEGER NOT NULL, dur INTEGER NOT NULL,
  kind INTEGER);
CREATE TABLE process_rank(
  process INTEGER PRIMARY KEY REFERENCES process, rank INTEGER, local_rank INTEGER,
  world_size INTEGER, host TEXT, clock_offset INTEGER NOT NULL DEFAULT 0);
CREATE TABLE thread_load(
  track INTEGER NOT NULL, start INTEGER NOT NULL, dur INTEGER NOT NULL, cpu_ns INTEGER,
  runqueue_ns INTEGER, events INTEGER NOT NULL, cost_samples INTEGER NOT NULL,
  range_cost_ns REAL, mark_cost_ns REAL);
CREATE TABLE memory_event(
  track INTEGER NOT NULL, time INTEGER NOT NULL, id INTEGER NOT NULL, device_type INTEGER,
  device_id INTEGER, addr INTEGER, bytes INTEGER NOT NULL, total_allocated INTEGER,
  total_reserved INTEGER,
  PRIMARY KEY(time, id)) WITHOUT ROWID;
)sql";

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
         d.value AS domain, c.value AS category, a.payload
  FROM annotation a JOIN string s ON s.id = a.name
       LEFT JOIN string d ON d.id = a.domain LEFT JOIN string c ON c.id = a.category;
)sql";

} // namespace dreamscope::schema
