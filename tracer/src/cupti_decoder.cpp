#include "cupti_decoder.h"

#include <array>
#include <cstring>
#include <string_view>

namespace dreamscope::tracer {

namespace {

// Called many times per step by frameworks, of no use to the graph and launching no GPU
// work: not recorded unless --cuda-api all (CUPTI is told not to record them, and the
// decoder skips them where it could not be). The second half were seen on every kernel
// launch of PyTorch 2.11 on an H100 (tests/data/gpu/pytorch_train.db): cuKernelGetName once
// per launch, the occupancy queries and attribute sets once per cuBLAS/cuDNN call.
constexpr std::array<std::string_view, 41> kNoisyApi = {
    "cudaGetDevice", "cudaGetLastError", "cudaPeekAtLastError", "cudaGetDeviceCount", "cudaDeviceGetAttribute",
    "cudaPointerGetAttributes", "cudaStreamIsCapturing", "cudaStreamGetCaptureInfo", "cudaFuncGetAttributes",
    "cudaGetFuncBySymbol", "cudaDriverGetVersion", "cudaRuntimeGetVersion", "cudaGetDeviceProperties",
    "cudaGetDriverEntryPoint", "cudaGetDriverEntryPointByVersion", "cudaGetExportTable", "cudaGetSymbolAddress",
    "cuCtxGetCurrent", "cuCtxSetCurrent", "cuCtxGetDevice", "cuDeviceGet", "cuDeviceGetAttribute",
    "cuGetProcAddress", "cuDriverGetVersion", "cuGetExportTable", "cuPointerGetAttribute",
    "cuPointerGetAttributes", "cuStreamIsCapturing", "cuStreamGetCaptureInfo", "cuDevicePrimaryCtxGetState",
    "cuKernelGetName", "cuFuncGetName", "cudaGetErrorString", "cudaGetErrorName", "cudaOccupancyMaxActiveClusters",
    "cuOccupancyMaxActiveClusters", "cudaFuncSetAttribute", "cuFuncSetAttribute", "cuFuncGetAttribute",
    "cuLibraryGetKernel", "cuCtxGetLimit"};

// Name parts of the calls an analysis reads, runtime and driver alike (cudaLaunchKernel,
// cuLaunchKernelEx, cudaGraphLaunch; cudaMemcpyAsync, cuMemcpyHtoDAsync; cudaFreeAsync...).
constexpr std::array<std::string_view, 19> kUsedApiParts = {
    "Launch",      "Memcpy",      "Memset",          "Synchronize",      "EventRecord",
    "EventQuery",  "StreamQuery", "StreamWaitEvent", "StreamWaitValue",  "StreamWriteValue",
    "BatchMemOp",  "Malloc",      "Free",            "MemAlloc",         "HostAlloc",
    "MemPrefetch", "Graph",       "Capture",         "MemPool"};

std::int64_t ns(std::uint64_t t) { return static_cast<std::int64_t>(t); }

} // namespace

CuptiDecoder::CuptiDecoder(TraceTarget& target, CuptiDecoderOptions options)
    : target_(target), options_(std::move(options)) {}

std::string CuptiDecoder::api_display_name(std::string raw) {
  auto v = raw.rfind("_v");
  if (v != std::string::npos && v + 2 < raw.size() &&
      raw.find_first_not_of("0123456789", v + 2) == std::string::npos) {
    raw.resize(v);
  }
  return raw;
}

bool CuptiDecoder::is_noisy_api(std::string_view name) {
  for (auto n : kNoisyApi) {
    if (name == n) return true;
  }
  return false;
}

bool CuptiDecoder::is_used_api(std::string_view name) {
  if (is_noisy_api(name)) return false;
  for (auto part : kUsedApiParts) {
    if (name.find(part) != std::string_view::npos) return true;
  }
  return false;
}

StringId CuptiDecoder::api_name(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  const std::uint64_t key = (static_cast<std::uint64_t>(domain) << 32) | cbid;
  auto it = api_names_.find(key);
  if (it != api_names_.end()) return it->second;
  std::string name = options_.api_name ? options_.api_name(domain, cbid) : std::string();
  if (name.empty()) name = (domain == CUPTI_CB_DOMAIN_RUNTIME_API ? "runtime#" : "driver#") + std::to_string(cbid);
  name = api_display_name(std::move(name));
  api_noisy_[key] = is_noisy_api(name);
  const StringId id = target_.intern(name);
  api_names_.emplace(key, id);
  return id;
}

std::uint32_t CuptiDecoder::device_of_context(std::uint32_t context) const {
  auto it = context_device_.find(context);
  return it == context_device_.end() ? 0 : it->second;
}

void CuptiDecoder::decode(const CUpti_Activity* record) {
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto& k = *reinterpret_cast<const cupti::KernelRecord*>(record);
      if (!target_.in_window(ns(k.start))) { ++target_.rows_skipped_by_window; return; }
      StringId name = 0;
      if (k.name) {
        auto it = kernel_names_.find(k.name);
        name = it != kernel_names_.end() ? it->second : kernel_names_.emplace(k.name, target_.intern(k.name)).first->second;
      }
      GpuOpRecord r{.track = target_.stream_track(k.deviceId, k.streamId), .kind = GpuOpKind::Kernel,
                    .start = ns(k.start), .end = ns(k.end), .name = name, .correlation = k.correlationId};
      r.launch = LaunchConfig{.grid = {k.gridX, k.gridY, k.gridZ}, .block = {k.blockX, k.blockY, k.blockZ},
                              .registers_per_thread = k.registersPerThread,
                              .shared_memory_static = k.staticSharedMemory,
                              .shared_memory_dynamic = k.dynamicSharedMemory};
      target_.writer().add(r);
      ++counts_.kernels;
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto& m = *reinterpret_cast<const cupti::MemcpyRecord*>(record);
      if (!target_.in_window(ns(m.start))) { ++target_.rows_skipped_by_window; return; }
      static const char* const kCopyNames[] = {"memcpy",     "memcpy HtoD", "memcpy DtoH", "memcpy HtoA",
                                               "memcpy AtoH", "memcpy AtoA", "memcpy AtoD", "memcpy DtoA",
                                               "memcpy DtoD", "memcpy HtoH", "memcpy PtoP"};
      const std::uint8_t kind = m.copyKind <= 10 ? m.copyKind : 0;
      target_.writer().add(GpuOpRecord{.track = target_.stream_track(m.deviceId, m.streamId),
                                       .kind = GpuOpKind::Memcpy, .subkind = kind, .start = ns(m.start),
                                       .end = ns(m.end), .name = target_.intern(kCopyNames[kind]),
                                       .correlation = m.correlationId, .bytes = static_cast<std::int64_t>(m.bytes)});
      ++counts_.memcpys;
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto& m = *reinterpret_cast<const cupti::MemsetRecord*>(record);
      if (!target_.in_window(ns(m.start))) { ++target_.rows_skipped_by_window; return; }
      target_.writer().add(GpuOpRecord{.track = target_.stream_track(m.deviceId, m.streamId),
                                       .kind = GpuOpKind::Memset, .start = ns(m.start), .end = ns(m.end),
                                       .name = target_.intern("memset"), .correlation = m.correlationId,
                                       .bytes = static_cast<std::int64_t>(m.bytes)});
      ++counts_.memsets;
      return;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto& s = *reinterpret_cast<const cupti::SyncRecord*>(record);
      if (!target_.in_window(ns(s.start))) { ++target_.rows_skipped_by_window; return; }
      static const char* const kSyncNames[] = {"sync", "cudaEventSynchronize", "cudaStreamWaitEvent",
                                               "cudaStreamSynchronize", "cudaDeviceSynchronize"};
      const std::uint8_t type = s.type <= 4 ? static_cast<std::uint8_t>(s.type) : 0;
      target_.writer().add(GpuOpRecord{
          .track = target_.stream_track(device_of_context(s.contextId), s.streamId), .kind = GpuOpKind::Sync,
          .subkind = type, .start = ns(s.start), .end = ns(s.end), .name = target_.intern(kSyncNames[type]),
          .correlation = s.correlationId,
          .event = s.cudaEventId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? kNoValue : static_cast<std::int64_t>(s.cudaEventId)});
      // The API row of the wait carries what it waited for, as cudaEventRecord's row does:
      // the graph resolves waits from the calls.
      note_call_target(s.correlationId,
                       s.streamId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? kNoValue : static_cast<std::int64_t>(s.streamId),
                       s.cudaEventId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? kNoValue : static_cast<std::int64_t>(s.cudaEventId));
      ++counts_.syncs;
      return;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto& a = *reinterpret_cast<const cupti::ApiRecord*>(record);
      const bool runtime = record->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
      const CUpti_CallbackDomain domain = runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
      if (options_.calibration_thread != 0 && a.threadId == options_.calibration_thread) {
        ++counts_.calibration_api;
        forget_correlation(a.correlationId);
        return;
      }
      const StringId name = api_name(domain, a.cbid);
      if (!options_.all_api && api_noisy_[(static_cast<std::uint64_t>(domain) << 32) | a.cbid]) {
        ++counts_.api_skipped;
        forget_correlation(a.correlationId);
        return;
      }
      if (!target_.in_window(ns(a.start))) {
        ++target_.rows_skipped_by_window;
        forget_correlation(a.correlationId);
        return;
      }
      pending_api_.push_back(PendingApi{CudaApiRecord{.track = target_.cupti_thread_track(a.threadId, options_.system_thread_ids),
                                                      .start = ns(a.start), .end = ns(a.end), .name = name,
                                                      .cbid = static_cast<std::int32_t>(a.cbid),
                                                      .kind = runtime ? ApiKind::Runtime : ApiKind::Driver,
                                                      .correlation = a.correlationId,
                                                      .result = static_cast<std::int32_t>(a.returnValue)},
                                        buffer_});
      ++counts_.api;
      return;
    }
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
      const auto& o = *reinterpret_cast<const cupti::OverheadRecord*>(record);
      if (!target_.in_window(ns(o.start))) { ++target_.rows_skipped_by_window; return; }
      const char* kind = "cupti_overhead";
      switch (o.overheadKind) {
        case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER: kind = "driver_compiler"; break;
        case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH: kind = "cupti_buffer_flush"; break;
        case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION: kind = "cupti_instrumentation"; break;
        case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE: kind = "cupti_resource"; break;
        case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING: kind = "module_loading"; break;
        case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING: kind = "lazy_function_loading"; break;
        case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL: kind = "command_buffer_full"; break;
        case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST: kind = "activity_buffer_request"; break;
        default: break;
      }
      const TrackId track = o.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD
                                ? target_.cupti_thread_track(o.objectId.pt.threadId, options_.system_thread_ids)
                                : o.objectKind == CUPTI_ACTIVITY_OBJECT_DEVICE
                                      ? target_.stream_track(o.objectId.dcs.deviceId, CUPTI_INVALID_STREAM_ID)
                                      : target_.cupti_thread_track(0, options_.system_thread_ids);
      target_.writer().add(OverheadRecord{.track = track, .start = ns(o.start), .end = ns(o.end),
                                          .kind = target_.intern(kind)});
      ++counts_.overheads;
      return;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto& e = *reinterpret_cast<const cupti::ExternalCorrelationRecord*>(record);
      external_ids_[e.correlationId] = ExternalId{static_cast<std::int64_t>(e.externalId), buffer_};
      ++counts_.external_correlations;
      return;
    }
    case CUPTI_ACTIVITY_KIND_CUDA_EVENT: {
      const auto& e = *reinterpret_cast<const cupti::CudaEventRecord*>(record);
      note_call_target(e.correlationId, e.streamId, e.eventId);
      ++counts_.cuda_events;
      return;
    }
    case CUPTI_ACTIVITY_KIND_CONTEXT: {
      const auto& c = *reinterpret_cast<const CUpti_ActivityContext3*>(record);
      context_device_[c.contextId] = c.deviceId;
      return;
    }
    case CUPTI_ACTIVITY_KIND_DEVICE: {
      const auto& d = *reinterpret_cast<const cupti::DeviceRecord*>(record);
      target_.add_device(d.id, DeviceInfo{.ordinal = d.id,
                                          .name = d.name ? d.name : "",
                                          .sm_count = d.numMultiprocessors,
                                          .core_clock_khz = d.coreClockRate,
                                          // CUPTI reports KB/s.
                                          .memory_bandwidth_bytes_per_s =
                                              static_cast<std::int64_t>(d.globalMemoryBandwidth) * 1000,
                                          .global_memory_bytes = static_cast<std::int64_t>(d.globalMemorySize),
                                          .compute_capability_major = d.computeCapabilityMajor,
                                          .compute_capability_minor = d.computeCapabilityMinor});
      ++counts_.devices;
      return;
    }
    default:
      ++counts_.unknown;
      return;
  }
}

