#include "dreamscope/storage/collectives.h"

#include "dreamscope/storage/job.h"
#include "dreamscope/storage/kernel_classes.h"
#include "dreamscope/storage/steps.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>

namespace dreamscope {

namespace {

std::string lower_alnum(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

bool contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

constexpr std::string_view kRecordParamComms = "record_param_comms";

// The arg of an event as text, if it has it.
std::optional<std::string> text_arg(const Trace& t, EventRow row, std::string_view key) {
  return t.find_arg(row, key) ? t.arg_text(row, key) : std::nullopt;
}

// Elements of a PyTorch "Input Dims" value such as [[394241]] or [[6144], [],
// []]: the product of the first tensor's dimensions.
std::int64_t first_tensor_elements(std::string_view dims) {
  const auto open = dims.find('[', dims.find('[') + 1);
  if (open == std::string_view::npos) return 0;
  const auto close = dims.find(']', open);
  if (close == std::string_view::npos) return 0;
  std::string_view inner = dims.substr(open + 1, close - open - 1);
  if (inner.empty()) return 0;
  std::int64_t product = 1;
  while (!inner.empty()) {
    while (!inner.empty() && (inner.front() == ' ' || inner.front() == ',')) inner.remove_prefix(1);
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(inner.data(), inner.data() + inner.size(), v);
    if (ec != std::errc() || v < 0) return 0;
    if (v > 0 && product > (std::int64_t{1} << 50) / v) return 0; // not a real tensor
    product *= v;
    inner.remove_prefix(static_cast<std::size_t>(end - inner.data()));
  }
  return product;
}

// The first element of a JSON list of strings such as ["float", "", ""].
std::string first_string(std::string_view list) {
  const auto a = list.find('"');
  if (a == std::string_view::npos) return {};
  const auto b = list.find('"', a + 1);
  if (b == std::string_view::npos) return {};
  return std::string(list.substr(a + 1, b - a - 1));
}

// What PyTorch says of a collective on a CPU operator (record_param_comms, or
// an `nccl:*` range with input shapes): its operation, communicator, sequence
// number and bytes.
struct CommsArgs {
  std::string op, communicator;
  std::int64_t sequence = kNoValue, bytes = kNoValue;
};

CommsArgs comms_args(const Trace& t, EventRow row) {
  CommsArgs a;
  if (auto name = text_arg(t, row, "Collective name")) a.op = normalised_collective_op(*name);
  if (auto pg = text_arg(t, row, "Process Group Name")) a.communicator = *pg;
  if (auto seq = t.arg_int(row, "Seq")) a.sequence = *seq;
  const auto nelems = t.arg_int(row, "In msg nelems");
  const auto dtype = text_arg(t, row, "dtype");
  if (nelems && dtype && dtype_bytes(*dtype) > 0 && *nelems >= 0 && *nelems < (std::int64_t{1} << 50)) {
    a.bytes = *nelems * dtype_bytes(*dtype);
  } else if (auto dims = text_arg(t, row, "Input Dims")) {
    const std::int64_t elements = first_tensor_elements(*dims);
    const auto types = text_arg(t, row, "Input type");
    const std::int64_t size = types ? dtype_bytes(first_string(*types)) : 0;
    if (elements > 0 && size > 0) a.bytes = elements * size;
  }
  return a;
}

void fill_missing(CommsArgs& into, const CommsArgs& from) {
  if (into.op.empty()) into.op = from.op;
  if (into.communicator.empty()) into.communicator = from.communicator;
  if (into.sequence == kNoValue) into.sequence = from.sequence;
  if (into.bytes == kNoValue) into.bytes = from.bytes;
}

bool is_comms_range(std::string_view name) {
  return name.starts_with("nccl:") || name.starts_with("gloo:") || name.starts_with("mpi:") || name.starts_with("ucc:");
}

// The steps of one rank, for the step a call was issued in.
struct RankSteps {
  std::vector<TimeNs> start, end;
  std::vector<std::int64_t> number;

  std::int64_t at(TimeNs t) const {
    auto it = std::upper_bound(start.begin(), start.end(), t);
    if (it == start.begin()) return kNoValue;
    const std::size_t i = static_cast<std::size_t>(it - start.begin()) - 1;
    return t < end[i] ? number[i] : kNoValue;
  }
};

void match_into(JobCollectives& job);

class CollectiveFinder {
 public:
  explicit CollectiveFinder(const Trace& t) : t_(t), rank_of_track_(track_ranks(t)) {}

  JobCollectives run() {
    collect_steps();
    // Per rank: its communication kernels if it has any, else its CPU ranges.
    std::map<std::int64_t, std::vector<CollectiveCall>> by_rank;
    const auto& ops = t_.gpu_ops();
    // Per name, not per kernel: a trace has millions of kernels and a few thousand names.
    std::vector<std::int8_t> communication(t_.strings().size(), -1);
    auto is_communication = [&](StringId name) {
      if (communication[name] < 0) communication[name] = is_communication_kernel(t_.str(name)) ? 1 : 0;
      return communication[name] == 1;
    };
    for (GpuOpIndex i{0}; i < ops.size(); ++i) {
      if (ops.kind[i] != GpuOpKind::Kernel || !is_communication(ops.name[i])) continue;
      by_rank[rank_of_track_[ops.track[i]]].push_back(kernel_call(i));
    }
    std::map<std::int64_t, std::vector<CollectiveCall>> cpu = cpu_calls();
    for (auto& [rank, calls] : cpu) {
      if (!by_rank.count(rank)) by_rank[rank] = std::move(calls);
    }
    JobCollectives job;
    for (auto& [rank, calls] : by_rank) {
      std::stable_sort(calls.begin(), calls.end(),
                       [](const CollectiveCall& a, const CollectiveCall& b) { return a.start < b.start; });
      number(calls);
      for (auto& c : calls) job.calls.push_back(std::move(c));
    }
    match_into(job);
    return job;
  }

 private:
  void collect_steps() {
    const auto& ann = t_.annotations();
    std::map<std::int64_t, std::vector<AnnotationIndex>> per_rank;
    for (AnnotationIndex row : find_steps(t_)) per_rank[rank_of_track_[ann.track[row]]].push_back(row);
    for (auto& [rank, rows] : per_rank) {
      RankSteps& s = steps_[rank];
      for (AnnotationIndex row : rows) { // find_steps gives them in time order
        s.start.push_back(ann.start[row]);
        s.end.push_back(ann.end[row]);
        s.number.push_back(step_number(t_, row));
      }
    }
  }

  std::int64_t step_at(std::int64_t rank, TimeNs t) const {
    auto it = steps_.find(rank);
    return it == steps_.end() ? kNoValue : it->second.at(t);
  }

  CollectiveCall kernel_call(GpuOpIndex i) {
    const auto& ops = t_.gpu_ops();
    CollectiveCall c;
    c.rank = rank_of_track_[ops.track[i]];
    c.table = EventTable::GpuOp;
    c.row = i;
    c.track = ops.track[i];
    c.start = ops.start[i];
    c.end = ops.end[i];
    CommsArgs args = comms_args(t_, i);
    // The launching call, and the operator around it, say what the kernel may
    // not.
    TimeNs issued = ops.start[i];
    if (ops.correlation[i] != kNoValue) {
      if (auto api = t_.cuda_api_with_correlation(ops.correlation[i])) {
        const auto& calls = t_.cuda_api();
        issued = calls.start[*api];
        for (auto a = t_.innermost_annotation_at(calls.track[*api], issued); a;) {
          const auto name = t_.str(t_.annotations().name[*a]);
          if (name == kRecordParamComms || is_comms_range(name)) {
            fill_missing(args, comms_args(t_, *a));
            if (args.op.empty() && is_comms_range(name)) args.op = normalised_collective_op(name);
          }
          const AnnotationIndex parent = t_.annotations().parent[*a];
          a = parent == kNoIndex ? std::nullopt : std::optional<AnnotationIndex>(parent);
        }
      }
    }
    c.op = args.op.empty() ? normalised_collective_op(t_.str(ops.name[i])) : args.op;
    c.communicator = args.communicator;
    c.sequence = args.sequence;
    c.bytes = args.bytes;
    c.step = step_at(c.rank, issued);
    return c;
  }

  std::map<std::int64_t, std::vector<CollectiveCall>> cpu_calls() {
    // Per rank, the best kind of range it has: dreamscope's, then
    // record_param_comms, then the nccl:/gloo: ranges (which PyTorch nests
    // inside record_param_comms).
    std::map<std::int64_t, std::array<std::vector<CollectiveCall>, 3>> found;
    const auto& ann = t_.annotations();
    for (AnnotationIndex i{0}; i < ann.size(); ++i) {
      if (t_.tracks()[ann.track[i]].kind != TrackKind::CpuThread) continue;
      const auto name = t_.str(ann.name[i]);
      int kind = -1;
      CommsArgs args;
      if (t_.str(ann.category[i]) == annotation_category::kCollective) {
        kind = 0;
        args.op = normalised_collective_op(name);
        if (ann.payload[i] != kNoValue && ann.payload[i] >= 0) args.bytes = ann.payload[i];
      } else if (name == kRecordParamComms) {
        args = comms_args(t_, i);
        if (args.op.empty()) continue; // a record_param_comms of a wait or a barrier's bookkeeping
        kind = 1;
      } else if (is_comms_range(name)) {
        kind = 2;
        args = comms_args(t_, i);
        if (args.op.empty()) args.op = normalised_collective_op(name);
      } else {
        continue;
      }
      CollectiveCall c;
      c.rank = rank_of_track_[ann.track[i]];
      c.op = std::move(args.op);
      c.communicator = std::move(args.communicator);
      c.sequence = args.sequence;
      c.bytes = args.bytes;
      c.table = EventTable::Annotation;
      c.row = i;
      c.track = ann.track[i];
      c.start = ann.start[i];
      c.end = ann.end[i];
      c.step = step_at(c.rank, c.start);
      found[c.rank][static_cast<std::size_t>(kind)].push_back(std::move(c));
    }
    std::map<std::int64_t, std::vector<CollectiveCall>> out;
    for (auto& [rank, kinds] : found) {
      for (auto& calls : kinds) {
        if (!calls.empty()) {
          out[rank] = std::move(calls);
          break;
        }
      }
    }
    return out;
  }

  // Numbers the calls of one rank (in time order) within each communicator: by
  // PyTorch's sequence number when all of the communicator's calls have one,
  // else by order in the step.
  static void number(std::vector<CollectiveCall>& calls) {
    std::map<std::string, bool> all_have_sequence;
    for (const auto& c : calls) {
      auto [it, fresh] = all_have_sequence.emplace(c.communicator, true);
      it->second = it->second && c.sequence != kNoValue;
    }
    std::map<std::pair<std::string, std::int64_t>, std::int64_t> next; // (communicator, step) -> order
    for (auto& c : calls) {
      if (all_have_sequence[c.communicator]) {
        c.pytorch_sequence = true;
        continue;
      }
      c.sequence = next[{c.communicator, c.step}]++;
    }
  }

  const Trace& t_;
  std::vector<std::int64_t> rank_of_track_;
  std::unordered_map<std::int64_t, RankSteps> steps_;
};

void match_into(JobCollectives& job) {
  // communicator, step (none for PyTorch's sequence numbers: they count across
  // steps), number
  using Key = std::tuple<std::string, std::int64_t, std::int64_t>;
  std::map<Key, std::vector<std::uint32_t>> groups;
  for (std::uint32_t i = 0; i < job.calls.size(); ++i) {
    const CollectiveCall& c = job.calls[i];
    if (c.rank == kNoValue) continue;
    groups[{c.communicator, c.pytorch_sequence ? kNoValue : c.step, c.sequence}].push_back(i);
  }
  for (auto& [key, calls] : groups) {
    // One call per rank: a rank that had two calls under one key (an ambiguous
    // numbering) keeps its first.
    std::vector<std::uint32_t> unique;
    for (std::uint32_t i : calls) {
      const bool seen = std::any_of(unique.begin(), unique.end(),
                                    [&](std::uint32_t u) { return job.calls[u].rank == job.calls[i].rank; });
      if (seen) {
        ++job.unmatched_calls;
      } else {
        unique.push_back(i);
      }
    }
    if (unique.size() < 2) {
      job.unmatched_calls += unique.size();
      continue;
    }
    std::sort(unique.begin(), unique.end(),
              [&](std::uint32_t a, std::uint32_t b) { return job.calls[a].rank < job.calls[b].rank; });
    CollectiveInstance inst;
    inst.communicator = std::get<0>(key);
    inst.step = job.calls[unique.front()].step;
    inst.sequence = std::get<2>(key);
    inst.op = job.calls[unique.front()].op;
    inst.first_arrival = job.calls[unique.front()].start;
    inst.last_arrival = job.calls[unique.front()].start;
    inst.last_rank = job.calls[unique.front()].rank;
    bool mismatch = false;
    for (std::uint32_t i : unique) {
      const CollectiveCall& c = job.calls[i];
      mismatch = mismatch || c.op != inst.op;
      inst.first_arrival = std::min(inst.first_arrival, c.start);
      if (c.start > inst.last_arrival) {
        inst.last_arrival = c.start;
        inst.last_rank = c.rank;
      }
      inst.last_end = std::max(inst.last_end, c.end);
    }
    if (mismatch) ++job.mismatched_ops;
    inst.calls = std::move(unique);
    job.instances.push_back(std::move(inst));
  }
  std::stable_sort(
      job.instances.begin(), job.instances.end(),
      [](const CollectiveInstance& a, const CollectiveInstance& b) { return a.last_arrival < b.last_arrival; });
}

} // namespace

TimeNs CollectiveInstance::wait_of(const std::vector<CollectiveCall>& all, std::uint32_t call) const {
  const CollectiveCall& c = all[call];
  return std::clamp<TimeNs>(last_arrival - c.start, 0, c.duration());
}

JobCollectives find_collectives(const Trace& trace) { return CollectiveFinder(trace).run(); }

std::map<std::int64_t, TimeNs> wait_caused_by_rank(const JobCollectives& job) {
  std::map<std::int64_t, TimeNs> caused;
  for (const CollectiveInstance& inst : job.instances) {
    TimeNs waited = 0;
    for (std::uint32_t c : inst.calls) waited += inst.wait_of(job.calls, c);
    if (waited > 0) caused[inst.last_rank] += waited;
  }
  return caused;
}

std::int64_t most_waited_for_rank(const JobCollectives& job) {
  std::int64_t best = kNoValue;
  TimeNs most = 0;
  for (const auto& [rank, waited] : wait_caused_by_rank(job)) {
    if (waited > most) {
      most = waited;
      best = rank;
    }
  }
  return best;
}

JobCollectives match_collectives(std::vector<CollectiveCall> calls) {
  JobCollectives job;
  job.calls = std::move(calls);
  std::stable_sort(job.calls.begin(), job.calls.end(), [](const CollectiveCall& a, const CollectiveCall& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.start < b.start;
  });
  match_into(job);
  return job;
}

std::string normalised_collective_op(std::string_view name) {
  // Kernel names carry the operation between the library's prefix and the
  // algorithm: ncclKernel_AllReduce_RING_LL_Sum_float,
  // ncclDevKernel_AllGather_RING_LL.
  std::string_view core = name;
  if (const auto colon = core.find(':'); colon != std::string_view::npos && !core.starts_with("c10d")) {
    core.remove_prefix(colon + 1); // nccl:all_reduce
  }
  const std::string key = lower_alnum(core);
  static constexpr std::pair<std::string_view, std::string_view> kOps[] = {
      {"reducescatter", "reduce_scatter"},
      {"allreduce", "all_reduce"},
      {"allgather", "all_gather"},
      {"alltoall", "all_to_all"},
      {"sendrecv", "send_recv"},
      {"broadcast", "broadcast"},
      {"barrier", "barrier"},
      {"gather", "gather"},
      {"scatter", "scatter"},
      {"reduce", "reduce"},
      {"send", "send_recv"},
      {"recv", "send_recv"},
  };
  for (const auto& [needle, op] : kOps) {
    if (contains(key, needle)) return std::string(op);
  }
  return std::string(name);
}

std::int64_t dtype_bytes(std::string_view dtype) {
  std::string key = lower_alnum(dtype);
  if (key.starts_with("c10")) key.erase(0, 3);
  static const std::unordered_map<std::string, std::int64_t> kSizes = {
      {"float", 4},   {"float32", 4},      {"double", 8},     {"float64", 8},      {"half", 2},
      {"float16", 2}, {"bfloat16", 2},     {"int", 4},        {"int32", 4},        {"longint", 8},
      {"long", 8},    {"int64", 8},        {"short", 2},      {"int16", 2},        {"char", 1},
      {"int8", 1},    {"byte", 1},         {"uint8", 1},      {"unsignedchar", 1}, {"signedchar", 1},
      {"bool", 1},    {"float8e4m3fn", 1}, {"float8e5m2", 1}, {"complexfloat", 8}, {"complexdouble", 16},
  };
  auto it = kSizes.find(key);
  return it == kSizes.end() ? 0 : it->second;
}

bool collective_args_read(std::string_view cpu_range_name) {
  return cpu_range_name == kRecordParamComms || is_comms_range(cpu_range_name);
}

} // namespace dreamscope
