-- A small Nsight Systems SQLite export (see README.md for where the schema comes from).
-- Process 4242, main thread 4242 and a data-loader thread 4250; one GPU, streams 7 and 13.
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE ThreadNames (nameId INTEGER NOT NULL REFERENCES StringIds(id), priority INTEGER, globalTid INTEGER);
CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT);
CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, busLocation TEXT,
  isDiscrete INTEGER, l2CacheSize INTEGER, totalMemory INTEGER, memoryBandwidth INTEGER, clockRate INTEGER,
  smCount INTEGER, pwGpuId INTEGER, uuid TEXT, luid INTEGER, chipName TEXT, cuDevice INTEGER, ctxId INTEGER,
  ctxVmId INTEGER, computeMajor INTEGER, computeMinor INTEGER, maxIPC INTEGER, maxRegistersPerBlock INTEGER,
  maxShmemPerBlock INTEGER, maxShmemPerBlockOptin INTEGER, maxShmemPerMultiprocessor INTEGER,
  maxRegistersPerSm INTEGER, maxWarpsPerSm INTEGER, threadsPerWarp INTEGER, asyncEngines INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,
  eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER,
  nameId INTEGER NOT NULL REFERENCES StringIds(id), returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER NOT NULL REFERENCES StringIds(id), shortName INTEGER NOT NULL REFERENCES StringIds(id),
  mangledName INTEGER REFERENCES StringIds(id), launchType INTEGER, cacheConfig INTEGER,
  registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL,
  blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL,
  dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL, localMemoryTotal INTEGER NOT NULL,
  gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER, graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER,
  srcDeviceId INTEGER, srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER, migrationCause INTEGER,
  graphNodeId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  value INTEGER NOT NULL, bytes INTEGER NOT NULL, graphNodeId INTEGER, memKind INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER,
  globalPid INTEGER, syncType INTEGER NOT NULL, eventId INTEGER NOT NULL);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
  category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER,
  textId INTEGER REFERENCES StringIds(id), domainId INTEGER, uint64Value INTEGER, int64Value INTEGER,
  doubleValue REAL, uint32Value INTEGER, int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT);

-- globalTid = (4242 << 24) | tid = 71168950272 + tid; globalPid = 71168950272.
INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel_v7000'), (2, 'cudaMemcpyAsync_v3020'),
  (3, 'cudaStreamSynchronize_v3020'), (4, 'cuLaunchKernel'), (5, 'void gemm_kernel<float>(float*, int)'),
  (6, 'gemm_kernel'), (7, 'pt_main_thread'), (8, 'loader'), (9, 'forward'), (10, 'cudaMemsetAsync_v3020');
INSERT INTO ThreadNames VALUES (7, 0, 71168954514), (8, 0, 71168954522);
INSERT INTO PROCESSES VALUES (71168950272, 4242, 'python');
INSERT INTO TARGET_INFO_GPU (vmId, id, name, totalMemory, memoryBandwidth, clockRate, smCount, computeMajor,
  computeMinor) VALUES (0, 0, 'NVIDIA H100 80GB HBM3', 85520809984, 3352320000000, 1980000000, 132, 9, 0);

INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES
  (1000, 1400, 1, 71168954514, 101, 1, 0, NULL),
  (1500, 1700, 1, 71168954514, 102, 2, 0, NULL),
  (1800, 1900, 1, 71168954514, 103, 10, 0, NULL),
  (2000, 9000, 1, 71168954514, 104, 3, 0, NULL),
  (3000, 3100, 1, 71168954522, 105, 4, 0, NULL);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, correlationId, globalPid,
  demangledName, shortName, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory,
  dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId) VALUES
  (2100, 5100, 0, 1, 7, 101, 71168950272, 5, 6, 64, 128, 2, 1, 256, 1, 1, 4096, 1024, 0, 0, 1),
  (3200, 3900, 0, 1, 13, 105, 71168950272, 5, 6, 32, 1, 1, 1, 128, 1, 1, 0, 0, 0, 0, 2);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId, correlationId, globalPid, bytes,
  copyKind) VALUES (5200, 6200, 0, 1, 7, 102, 71168950272, 1048576, 1);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (start, end, deviceId, contextId, streamId, correlationId, globalPid, value,
  bytes) VALUES (6300, 6400, 0, 1, 7, 103, 71168950272, 0, 4096);
INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES (2000, 9000, 0, 1, 7, 104, 71168950272, 3, 4294967295);

INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) VALUES
  (0, NULL, 75, 'dreamscope', 71168954514, 1);
INSERT INTO NVTX_EVENTS (start, end, eventType, text, textId, globalTid, domainId, int64Value) VALUES
  (900, 9500, 59, NULL, 9, 71168954514, 0, NULL),
  (950, 9400, 59, 'step', NULL, 71168954514, 1, 17),
  (2900, 3300, 60, 'fetch', NULL, 71168954522, 1, 17),
  (4000, 4000, 34, 'mark', NULL, 71168954514, 0, NULL),
  (5000, NULL, 59, 'unfinished', NULL, 71168954514, 0, NULL);
