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
  // CUPTI reports OS thread ids (cuptiSetThreadIdType(SYSTEM) succeeded), not pthread_self().
  bool system_thread_ids = true;
  // The thread that times CUPTI's cost per recorded call (the tracer's writer): its API
  // calls are the calibration's, not the job's, and are counted, not written. 0: none.
  std::uint64_t calibration_thread = 0;
};

struct CuptiDecoderCounts {
  std::uint64_t api = 0, api_skipped = 0, calibration_api = 0, kernels = 0, memcpys = 0, memsets = 0, syncs = 0, overheads = 0,
                devices = 0, external_correlations = 0, cuda_events = 0, unknown = 0;
  // Correlation records (external id, CUDA event, sync target) attached to an API row
  // decoded in another buffer, and those whose API row never came (CUPTI dropped it).
  std::uint64_t attached_across_buffers = 0, unclaimed_correlations = 0;
};

class CuptiDecoder {
 public:
  CuptiDecoder(TraceTarget& target, CuptiDecoderOptions options);

  // One record of any kind. An API row is completed by records CUPTI writes apart from it,
  // with the same correlation id: the external correlation (the enclosing NVTX range,
  // written when the call starts), the CUDA event record of cudaEventRecord, and the
  // synchronization record that names the stream or event a wait was for. CUPTI gives no
  // order between them, and a flush can put them in different buffers, so an API row waits
  // in the decoder until the end of the buffer after its own.
  void decode(const CUpti_Activity* record);
  // The end of one activity buffer: writes the API rows that have waited a whole buffer.
  void end_buffer();
  // Writes every API row still waiting (the process is ending, or about to crash) and
  // forgets correlation records that no row claimed.
  void finish();
  // API rows not yet written, and correlation records not yet claimed.
  std::size_t waiting_api_rows() const { return pending_api_.size(); }
  std::size_t waiting_correlations() const { return external_ids_.size() + call_targets_.size(); }

  // Walks a completed activity buffer with `next` (cuptiActivityGetNextRecord in the
  // tracer, a plain walk over fabricated records in tests) and decodes every record.
  using NextRecord = std::function<bool(std::uint8_t* buffer, std::size_t valid, CUpti_Activity** record)>;
  void decode_buffer(std::uint8_t* buffer, std::size_t valid, const NextRecord& next);

  const CuptiDecoderCounts& counts() const { return counts_; }
  // The calibration starts after the first buffers were decoded.
  void set_calibration_thread(std::uint64_t tid) { options_.calibration_thread = tid; }

  // Strips CUPTI's version suffix: "cudaLaunchKernel_v7000" -> "cudaLaunchKernel".
  static std::string api_display_name(std::string raw);
  static bool is_noisy_api(std::string_view name);
  // A call some analysis or what-if reads (its GPU work, its wait, its memory): launches,
  // copies, memsets, synchronizations, event records and queries, stream waits and memory
  // operations, allocations, graphs and stream capture. `--cuda-api used` records these alone.
  static bool is_used_api(std::string_view name);

 private:
  StringId api_name(CUpti_CallbackDomain domain, CUpti_CallbackId cbid);
  std::uint32_t device_of_context(std::uint32_t context) const;
  struct PendingApi {
    CudaApiRecord row;
    std::uint64_t buffer; // the buffer it was decoded in
  };
  // Fills in what the correlation records seen so far say about a waiting row.
  void complete(PendingApi& p);
  void forget_correlation(std::uint32_t correlation);
  void note_call_target(std::uint32_t correlation, std::int64_t stream, std::int64_t event);

  // An unclaimed correlation record is kept this many buffers: an API call that lasts
  // longer than that many flushes (a long synchronize inside an NVTX range) is written
  // without it. Bounds what records of dropped API rows can hold.
  static constexpr std::uint64_t kCorrelationBuffers = 64;

  TraceTarget& target_;
  CuptiDecoderOptions options_;
  CuptiDecoderCounts counts_;
  std::uint64_t buffer_ = 0; // buffers ended so far
  std::vector<PendingApi> pending_api_;
  std::unordered_map<std::uint64_t, StringId> api_names_;        // (domain << 32 | cbid) -> name
  std::unordered_map<std::uint64_t, bool> api_noisy_;
  struct ExternalId {
    std::int64_t id;
    std::uint64_t buffer;
  };
  std::unordered_map<std::uint32_t, ExternalId> external_ids_; // correlation -> enclosing range
  // What a call recorded on or waited for: cudaEventRecord's stream and event (CUDA event
  // record), a wait's stream and/or event (synchronization record).
  struct CallTarget {
    std::int64_t stream = kNoValue, event = kNoValue;
    std::uint64_t buffer;
  };
  std::unordered_map<std::uint32_t, CallTarget> call_targets_; // correlation -> target
  std::unordered_map<std::uint32_t, std::uint32_t> context_device_;
  std::unordered_map<const char*, StringId> kernel_names_;
};

} // namespace dreamscope::tracer