void CuptiDecoder::note_call_target(std::uint32_t correlation, std::int64_t stream, std::int64_t event) {
  if (stream == kNoValue && event == kNoValue) return;
  CallTarget& t = call_targets_.try_emplace(correlation, CallTarget{.buffer = buffer_}).first->second;
  if (stream != kNoValue) t.stream = stream;
  if (event != kNoValue) t.event = event;
}

void CuptiDecoder::forget_correlation(std::uint32_t correlation) {
  external_ids_.erase(correlation);
  call_targets_.erase(correlation);
}

void CuptiDecoder::complete(PendingApi& p) {
  const auto c = static_cast<std::uint32_t>(p.row.correlation);
  if (auto it = external_ids_.find(c); it != external_ids_.end()) {
    p.row.external_id = it->second.id;
    if (it->second.buffer != p.buffer) ++counts_.attached_across_buffers;
    external_ids_.erase(it);
  }
  if (auto it = call_targets_.find(c); it != call_targets_.end()) {
    if (it->second.stream != kNoValue) p.row.stream = it->second.stream;
    if (it->second.event != kNoValue) p.row.event = it->second.event;
    if (it->second.buffer != p.buffer) ++counts_.attached_across_buffers;
    call_targets_.erase(it);
  }
}

void CuptiDecoder::end_buffer() {
  // Rows from the buffer before this one have now seen a whole later buffer: written.
  // This buffer's rows wait for the next one.
  std::size_t kept = 0;
  for (auto& p : pending_api_) {
    complete(p);
    if (p.buffer < buffer_) {
      target_.writer().add(p.row);
    } else {
      pending_api_[kept++] = std::move(p);
    }
  }
  pending_api_.resize(kept);
  if (buffer_ >= kCorrelationBuffers) {
    const std::uint64_t oldest = buffer_ - kCorrelationBuffers;
    counts_.unclaimed_correlations += std::erase_if(external_ids_, [&](const auto& e) { return e.second.buffer < oldest; });
    counts_.unclaimed_correlations += std::erase_if(call_targets_, [&](const auto& e) { return e.second.buffer < oldest; });
  }
  ++buffer_;
}

void CuptiDecoder::finish() {
  for (auto& p : pending_api_) {
    complete(p);
    target_.writer().add(p.row);
  }
  pending_api_.clear();
  counts_.unclaimed_correlations += external_ids_.size() + call_targets_.size();
  external_ids_.clear();
  call_targets_.clear();
}

void CuptiDecoder::decode_buffer(std::uint8_t* buffer, std::size_t valid, const NextRecord& next) {
  CUpti_Activity* record = nullptr;
  while (next(buffer, valid, &record)) decode(record);
  end_buffer();
}

} // namespace dreamscope::tracer
