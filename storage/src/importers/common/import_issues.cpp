// The table of import problems: one row per stable id. Add a row when an importer learns
// to notice something new; never rename an id (golden summaries and users' scripts key on it).
#include "dreamscope/storage/import_issues.h"

#include <charconv>
#include <stdexcept>
#include <string>

namespace dreamscope {

namespace {

using S = ImportSeverity;
using E = ImportEffect;

constexpr ImportIssueKind kKinds[] = {
    // PyTorch profiler (Kineto) JSON: the document.
    {"kineto_damaged_json", S::Warning, E::Lost, "damaged JSON: the events after it are lost"},
    {"kineto_element_not_object", S::Warning, E::Dropped, "traceEvents element that is not an object (ignored)"},
    {"kineto_field_wrong_type", S::Warning, E::Dropped, "event field of an unexpected type (event ignored)"},
    {"kineto_device_properties_not_array", S::Warning, E::Partial, "deviceProperties that is not an array (ignored)"},
    {"kineto_device_properties_entry_not_object", S::Warning, E::Partial,
     "deviceProperties entry that is not an object (ignored)"},
    {"kineto_device_properties_without_id", S::Warning, E::Partial, "deviceProperties entry without an id (ignored)"},
    {"kineto_device_id_mapped_by_order", S::Info, E::Kept,
     "the events name devices that deviceProperties does not list by id; its entries were matched to them in id "
     "order (ROCm and CUDA_VISIBLE_DEVICES renumber devices)"},
    // Events.
    {"kineto_event_without_ph", S::Warning, E::Dropped, "event without ph (ignored)"},
    {"kineto_instant_event", S::Info, E::Dropped,
     "instant event other than a [memory] one, no dur (dropped, as HTA does)"},
    {"kineto_memory_event_bad_arg", S::Warning, E::Dropped,
     "[memory] event with an arg that is not an integer, or bytes beyond ±2^62 (dropped)"},
    {"kineto_unknown_phase", S::Warning, E::Dropped,
     "event of a phase that PyTorch profiler traces do not use (ignored)"},
    {"kineto_event_without_cat", S::Info, E::Dropped, "event without cat (dropped, as HTA does)"},
    {"kineto_profiler_span", S::Info, E::Dropped, "profiler span, cat Trace (dropped, as HTA does)"},
    {"kineto_event_without_dur", S::Info, E::Dropped, "event without dur (dropped, as HTA does)"},
    {"kineto_event_without_ts", S::Warning, E::Dropped, "event without ts (dropped)"},
    {"kineto_time_not_a_number", S::Warning, E::Dropped, "ts or dur that is not a number (event dropped)"},
    {"kineto_time_out_of_range", S::Warning, E::Dropped,
     "ts, dur or ts + dur beyond the ±4e18 ns (±127 years) a trace may span (event dropped)"},
    {"kineto_negative_dur", S::Warning, E::Dropped, "negative dur (event dropped)"},
    {"kineto_args_not_object", S::Warning, E::Partial, "args that is not an object (args ignored)"},
    {"kineto_bad_number_token", S::Warning, E::Partial,
     "arg whose value is not a valid JSON number, e.g. 512c (kept as a string)"},
    {"kineto_bad_pid_tid", S::Warning, E::Dropped,
     "event whose pid or tid is neither a number nor a numeric string (dropped)"},
    {"kineto_unknown_category", S::Info, E::Kept, "category this importer does not know (kept as annotations)"},
    {"kineto_legacy_category_from_name", S::Info, E::Kept,
     "operator or range of PyTorch's exporter without Kineto, which writes no cat: cpu_op or user_annotation told by "
     "its name"},
    // Flows.
    {"kineto_flow_without_id", S::Warning, E::Dropped, "flow event without a usable id, pid, tid or ts (dropped)"},
    {"kineto_flow_step", S::Info, E::Dropped, "flow step event, ph t (ignored: flows are kept as start to finish)"},
    {"kineto_flow_start_without_finish", S::Warning, E::Dropped, "flow start without a finish (dropped)"},
    {"kineto_flow_start_on_runtime_call_without_gpu_work", S::Info, E::Dropped,
     "flow start without a finish on a runtime call that ran nothing on the GPU (ROCm writes one for every "
     "hipMalloc and hipFree; dropped)"},
    {"kineto_flow_kernel_start_only", S::Info, E::Dropped,
     "cpu_to_cuda flow start without a finish (PyTorch 1.13's exporter without Kineto writes each kernel an operator "
     "ran as a flow start only, with no kernel event; dropped)"},
    {"kineto_flow_finish_without_start", S::Warning, E::Dropped, "flow finish without a start (dropped)"},
    {"kineto_flow_finish_on_cpu_without_start", S::Info, E::Dropped,
     "ac2g flow finish without a start, on a CPU thread (Kineto marks runtime calls that launched nothing this "
     "way; dropped)"},
    {"kineto_flow_two_finishes", S::Info, E::Kept,
     "flow written as two finishes, CPU side first (ROCm's memset and memcpy launches; kept as start to finish)"},
    {"kineto_flow_thread_without_events", S::Warning, E::Dropped, "flow to or from a thread with no events (dropped)"},
    // Nsight Systems SQLite export.
    {"nsys_missing_string_id", S::Warning, E::Partial, "a row names a string id that StringIds lacks (name left empty)"},
    {"nsys_row_without_time", S::Warning, E::Dropped, "row without start or end (dropped)"},
    {"nsys_row_ends_before_start", S::Warning, E::Dropped, "row that ends before it starts (dropped)"},
    {"nsys_nvtx_mark", S::Info, E::Dropped, "NVTX mark (an instant, not a range; dropped)"},
    {"nsys_nvtx_other_type", S::Info, E::Dropped, "NVTX event that is not a range (dropped)"},
    {"nsys_nvtx_range_never_ended", S::Warning, E::Dropped, "NVTX range that never ended (dropped)"},
    {"nsys_nvtx_range_ends_before_start", S::Warning, E::Dropped, "NVTX range that ends before it starts (dropped)"},
};

} // namespace

std::string_view to_string(ImportSeverity s) { return s == ImportSeverity::Warning ? "warning" : "info"; }

std::string_view to_string(ImportEffect e) {
  switch (e) {
    case ImportEffect::Dropped: return "dropped";
    case ImportEffect::Partial: return "partial";
    case ImportEffect::Kept: return "kept";
    case ImportEffect::Lost: return "lost";
  }
  return "dropped";
}

std::span<const ImportIssueKind> import_issue_kinds() { return kKinds; }

const ImportIssueKind& import_issue_kind(std::string_view id) {
  for (const auto& k : kKinds) {
    if (k.id == id) return k;
  }
  throw std::logic_error("import issue id not in the table: " + std::string(id));
}

std::vector<RecordedImportIssue> parse_import_issues(std::string_view text) {
  std::vector<RecordedImportIssue> out;
  while (!text.empty()) {
    std::size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    std::string_view fields[4];
    std::size_t n = 0;
    while (n < 4) {
      const std::size_t tab = line.find('\t');
      fields[n++] = line.substr(0, tab);
      if (tab == std::string_view::npos) break;
      line.remove_prefix(tab + 1);
    }
    if (n < 4) continue; // not written by this version: skip rather than guess
    RecordedImportIssue r;
    r.id = std::string(fields[0]);
    std::from_chars(fields[1].data(), fields[1].data() + fields[1].size(), r.count);
    r.severity = fields[2] == "info" ? ImportSeverity::Info : ImportSeverity::Warning;
    for (auto e : {ImportEffect::Dropped, ImportEffect::Partial, ImportEffect::Kept, ImportEffect::Lost}) {
      if (fields[3] == to_string(e)) r.effect = e;
    }
    out.push_back(std::move(r));
  }
  return out;
}

} // namespace dreamscope
