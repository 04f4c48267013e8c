PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
INSERT INTO meta VALUES('clock','CLOCK_MONOTONIC (TSC-interpolated)');
INSERT INTO meta VALUES('command','/tmp/ceo/main/build/release/bin/cpu_train --steps 5');
INSERT INTO meta VALUES('complete','1');
INSERT INTO meta VALUES('cpSERT INTO anu_cores','2');
INSERT INTO meta VALUES('dreamscope_version','0.1.0');
INSERT INTO meta VALUES('dropped_events','0');
INSERT INTO meta VALUES('end','1779389242655');
INSERT INTO meta VALUES('host','vm');
INSERT INTO meta VALUES('parts','1');
INSERT INTO meta VALUES('rows.annotation','100000000000');
INSERT INTO meta VALUES('rows.cuda_api','0');
INSERT INTO meta VALUES('rows.gpu_op','0');
INSERT INTO meta VALUES('schema_version','1');
INSERT INTO meta VALUES('source','tracer');
INSERT INTO meta VALUES('start','1779320883950');
INSERT INTO meta VALUES('tracer_writer_cpu_ns','1898324');
INSERT INTO meta VALUES('warnings','no CUDA driver on this machine (libcuda.so.1 not loadable): recording NVTX and the CPU side only');
CREATE TABLE string(id INTEGER PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO string VALUES(1,'cpu');
INSERT INTO string VALUES(2,'dreamscope');
INSERT INTO string VALUES(3,'fetch');
INSERT INTO string VALUES(4,'prep');
INSERT INTO string VALUES(5,'tracer_buffer_map');
INSERT INTO string VALUES(6,'wait');
INSERT INTO string







 VALUES(7,'forward');
INSERT INTO string VALUES(8,'operation');
INSERT INTO string VALUES(9,'loss');
INSERT INTO string VALUES(10,'backward');
INSERT INTO string VALUES(11,'optimizer');
INSERT INTO string VALUES(12,'step');
INSERT INTO string VALUES(13,'batch');
CREATE TABLE process(
  id INTEGER PRIMARY KEY, pid INTEGER NOT NULL, parent_pid INTEGER, name TEXT, command TEXT,
  start INTEGER, end INTEGER, exit_status INTEGER);
INSERT INTO process VALUES(0,14085,14084,'cpu_train','/tmp/ceo/main/build/release/bin/cpu_train --steps 5',1779320883950,1779389242655,0);
CREATE TABLE device(
  id INTEGER PRIMARY KEY, process INTEGER REFERENCES process, ordinal INTEGER NOT NULL,
  name TEXT, sm_count INTEGER, core_clock_khz INTEGER, memory_clock_khz INTEGER,
  memory_bus_width_bits INTEGER, memory_bandwidth_bytes_per_s INTEGER,
  global_memory_bytes INTEGER, compute_capability_major INTEGER,
  compute_capability_minor INTEGER);
CREATE TABLE track(
  id INTEGER PRIMARY KEY, kind INTEGER NOT NULL, process INTEGER REFERENCES process,
  tid INTEGER, device INTEGER REFERENCES device, stream INTEGER, name TEXT);
INSERT INTO track VALUES(0,0,0,14087,NULL,NULL,'loader-0');
INSERT INTO track VALUES(1,0,0,14085,NULL,NULL,'cpu_train');
INSERT INTO track VALUES(2,0,0,14088,NULL,NULL,'loader-1');
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
INSERT INTO annotation VALUES(0,1779371058116,1,240041,3,2,3,0,NULL);
INSERT INTO annotation VALUES(0,1779371297927,2,0,1,2,1,234988,NULL);
INSERT INTO annotation VALUES(0,1779371298428,3,201184,4,2,4,0,NULL);
INSERT INTO annotation VALUES(0,1779371499552,4,0,1,2,1,198694,NULL);
INSERT INTO annotation VALUES(0,1779371525781,5,4365258,3,2,3,1,NULL);
INSERT INTO annotation VALUES(0,1779375891019,6,0,1,2,1,231453,NULL);
INSERT INTO annotation VALUES(0,1779375891119,7,217886,4,2,4,1,NULL);
INSERT INTO annotation VALUES(0,1779376108955,8,0,1,2,1,216790,NULL);
INSERT INTO annotation VALUES(1,1779371097999,9,1300283,12,2,12,0,NULL);
INSERT INTO annotation VALUES(1,1779371107022,10,444000,6,2,6,0,NULL);
INSERT INTO annotation VALUES(1,1779371561588,11,224759,7,2,8,NULL,NULL);
INSERT INTO annotation VALUES(1,1779371786647,12,471400,9,2,8,NULL,NULL);
INSERT INTO annotation VALUES(1,1779372259169,13,132664,10,2,8,NULL,NULL);
INSERT INTO annotation VALUES(1,1779372392143,14,5959,11,2,8,NULL,NULL);
INSERT INTO annotation VALUES(1,1779372398763,15,4091197,12,2,12,1,NULL);
INSERT INTO annotation VALUES(1,1779372398913,16,3748645,6,2,6,1,NULL);
INSERT INTO annotation VALUES(1,1779376149490,17,237646,7,2,8,NULL,NULL);
INSERT INTO annotation VALUES(1,1779376387356,18,3486,9,2,8,NULL,NULL);
INSERT INTO annotation VALUES(1,1779376390872,19,93850,10,2,8,NULL,NULL);
INSERT INTO annotation VALUES(1,1779376484752,20,4997,11,2,8,NULL,NULL);
INSERT INTO annotation VALUES(1,1779376490771,21,322122,12,2,12,2,NULL);
INSERT INTO annotation VALUES(1,1779376490881,22,381,6,2,6,2,NULL);
INSERT INTO annotation VALUES(1,1779376491492,23,222643,7,2,8,NULL,NULL);
INSERT INTO annotation VALUES(1,1779376714155,24,2704,9,2,8,NULL,NULL);
INSERT INTO annotation VALUES(1,1779376716879,25,90826,10,2,8,NULL,NULL);
INSERT INTO annotation VALUES(1,1779376807725,26,5078,11,2,8,NULL,NULL);
INSERT INTO annotation VALUES(1,1779376813033,27,317064,12,2,12,3,NULL);
INSERT INTO annotation VALUES(1,1779376813083,28,170,6,2,6,3,NULL);
INSERT INTO annotation VALUES(1,1779376813444,29,218587,7,2,8,NULL,NULL);
INSERT INTO annotation VALUES(1,1779377032071,30,2674,9,2,8,NULL,NULL);
INSERT INTO annotation VALUES(1,1779377034765,31,90385,10,2,8,NULL,NULL);
INSERT INTO annotation VALUES(1,1779377125160,32,4907,11,2,8,NULL,NULL);
INSERT INTO annotation VALUES(1,1779377130188,33,318346,12,2,12,4,NULL);
INSERT INTO annotation VALUES(1,1779377130238,34,150,6,2,6,4,NULL);
INSERT INTO annotation VALUES(1,1779377130578,35,220350,7,2,8,NULL,NULL);
INSERT INTO annotation VALUES(1,1779377350938,36,2694,9,2,8,NULL,NULL);
INSERT INTO annotation VALUES(1,1779377353642,37,89904,10,2,8,NULL,NULL);
INSERT INTO annotation VALUES(1,1779377443566,38,9836,11,2,8,NULL,NULL);
INSERT INTO annotation VALUES(2,1779372437976,39,195867,3,2,3,2,NULL);
INSERT INTO annotation VALUES(2,1779372633752,40,0,1,2,1,185325,NULL);
INSERT INTO annotation VALUES(2,1779372634003,41,419995,4,2,4,2,NULL);
INSERT INTO annotation VALUES(2,1779373053918,42,0,1,2,1,215283,NULL);
INSERT INTO annotation VALUES(2,1779373064042,43,172022,3,2,3,3,NULL);
INSERT INTO annotation VALUES(2,1779373236054,44,0,1,2,1,171104,NULL);
INSERT INTO annotation VALUES(2,1779373236114,45,2189098,4,2,4,3,NULL);
INSERT INTO annotation VALUES(2,1779375425112,46,0,1,2,1,150733,NULL);
INSERT INTO annotation VALUES(2,1779305448897,47,224516,3,2,3,4,NULL);
INSERT INTO annotation VALUES(2,1779375673393,48,0,1,2,1,223301,NULL);
INSERT INTO annotation VALUES(2,1779375673483,49,196104,4,2,4,4,NULL);
INSERT INTO annotation VALUES(2,1779375869547,50,0,1,2,1,194528,NULL);
CREATE TABLE flow(
  id INTEGER PRIMARY KEY, kind INTEGER, from_track INTEGER NOT NULL, from_time INTEGER NOT NULL,
  to_track INTEGER NOT NULL, to_time INTEGER NOT NULL, flow_id INTEGER);
INSERT INTO flow VALUES(1,13,0,1779371499612,1,1779371551022,0);
INSERT INTO flow VALUES(2,13,0,1779376109005,1,1779376147558,1);
INSERT INTO flow VALUES(3,13,2,1779373053998,1,1779376491262,2);
INSERT INTO flow VALUES(4,13,2,1779375425212,1,1779376813253,3);
INSERT INTO flow VALUES(5,13,2,1779375869587,1,1779377130388,4);
CREATE TABLE calibration(
  event_kind TEXT PRIMARY KEY, cost_ns REAL NOT NULL, samples INTEGER, method TEXT);
INSERT INTO calibration VALUES('nvtx_mark',904939999999999997726,5000,'self-calibration at tracer start: median of 5 x 1000 calls into a scratch buffer');
INSERT INTO calibration VALUES('nvtx_range',18.998000000000001108,5000,'self-calibration at tracer start: median of 5 x 1000 calls into a scratch buffer');
CREATE TABLE arg(
  event INTEGER NOT NULL, key INTEGER NOT NULL, type INTEGER NOT NULL, int_value INTEGER,
  real_value REAL, text INTEGER);
CREATE TABLE overhead(
  id INTEGER PRIMARY KEY, track INTEGER NOT NULL, start INTEGER NOT NULL, dur INTEGER NOT NULL,
  kind INTEGER);
INSERT INTO overhead VALUES(1,1,1779371098029,6560,5);
INSERT INTO overhead VALUES(2,2,1779372438016,8532,5);
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
  SELECT a.id, a.track, a.start, a.start + a.dur AS end,àa.dur, s.value AS name,
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
COMMIT;
