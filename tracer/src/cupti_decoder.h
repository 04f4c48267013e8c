// CUPTI activity records -> trace rows. The decoder sees records one at a time and never
// calls CUPTI itself, so the same code runs on the tracer's writer thread (records walked
// out of a completed activity buffer) and in tests that hand it fabricated records of the
// real CUPTI struct types on machines without a GPU.
#pragma once

#include "cupti_records.h"
#include "trace_target.h"

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

namespace dreamscope::tracer {

struct CuptiDecoderOptions {
  // Keep the frequent, cheap API calls (cudaGetDevice, cuCtxGetCurrent, ...) that are
  // skipped by default (`dreamscope trace --cuda-api all`).
  bool all_api = false;
  // The API function name of a callback id (production: cuptiGetCallbackName).
  std::function<std::string(CUpti_CallbackDomain, CUpti_CallbackId)> api_name;
};

struct CuptiDecoderCounts {
  std::uint64_t api = 0, api_skipped = 0, kernels = 0, memcpys = 0, memsets = 0, syncs = 0, overheads = 0,
                devices = 0, external_correlations = 0, cuda_events = 0, unknown = 0;
};

class CuptiDecoder {
 public:
  CuptiDecoder(TraceTarget& target, CuptiDecoderOptions options);

  // One record of any kind. API rows wait in the decoder until end_buffer(), so that the
  // external-correlation and CUDA-event records CUPTI writes next to them can complete them.
  void decode(const CUpti_Activity* record);
  // Writes the API rows decoded since the last call.
  void end_buffer();

  // Walks a completed activity buffer with `next` (cuptiActivityGetNextRecord in the
  // tracer, a plain walk over fabricated records in tests) and decodes every record.
  using NextRecord = std::function<bool(std::uint8_t* buffer, std::size_t valid, CUpti_Activity** record)>;
  void decode_buffer(std::uint8_t* buffer, std::size_t valid, const NextRecord& next);

  const CuptiDecoderCounts& counts() const { return counts_; }

  // Strips CUPTI's version suffix: "cudaLaunchKernel_v7000" -> "cudaLaunchKernel".
  static std::string api_display_name(std::string raw);
  static bool is_noisy_api(std::string_view name);

 private:
  StringId api_name(CUpti_CallbackDomain domain, CUpti_CallbackId cbid);
  std::uint32_t device_of_context(std::uint32_t context) const;

  TraceTarget& target_;
  CuptiDecoderOptions options_;
  CuptiDecoderCounts counts_;
  std::vector<CudaApiRecord> pending_api_;
  std::unordered_map<std::uint64_t, StringId> api_names_;        // (domain << 32 | cbid) -> name
  std::unordered_map<std::uint64_t, bool> api_noisy_;
  std::unordered_map<std::uint32_t, std::int64_t> external_ids_; // correlation -> external id
  struct EventUse {
    std::int64_t stream, event;
  };
  std::unordered_map<std::uint32_t, EventUse> event_records_; // correlation -> cudaEventRecord's stream/event
  std::unordered_map<std::uint32_t, std::uint32_t> context_device_;
  std::unordered_map<const char*, StringId> kernel_names_;
};

} // namespace dreamscope::tracer
