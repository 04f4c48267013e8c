// The GPUs wave scaling knows, from the vendors' published specifications (docs/whatif.md
// lists the documents). Clocks are boost clocks; tensor throughput is dense FP16 with FP32
// accumulate, the mode mixed-precision training uses.
#include <dreamscope/whatif/cost_models.h>

#include <algorithm>
#include <cctype>
#include <vector>

namespace dreamscope::whatif {

namespace {

constexpr double kMHz = 1e6;
constexpr double kGBs = 1e9;
constexpr double kTFLOPs = 1e12;
constexpr int kKiB = 1024;

// One row of the table and the tokens that tell its variant apart in a device name.
struct DeviceEntry {
  std::string base_key;                   // "a100", "rtx4090": what the name must start with
  std::vector<std::string> variant_tokens; // all present in the name, e.g. {"pcie"}
  DeviceSpec spec;
};

DeviceSpec spec(std::string name, std::string model, std::int64_t sms, double boost_mhz, double bandwidth_gbs,
                double fp32_tflops, double tensor_tflops, int cc_major, int cc_minor, int max_threads_per_sm,
                int max_blocks_per_sm, int shared_kib_per_sm) {
  DeviceSpec d;
  d.name = std::move(name);
  d.model = std::move(model);
  d.sm_count = sms;
  d.boost_clock_hz = boost_mhz * kMHz;
  d.memory_bandwidth_bytes_per_s = bandwidth_gbs * kGBs;
  d.peak_fp32_flops = fp32_tflops * kTFLOPs;
  d.peak_fp16_tensor_flops = tensor_tflops * kTFLOPs;
  d.compute_capability_major = cc_major;
  d.compute_capability_minor = cc_minor;
  d.max_threads_per_sm = max_threads_per_sm;
  d.max_blocks_per_sm = max_blocks_per_sm;
  d.registers_per_sm = 65536;
  d.shared_memory_per_sm_bytes = shared_kib_per_sm * kKiB;
  return d;
}

const std::vector<DeviceEntry>& entries() {
  // Variants listed after their default so that the default is the first match without
  // variant tokens.
  static const std::vector<DeviceEntry> table = {
      {"v100", {}, spec("V100", "Tesla V100 SXM2", 80, 1530, 900, 15.7, 125, 7, 0, 2048, 32, 96)},
      {"v100", {"pcie"}, spec("V100-PCIe", "Tesla V100 PCIe", 80, 1380, 900, 14, 112, 7, 0, 2048, 32, 96)},
      {"a100", {}, spec("A100", "A100 SXM4 80GB", 108, 1410, 2039, 19.5, 312, 8, 0, 2048, 32, 164)},
      {"a100", {"40gb"}, spec("A100-40GB", "A100 40GB", 108, 1410, 1555, 19.5, 312, 8, 0, 2048, 32, 164)},
      {"a100", {"pcie", "80gb"}, spec("A100-PCIe-80GB", "A100 PCIe 80GB", 108, 1410, 1935, 19.5, 312, 8, 0, 2048, 32, 164)},
      {"h100", {}, spec("H100", "H100 SXM5 80GB", 132, 1980, 3350, 67, 989.4, 9, 0, 2048, 32, 228)},
      {"h100", {"pcie"}, spec("H100-PCIe", "H100 PCIe 80GB", 114, 1755, 2000, 51.2, 756, 9, 0, 2048, 32, 228)},
      {"h200", {}, spec("H200", "H200 SXM 141GB", 132, 1980, 4800, 67, 989.4, 9, 0, 2048, 32, 228)},
      {"l4", {}, spec("L4", "L4", 58, 2040, 300, 30.3, 121, 8, 9, 1536, 24, 100)},
      {"rtx4090", {}, spec("RTX4090", "GeForce RTX 4090", 128, 2520, 1008, 82.6, 165.2, 8, 9, 1536, 24, 100)},
      {"rtx3060", {}, spec("RTX3060", "GeForce RTX 3060 12GB", 28, 1777, 360, 12.7, 25.5, 8, 6, 1536, 16, 100)},
  };
  return table;
}

// Lower-case alphanumeric runs, vendor words dropped: "NVIDIA GeForce RTX 4090" → rtx, 4090.
std::vector<std::string> name_tokens(std::string_view name) {
  std::vector<std::string> tokens;
  std::string current;
  auto flush = [&] {
    if (!current.empty() && current != "nvidia" && current != "tesla" && current != "geforce") {
      tokens.push_back(current);
    }
    current.clear();
  };
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      current += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      flush();
    }
  }
  flush();
  return tokens;
}

// The number of leading tokens that spell `key` ("rtx" + "4090" = "rtx4090"), or 0.
std::size_t leading_match(const std::vector<std::string>& tokens, const std::string& key) {
  std::string joined;
  for (std::size_t i = 0; i < tokens.size() && joined.size() < key.size(); ++i) {
    joined += tokens[i];
    if (joined == key) return i + 1;
  }
  return 0;
}

// A name's variant tokens may be glued to other text ("sxm4-80gb" is split, "80gb" is not):
// a variant token matches a whole remaining token.
bool has_token(const std::vector<std::string>& tokens, std::size_t from, const std::string& t) {
  return std::find(tokens.begin() + static_cast<std::ptrdiff_t>(from), tokens.end(), t) != tokens.end();
}

} // namespace

std::span<const DeviceSpec> device_table() {
  static const std::vector<DeviceSpec> specs = [] {
    std::vector<DeviceSpec> out;
    for (const auto& e : entries()) out.push_back(e.spec);
    return out;
  }();
  return specs;
}

std::optional<DeviceSpec> find_device(std::string_view name) {
  const auto tokens = name_tokens(name);
  const DeviceEntry* best = nullptr;
  for (const auto& e : entries()) {
    const std::size_t used = leading_match(tokens, e.base_key);
    if (used == 0) continue;
    // "RTX 3060 Ti" and "RTX 4090 D" are other chips with the same leading number.
    if (used < tokens.size() && (tokens[used] == "ti" || tokens[used] == "super" || tokens[used] == "d")) continue;
    const bool all_variants = std::all_of(e.variant_tokens.begin(), e.variant_tokens.end(),
                                          [&](const std::string& t) { return has_token(tokens, used, t); });
    if (!all_variants) continue;
    if (best == nullptr || e.variant_tokens.size() > best->variant_tokens.size()) best = &e;
  }
  if (best == nullptr) return std::nullopt;
  return best->spec;
}

std::optional<DeviceSpec> device_from_trace(const DeviceInfo& device) {
  auto spec = find_device(device.name);
  if (!spec) {
    if (device.sm_count <= 0 || device.core_clock_khz <= 0 || device.memory_bandwidth_bytes_per_s <= 0) {
      return std::nullopt;
    }
    spec = DeviceSpec{};
    spec->name = device.name;
    spec->model = device.name;
    spec->compute_capability_major = static_cast<int>(device.compute_capability_major);
    spec->compute_capability_minor = static_cast<int>(device.compute_capability_minor);
  }
  if (device.sm_count > 0) spec->sm_count = device.sm_count;
  if (device.core_clock_khz > 0) spec->boost_clock_hz = static_cast<double>(device.core_clock_khz) * 1e3;
  if (device.memory_bandwidth_bytes_per_s > 0) {
    spec->memory_bandwidth_bytes_per_s = static_cast<double>(device.memory_bandwidth_bytes_per_s);
  }
  return spec;
}

std::string device_names() {
  std::string out;
  for (const auto& d : device_table()) {
    if (!out.empty()) out += ", ";
    out += d.name;
  }
  return out;
}

} // namespace dreamscope::whatif
