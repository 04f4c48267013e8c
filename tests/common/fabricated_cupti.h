// Fabricated CUPTI activity records of the real CUDA 13 struct types, laid out in a buffer
// the way CUPTI lays out an activity buffer: for the decoder's tests and benchmark on
// machines without a GPU.
#pragma once

#include "cupti_decoder.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace dreamscope::tracer::fabricated {

// An activity buffer as CUPTI lays it out: records one after another, 8-byte aligned.
class FabricatedBuffer {
 public:
  template <class R>
  void add(const R& r) {
    const std::size_t at = bytes_.size();
    bytes_.resize(at + ((sizeof(R) + 7) & ~std::size_t{7}), 0);
    std::memcpy(bytes_.data() + at, &r, sizeof(R));
    offsets_.push_back(at);
  }
  std::uint8_t* data() { return bytes_.data(); }
  std::size_t size() const { return bytes_.size(); }
  CuptiDecoder::NextRecord walker() {
    return [this, i = std::size_t{0}](std::uint8_t* buffer, std::size_t, CUpti_Activity** record) mutable {
      if (i == offsets_.size()) return false;
      *record = reinterpret_cast<CUpti_Activity*>(buffer + offsets_[i++]);
      return true;
    };
  }

 private:
  std::vector<std::uint8_t> bytes_;
  std::vector<std::size_t> offsets_;
};

inline std::string callback_name(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  const char* name = nullptr;
  if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || !name) return {};
  return name;
}

inline cupti::DeviceRecord device_record() {
  cupti::DeviceRecord d{};
  d.kind = CUPTI_ACTIVITY_KIND_DEVICE;
  d.id = 0;
  d.name = "NVIDIA H100 80GB HBM3";
  d.numMultiprocessors = 132;
  d.coreClockRate = 1980000;
  d.globalMemoryBandwidth = 3352000000; // KB/s
  d.globalMemorySize = 85520809984ull;
  d.computeCapabilityMajor = 9;
  d.computeCapabilityMinor = 0;
  return d;
}

inline cupti::KernelRecord kernel_record() {
  cupti::KernelRecord k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = 1'000'000;
  k.end = 1'250'000;
  k.deviceId = 0;
  k.contextId = 1;
  k.streamId = 7;
  k.gridX = 128, k.gridY = 2, k.gridZ = 1;
  k.blockX = 256, k.blockY = 1, k.blockZ = 1;
  k.registersPerThread = 40;
  k.staticSharedMemory = 1024;
  k.dynamicSharedMemory = 4096;
  k.correlationId = 11;
  k.name = "_Z6matmulPfS_S_i";
  return k;
}

inline cupti::ApiRecord api_record(CUpti_ActivityKind kind, CUpti_CallbackId cbid, std::uint32_t correlation,
                            std::uint64_t start, std::uint64_t end) {
  cupti::ApiRecord a{};
  a.kind = kind;
  a.cbid = cbid;
  a.start = start;
  a.end = end;
  a.processId = 4242;
  a.threadId = 4242;
  a.correlationId = correlation;
  a.returnValue = 0;
  return a;
}

// Context 1 on device 0.
inline CUpti_ActivityContext3 context_record() {
  CUpti_ActivityContext3 ctx{};
  ctx.kind = CUPTI_ACTIVITY_KIND_CONTEXT;
  ctx.contextId = 1;
  ctx.deviceId = 0;
  return ctx;
}

// A 1 MiB host-to-device copy on device 0.
inline cupti::MemcpyRecord memcpy_record(std::uint32_t correlation, std::uint64_t start, std::uint64_t end,
                                  std::uint32_t stream) {
  cupti::MemcpyRecord m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  m.bytes = 1 << 20;
  m.start = start;
  m.end = end;
  m.deviceId = 0;
  m.streamId = stream;
  m.correlationId = correlation;
  return m;
}

inline cupti::ExternalCorrelationRecord external_record(std::uint32_t correlation, std::uint64_t id) {
  cupti::ExternalCorrelationRecord e{};
  e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  e.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
  e.externalId = id;
  e.correlationId = correlation;
  return e;
}

inline cupti::CudaEventRecord event_record(std::uint32_t correlation, std::uint32_t stream, std::uint32_t event) {
  cupti::CudaEventRecord e{};
  e.kind = CUPTI_ACTIVITY_KIND_CUDA_EVENT;
  e.correlationId = correlation;
  e.contextId = 1;
  e.streamId = stream;
  e.eventId = event;
  return e;
}

inline cupti::SyncRecord sync_record(CUpti_ActivitySynchronizationType type, std::uint32_t correlation, std::uint64_t start,
                              std::uint64_t end, std::uint32_t stream, std::uint32_t event) {
  cupti::SyncRecord y{};
  y.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  y.type = type;
  y.start = start;
  y.end = end;
  y.correlationId = correlation;
  y.contextId = 1;
  y.streamId = stream;
  y.cudaEventId = event;
  y.cudaEventSyncId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  return y;
}

} // namespace dreamscope::tracer::fabricated
