// Reading scenario files with toml++: every error carries the file, line and column of the
// value that is wrong, because a scenario author fixes a file, not a stack trace.
#include <dreamscope/storage/limits.h>
#include <dreamscope/whatif/name_pattern.h>
#include <dreamscope/whatif/scenario.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

namespace dreamscope::whatif {

namespace {

// Every transform a scenario may name, in the order the docs list them.
constexpr std::array<std::string_view, 10> kOps = {"scale", "set_duration", "remove",      "insert",     "fuse",
                                                   "move",  "add_edge",     "remove_edge", "set_policy", "match_ranks"};
// One name per TransformSpec alternative: a spec added without its name is refused here.
static_assert(kOps.size() == std::variant_size_v<TransformSpec>, "kOps names every TransformSpec alternative");

SourcePosition position_of(const toml::node& node, const std::string& file) {
  const auto& src = node.source();
  return SourcePosition{file, static_cast<int>(src.begin.line), static_cast<int>(src.begin.column)};
}

std::string kind_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a number";
    case toml::node_type::boolean: return "a boolean";
    default: return "a date or time";
  }
}

// Reads one transform's values, substituting parameters, and reports the first problem at the
// position of the value that caused it.
class TransformReader {
 public:
  TransformReader(const toml::table& table, const std::string& file, const ExpressionValues& parameters)
      : table_(table), file_(file), parameters_(parameters) {}

  [[noreturn]] void fail_at(const toml::node& node, const std::string& what) const {
    throw ScenarioError(position_of(node, file_), what);
  }
  [[noreturn]] void fail(const std::string& what) const { fail_at(table_, what); }

  SourcePosition where() const { return position_of(table_, file_); }

  // The value of `key`: a plain TOML value, or the result of a "${...}" expression.
  std::optional<ParameterValue> value(const toml::table& table, std::string_view key) {
    used_[&table].insert(std::string(key));
    const toml::node* node = table.get(key);
    if (node == nullptr) return std::nullopt;
    return value_of(*node, key);
  }
  std::optional<ParameterValue> value(std::string_view key) { return value(table_, key); }

  ParameterValue value_of(const toml::node& node, std::string_view key) const {
    if (const auto* s = node.as_string()) {
      const std::string& text = s->get();
      if (text.size() >= 3 && text.starts_with("${") && text.ends_with("}")) {
        try {
          return evaluate_expression(std::string_view(text).substr(2, text.size() - 3), parameters_);
        } catch (const std::invalid_argument& e) {
          fail_at(node, fmt::format("'{}': {}", key, e.what()));
        }
      }
      return text;
    }
    if (const auto* b = node.as_boolean()) return b->get();
    if (const auto* i = node.as_integer()) return i->get();
    if (const auto* d = node.as_floating_point()) return d->get();
    fail_at(node, fmt::format("'{}' must be a value, not {}", key, kind_name(node)));
  }

  const toml::node& node(const toml::table& table, std::string_view key) const {
    const toml::node* n = table.get(key);
    return n ? *n : static_cast<const toml::node&>(table);
  }

  double number(const toml::table& table, std::string_view key, double fallback) {
    const auto v = value(table, key);
    if (!v) return fallback;
    if (const auto* i = std::get_if<std::int64_t>(&*v)) return static_cast<double>(*i);
    if (const auto* d = std::get_if<double>(&*v)) return *d;
    fail_at(node(table, key), fmt::format("'{}' must be a number, got '{}'", key, to_string(*v)));
  }
  double number(std::string_view key, double fallback) { return number(table_, key, fallback); }

  // A ratio, a rate or a cost: what makes sense of time is a finite number >= 0.
  double non_negative(const toml::table& table, std::string_view key, double fallback) {
    const double v = number(table, key, fallback);
    if (!std::isfinite(v) || v < 0) {
      fail_at(node(table, key), fmt::format("'{}' must be a finite number >= 0, got {}", key, v));
    }
    return v;
  }
  double non_negative(std::string_view key, double fallback) { return non_negative(table_, key, fallback); }

  // A duration or a count, within [min, max].
  std::int64_t bounded(const toml::table& table, std::string_view key, std::int64_t fallback, std::int64_t min,
                       std::int64_t max, std::string_view what) {
    const std::int64_t v = integer(table, key, fallback);
    if (v < min || v > max) fail_at(node(table, key), fmt::format("'{}' must be {}, got {}", key, what, v));
    return v;
  }
  std::int64_t bounded(std::string_view key, std::int64_t fallback, std::int64_t min, std::int64_t max,
                       std::string_view what) {
    return bounded(table_, key, fallback, min, max, what);
  }
  // The cores threads share in the prediction: a count, 0 (a core per thread) or -1 (the
  // traced machine's).
  std::int64_t cores(const toml::table& table) {
    const std::int64_t v = integer(table, "cores", 0);
    if (v < kTracedMachineCores || v > limits::kMaxPoolWorkers) {
      fail_at(node(table, "cores"), fmt::format("'cores' must be a number of cores, 0 (a core per thread) or -1 (the "
                                                "traced machine's); at most {}",
                                                limits::kMaxPoolWorkers));
    }
    return v;
  }
  // A duration in nanoseconds: >= 0 and no longer than a trace may be long.
  std::int64_t duration_ns(const toml::table& table, std::string_view key) {
    return bounded(table, key, 0, 0, limits::kMaxAbsTimestampNs, "a duration in ns, >= 0 and < 2^62");
  }

  std::int64_t integer(const toml::table& table, std::string_view key, std::int64_t fallback) {
    const auto v = value(table, key);
    if (!v) return fallback;
    if (const auto* i = std::get_if<std::int64_t>(&*v)) return *i;
    if (const auto* d = std::get_if<double>(&*v); d && *d == static_cast<double>(static_cast<std::int64_t>(*d))) {
      return static_cast<std::int64_t>(*d);
    }
    fail_at(node(table, key), fmt::format("'{}' must be an integer, got '{}'", key, to_string(*v)));
  }
  std::int64_t integer(std::string_view key, std::int64_t fallback) { return integer(table_, key, fallback); }

  bool boolean(const toml::table& table, std::string_view key, bool fallback) {
    const auto v = value(table, key);
    if (!v) return fallback;
    if (const auto* b = std::get_if<bool>(&*v)) return *b;
    fail_at(node(table, key), fmt::format("'{}' must be true or false, got '{}'", key, to_string(*v)));
  }
  bool boolean(std::string_view key, bool fallback) { return boolean(table_, key, fallback); }

  std::optional<std::string> text(const toml::table& table, std::string_view key) {
    const auto v = value(table, key);
    if (!v) return std::nullopt;
    if (const auto* s = std::get_if<std::string>(&*v)) return *s;
    fail_at(node(table, key), fmt::format("'{}' must be a string, got '{}'", key, to_string(*v)));
  }
  std::optional<std::string> text(std::string_view key) { return text(table_, key); }

  std::string required_text(std::string_view key) {
    auto t = text(key);
    if (!t || t->empty()) fail(fmt::format("'{}' is required", key));
    return *t;
  }

  const toml::table* subtable(std::string_view key) {
    used_[&table_].insert(std::string(key));
    const toml::node* n = table_.get(key);
    if (n == nullptr) return nullptr;
    const toml::table* t = n->as_table();
    if (t == nullptr) fail_at(*n, fmt::format("'{}' must be a table, not {}", key, kind_name(*n)));
    return t;
  }

  Selector selector(std::string_view key, bool required) {
    const toml::table* t = subtable(key);
    if (t == nullptr) {
      if (required) fail(fmt::format("'{}' is required (a table such as {{ kind = \"kernel\" }})", key));
      Selector everything;
      everything.where = where();
      return everything;
    }
    Selector s;
    s.where = position_of(*t, file_);
    used_[t].insert("kind");
    if (const toml::node* kinds = t->get("kind")) {
      auto add_kind = [&](const toml::node& n) {
        const ParameterValue v = value_of(n, "kind");
        const auto* k = std::get_if<std::string>(&v);
        const auto parsed = k ? parse_task_class(*k) : std::nullopt;
        if (!parsed) {
          fail_at(n, fmt::format("unknown task kind {} ({})", limits::quoted(to_string(v), 40), task_class_names()));
        }
        s.kinds.push_back(*parsed);
      };
      if (const auto* array = kinds->as_array()) {
        for (const auto& k : *array) add_kind(k);
      } else {
        add_kind(*kinds);
      }
    }
    auto regex = [&](std::string_view regex_key) -> std::optional<std::string> {
      auto r = text(*t, regex_key);
      // An empty pattern means "no constraint", so a parameter can switch a filter off.
      if (!r || r->empty()) return std::nullopt;
      try {
        NamePattern check(*r);
      } catch (const std::invalid_argument& e) {
        fail_at(node(*t, regex_key),
                fmt::format("{} is not a valid name pattern (RE2 syntax, docs/whatif.md): {}", limits::quoted(*r, 60),
                            e.what()));
      }
      return r;
    };
    // The keys that exclude take one pattern or a list of them, none of which may be found: a
    // scenario excludes several of its own parameters' patterns at once (amp.toml). The list is
    // one alternation of the non-empty ones, each checked on its own first.
    auto excluded = [&](std::string_view regex_key) -> std::optional<std::string> {
      const toml::node* n = t->get(regex_key);
      const toml::array* list = n ? n->as_array() : nullptr;
      if (list == nullptr) return regex(regex_key);
      used_[t].insert(std::string(regex_key));
      std::string joined;
      for (const toml::node& item : *list) {
        const ParameterValue v = value_of(item, regex_key);
        const auto* pattern = std::get_if<std::string>(&v);
        if (pattern == nullptr) {
          fail_at(item, fmt::format("'{}' lists patterns, got '{}'", regex_key, to_string(v)));
        }
        if (pattern->empty()) continue;
        try {
          NamePattern check(*pattern);
        } catch (const std::invalid_argument& e) {
          fail_at(item, fmt::format("{} is not a valid name pattern (RE2 syntax, docs/whatif.md): {}",
                                    limits::quoted(*pattern, 60), e.what()));
        }
        joined += fmt::format("{}(?:{})", joined.empty() ? "" : "|", *pattern);
      }
      if (joined.empty()) return std::nullopt;
      return joined;
    };
    s.name = regex("name");
    s.not_name = excluded("not_name");
    s.annotation = regex("annotation");
    s.not_annotation = excluded("not_annotation");
    s.category = regex("category");
    s.not_category = regex("not_category");
    s.resource_with = regex("resource_with");
    s.resource_without = regex("resource_without");
    if (t->contains("thread")) s.thread = integer(*t, "thread", 0);
    if (t->contains("rank")) {
      s.rank = integer(*t, "rank", 0);
      if (*s.rank < 0 || *s.rank >= limits::kMaxWorldSize) {
        fail_at(node(*t, "rank"), fmt::format("'rank' must be a rank from 0 to {}, got {}", limits::kMaxWorldSize - 1, *s.rank));
      }
    }
    if (t->contains("stream")) s.stream = integer(*t, "stream", 0);
    auto range = [&](std::string_view range_key) -> std::optional<std::pair<std::int64_t, std::int64_t>> {
      used_[t].insert(std::string(range_key));
      const toml::node* n = t->get(range_key);
      if (n == nullptr) return std::nullopt;
      const auto* array = n->as_array();
      if (array == nullptr || array->size() != 2) fail_at(*n, fmt::format("'{}' must be [first, last]", range_key));
      std::int64_t bounds[2];
      for (std::size_t i = 0; i < 2; ++i) {
        const ParameterValue v = value_of(*array->get(i), range_key);
        const auto* b = std::get_if<std::int64_t>(&v);
        if (b == nullptr) fail_at(*array->get(i), fmt::format("'{}' bounds must be integers", range_key));
        bounds[i] = *b;
      }
      if (bounds[1] < bounds[0]) fail_at(*n, fmt::format("'{}' ends before it begins", range_key));
      return std::pair{bounds[0], bounds[1]};
    };
    s.steps = range("steps");
    s.window = range("window_ns");
    check_unused(*t, fmt::format("'{}'", key));
    return s;
  }

  CostModelSpec cost_model(const toml::table& t) {
    CostModelSpec spec;
    const std::string model = text(t, "model").value_or("");
    if (model == "constant") {
      spec.fixed = ConstantCost{duration_ns(t, "duration_ns")};
    } else if (model == "ratio") {
      spec.fixed = RatioCost{non_negative(t, "ratio", 1.0), duration_ns(t, "add_ns")};
    } else if (model == "wave_scaling") {
      const auto to = text(t, "to");
      if (!to) fail_at(t, "wave_scaling needs 'to', the destination GPU");
      if (!find_device(*to)) {
        fail_at(node(t, "to"), fmt::format("unknown GPU '{}' (known: {})", *to, device_names()));
      }
      spec.wave_scaling_to = to;
      spec.wave_scaling_from = text(t, "from");
      if (spec.wave_scaling_from && spec.wave_scaling_from->empty()) spec.wave_scaling_from.reset();
      if (spec.wave_scaling_from && !find_device(*spec.wave_scaling_from)) {
        fail_at(node(t, "from"), fmt::format("unknown GPU '{}' (known: {})", *spec.wave_scaling_from, device_names()));
      }
    } else if (model == "ring_allreduce") {
      RingAllReduceCost ring;
      ring.workers = bounded(t, "workers", 1, 1, limits::kMaxPoolWorkers, "a number of workers from 1 to 4096");
      ring.latency_s = non_negative(t, "latency_us", 0) * 1e-6;
      ring.link_bandwidth_bytes_per_s = non_negative(t, "bandwidth_gb_per_s", 0) * 1e9;
      if (!(ring.link_bandwidth_bytes_per_s > 0)) fail_at(t, "ring_allreduce needs 'bandwidth_gb_per_s' > 0");
      spec.fixed = ring;
    } else {
      fail_at(model.empty() ? t : node(t, "model"),
              fmt::format("unknown cost model '{}' (constant, ratio, wave_scaling, ring_allreduce)", model));
    }
    check_unused(t, "the cost model");
    return spec;
  }

  CostModelSpec cost_model(std::string_view key) {
    const toml::table* t = subtable(key);
    if (t == nullptr) fail(fmt::format("'{}' is required (a table such as {{ model = \"constant\", duration_ns = 1000 }})", key));
    return cost_model(*t);
  }

  // Every key a transform does not read is a typo the author wants to hear about.
  void check_unused(const toml::table& t, const std::string& what) {
    const auto& used = used_[&t];
    for (const auto& [k, v] : t) {
      if (!used.contains(std::string(k.str()))) {
        fail_at(v, fmt::format("unknown key '{}' in {}", k.str(), what));
      }
    }
  }
  void check_unused(const std::string& op) { check_unused(table_, fmt::format("a '{}' transform", op)); }

 private:
  const toml::table& table_;
  const std::string& file_;
  const ExpressionValues& parameters_;
  std::map<const toml::table*, std::set<std::string>> used_;
};

std::optional<Transform> read_transform(const toml::table& t, const std::string& file, const ExpressionValues& params) {
  TransformReader r(t, file, params);
  const std::string op = r.required_text("op");
  const auto when = r.value("when");
  bool enabled = true;
  if (when) {
    if (const auto* b = std::get_if<bool>(&*when)) {
      enabled = *b;
    } else {
      r.fail_at(r.node(t, "when"), fmt::format("'when' must be true or false, got '{}'", to_string(*when)));
    }
  }
  // Values of a switched-off transform may be meaningless for these parameters (a pool of
  // 0 workers), so only its op is checked.
  const bool known_op = std::find(kOps.begin(), kOps.end(), op) != kOps.end();
  if (!enabled && known_op) return std::nullopt;
  Transform out;
  out.op = op;
  out.where = r.where();
  if (op == "scale") {
    ScaleSpec s;
    s.select = r.selector("select", true);
    s.ratio = r.non_negative("ratio", 1.0);
    s.add = r.duration_ns(t, "add_ns");
    if (const auto part = r.text("part")) {
      if (*part == "off_cpu") {
        s.off_cpu_only = true;
        if (s.add != 0) r.fail_at(r.node(t, "part"), "'add_ns' applies to whole tasks, not with part = \"off_cpu\"");
      } else if (*part != "all") {
        r.fail_at(r.node(t, "part"), fmt::format("unknown part '{}' (all, off_cpu)", *part));
      }
    }
    out.spec = s;
  } else if (op == "set_duration") {
    SetDurationSpec s;
    s.select = r.selector("select", true);
    s.model = r.cost_model("cost");
    out.spec = s;
  } else if (op == "remove") {
    RemoveSpec s;
    s.select = r.selector("select", true);
    s.with_launches = r.boolean("with_launches", false);
    out.spec = s;
  } else if (op == "insert") {
    InsertSpec s;
    s.name = r.required_text("name");
    s.resource = r.required_text("resource");
    s.duration = r.cost_model("cost");
    s.bytes = r.bounded("bytes", 0, 0, std::numeric_limits<std::int64_t>::max(), "a number of bytes >= 0");
    s.after = r.selector("after", true);
    if (t.contains("before")) s.before = r.selector("before", true);
    s.groups = r.bounded("groups", 1, 1, limits::kMaxPoolWorkers, "a number of groups from 1 to 4096");
    out.spec = s;
  } else if (op == "fuse") {
    FuseSpec s;
    s.select = r.selector("select", true);
    if (const auto name = r.text("name"); name && !name->empty()) s.name = *name;
    if (t.contains("cost")) s.duration = r.cost_model("cost");
    s.keep_launch = r.boolean("keep_launch", true);
    s.per_step = r.boolean("per_step", true);
    out.spec = s;
  } else if (op == "move") {
    MoveSpec s;
    s.select = r.selector("select", true);
    s.resource = r.text("resource").value_or("");
    s.pool = r.integer("pool", 0);
    s.cores = r.cores(t);
    s.ahead = r.integer("ahead", 0);
    if (s.resource.empty() == (s.pool == 0)) r.fail("'move' needs either 'resource' or 'pool' (a number of workers)");
    if (s.pool < 0 || s.pool > limits::kMaxPoolWorkers) {
      r.fail_at(r.node(t, "pool"), fmt::format("'pool' must be a number of workers from 1 to {}, got {}",
                                               limits::kMaxPoolWorkers, s.pool));
    }
    // After the pool's bound: a window is workers × prefetch, and a pool past its bound says so first.
    if (s.ahead < 0 || s.ahead > limits::kMaxPoolItemsAhead) {
      r.fail_at(r.node(t, "ahead"), fmt::format("'ahead' must be a number of work items from 0 (no bound) to {}, got {}",
                                                limits::kMaxPoolItemsAhead, s.ahead));
    }
    if (s.ahead > 0 && s.pool == 0) r.fail_at(r.node(t, "ahead"), "'ahead' bounds a pool: it needs 'pool'");
    out.spec = s;
  } else if (op == "add_edge") {
    AddEdgeSpec s;
    s.from = r.selector("from", true);
    s.to = r.selector("to", true);
    s.delay = r.duration_ns(t, "delay_ns");
    out.spec = s;
  } else if (op == "remove_edge") {
    RemoveEdgeSpec s;
    s.from = r.selector("from", true);
    s.to = r.selector("to", true);
    out.spec = s;
  } else if (op == "match_ranks") {
    MatchRanksSpec s;
    s.select = r.selector("select", true);
    s.rank = r.integer("rank", kStragglerRank);
    s.cores = r.cores(t);
    if (s.rank < kStragglerRank || s.rank >= limits::kMaxWorldSize) {
      r.fail_at(r.node(t, "rank"), fmt::format("'rank' must be a rank, or -1 for the straggler the trace shows; got {}", s.rank));
    }
    out.spec = s;
  } else if (op == "set_policy") {
    SetPolicySpec s;
    s.policy = r.required_text("policy");
    static const std::set<std::string> kPolicies = {"measured_order", "gpu_first"};
    if (!kPolicies.contains(s.policy)) {
      r.fail_at(r.node(t, "policy"),
                fmt::format("unknown policy '{}' (measured_order, gpu_first)", s.policy));
    }
    out.spec = s;
  } else {
    r.fail_at(r.node(t, "op"), fmt::format("unknown op {} ({})", limits::quoted(op, 40), fmt::join(kOps, ", ")));
  }
  r.check_unused(op);
  return out;
}

toml::table parse_toml(std::string_view text, const std::string& file) {
  try {
    return toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    const auto& src = e.source();
    throw ScenarioError(SourcePosition{file, static_cast<int>(src.begin.line), static_cast<int>(src.begin.column)},
                        std::string(e.description()));
  }
}

std::optional<ParameterValue> parse_override(const ParameterValue& like, const std::string& text) {
  try {
    std::size_t used = 0;
    if (std::holds_alternative<bool>(like)) {
      if (text == "true" || text == "1" || text == "yes") return true;
      if (text == "false" || text == "0" || text == "no") return false;
      return std::nullopt;
    }
    if (std::holds_alternative<std::int64_t>(like)) {
      const long long v = std::stoll(text, &used);
      if (used != text.size()) return std::nullopt;
      return static_cast<std::int64_t>(v);
    }
    if (std::holds_alternative<double>(like)) {
      const double v = std::stod(text, &used);
      if (used != text.size()) return std::nullopt;
      return v;
    }
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return text;
}

std::string type_name(const ParameterValue& v) {
  if (std::holds_alternative<bool>(v)) return "true or false";
  if (std::holds_alternative<std::int64_t>(v)) return "an integer";
  if (std::holds_alternative<double>(v)) return "a number";
  return "a string";
}

} // namespace

namespace {
constexpr std::array<std::pair<TaskClass, std::string_view>, 12> kTaskClasses = {{
    {TaskClass::Kernel, "kernel"},
    {TaskClass::Compute, "compute"},
    {TaskClass::Communication, "comm"},
    {TaskClass::Memcpy, "memcpy"},
    {TaskClass::Memset, "memset"},
    {TaskClass::Sync, "sync"},
    {TaskClass::Gpu, "gpu"},
    {TaskClass::Api, "api"},
    {TaskClass::Launch, "launch"},
    {TaskClass::Cpu, "cpu"},
    {TaskClass::Annotation, "annotation"},
    {TaskClass::Gap, "gap"},
}};
} // namespace

std::string_view to_string(TaskClass c) {
  for (const auto& [value, name] : kTaskClasses) {
    if (value == c) return name;
  }
  return "unknown";
}

std::optional<TaskClass> parse_task_class(std::string_view name) {
  for (const auto& [value, text] : kTaskClasses) {
    if (text == name) return value;
  }
  return std::nullopt;
}

std::string task_class_names() {
  std::string out;
  for (const auto& [value, name] : kTaskClasses) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

ScenarioError::ScenarioError(SourcePosition where, const std::string& what)
    : std::runtime_error(where.line > 0 ? fmt::format("{}:{}:{}: {}", where.file, where.line, where.column, what)
                                        : fmt::format("{}: {}", where.file, what)),
      where_(std::move(where)) {}

bool Selector::selects_everything() const {
  return kinds.empty() && !name && !not_name && !resource_with && !resource_without && !annotation && !category &&
         !not_category && !not_annotation && !rank && !thread && !stream && !steps && !window;
}

Scenario Scenario::parse(std::string_view toml_text, std::string file) {
  Scenario s;
  s.file_ = std::move(file);
  s.text_ = std::string(toml_text);
  const toml::table root = parse_toml(toml_text, s.file_);
  const SourcePosition top{s.file_, 1, 1};

  for (const auto& [key, node] : root) {
    const std::string k(key.str());
    if (k != "name" && k != "description" && k != "parameters" && k != "transform") {
      throw ScenarioError(position_of(node, s.file_),
                          fmt::format("unknown key '{}' (a scenario has name, description, [parameters] and "
                                      "[[transform]])",
                                      k));
    }
  }
  const toml::node* name = root.get("name");
  if (name == nullptr || !name->is_string() || name->as_string()->get().empty()) {
    throw ScenarioError(name ? position_of(*name, s.file_) : top, "'name' is required and must be a string");
  }
  s.name_ = name->as_string()->get();
  if (const toml::node* d = root.get("description")) {
    if (!d->is_string()) throw ScenarioError(position_of(*d, s.file_), "'description' must be a string");
    s.description_ = d->as_string()->get();
  }
  if (const toml::node* p = root.get("parameters")) {
    const toml::table* params = p->as_table();
    if (params == nullptr) throw ScenarioError(position_of(*p, s.file_), "[parameters] must be a table");
    std::vector<SourcePosition> positions;
    for (const auto& [key, node] : *params) {
      Parameter param;
      param.name = std::string(key.str());
      const toml::node* value = &node;
      if (const toml::table* t = node.as_table()) {
        value = t->get("default");
        if (value == nullptr) {
          throw ScenarioError(position_of(node, s.file_),
                              fmt::format("parameter '{}' needs a 'default'", param.name));
        }
        if (const toml::node* help = t->get("help")) {
          if (!help->is_string()) throw ScenarioError(position_of(*help, s.file_), "'help' must be a string");
          param.help = help->as_string()->get();
        }
        for (const auto& [pk, pv] : *t) {
          if (pk.str() != "default" && pk.str() != "help") {
            throw ScenarioError(position_of(pv, s.file_),
                                fmt::format("unknown key '{}' in parameter '{}' (default, help)", pk.str(), param.name));
          }
        }
      }
      if (const auto* b = value->as_boolean()) {
        param.default_value = b->get();
      } else if (const auto* i = value->as_integer()) {
        param.default_value = i->get();
      } else if (const auto* d = value->as_floating_point()) {
        param.default_value = d->get();
      } else if (const auto* str = value->as_string()) {
        param.default_value = str->get();
      } else {
        throw ScenarioError(position_of(*value, s.file_),
                            fmt::format("parameter '{}' must default to a value, not {}", param.name, kind_name(*value)));
      }
      s.parameters_.push_back(std::move(param));
      positions.push_back(position_of(node, s.file_));
    }
    // toml++ orders keys by name; help and error messages read better in the file's order.
    std::vector<std::size_t> order(s.parameters_.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return std::pair{positions[a].line, positions[a].column} < std::pair{positions[b].line, positions[b].column};
    });
    std::vector<Parameter> in_file_order;
    for (std::size_t i : order) in_file_order.push_back(std::move(s.parameters_[i]));
    s.parameters_ = std::move(in_file_order);
  }
  if (const toml::node* t = root.get("transform")) {
    const toml::array* transforms = t->as_array();
    if (transforms == nullptr || !transforms->is_array_of_tables()) {
      throw ScenarioError(position_of(*t, s.file_), "'transform' must be a list of [[transform]] tables");
    }
  }
  // Instantiating with the defaults checks every transform now, at load time.
  (void)s.instantiate({});
  return s;
}

Scenario Scenario::load(const std::string& path) {
  const auto fail = [&](const std::string& what) { throw ScenarioError(SourcePosition{path, 0, 0}, what); };
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) fail("no such file");
  // A FIFO or a device would block or never end: a scenario is a file.
  if (!std::filesystem::is_regular_file(status)) fail("not a regular file, so not a scenario");
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > limits::kMaxScenarioBytes) {
    fail(fmt::format("{} bytes; a scenario file may be at most {} bytes", size, limits::kMaxScenarioBytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(fmt::format("cannot read the file: {}", std::strerror(errno)));
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) fail(fmt::format("cannot read the file: {}", std::strerror(errno)));
  return parse(text.str(), path);
}

std::map<std::string, ParameterValue> Scenario::bind(const std::map<std::string, std::string>& overrides) const {
  std::map<std::string, ParameterValue> values;
  for (const auto& p : parameters_) values[p.name] = p.default_value;
  for (const auto& [key, text] : overrides) {
    const auto it = values.find(key);
    if (it == values.end()) {
      std::string known;
      for (const auto& p : parameters_) known += (known.empty() ? "" : ", ") + p.name;
      throw ScenarioError(SourcePosition{file_, 0, 0},
                          fmt::format("scenario '{}' has no parameter '{}' (it has: {})", name_, key,
                                      known.empty() ? "none" : known));
    }
    auto parsed = parse_override(it->second, text);
    if (!parsed) {
      throw ScenarioError(SourcePosition{file_, 0, 0},
                          fmt::format("parameter '{}' of scenario '{}' must be {}, got '{}'", key, name_,
                                      type_name(it->second), text));
    }
    it->second = std::move(*parsed);
  }
  return values;
}

std::vector<Transform> Scenario::instantiate(const std::map<std::string, std::string>& overrides) const {
  const auto values = bind(overrides);
  const toml::table root = parse_toml(text_, file_);
  std::vector<Transform> out;
  if (const toml::array* transforms = root["transform"].as_array()) {
    for (const auto& node : *transforms) {
      if (auto t = read_transform(*node.as_table(), file_, values)) out.push_back(std::move(*t));
    }
  }
  return out;
}

void restrict_to_rank(std::vector<Transform>& transforms, std::int64_t rank) {
  auto limit = [rank](Selector& s) {
    if (!s.rank) s.rank = rank;
  };
  for (Transform& t : transforms) {
    std::visit(
        [&](auto& spec) {
          using Spec = std::decay_t<decltype(spec)>;
          if constexpr (std::is_same_v<Spec, InsertSpec>) {
            limit(spec.after);
            if (spec.before) limit(*spec.before);
          } else if constexpr (std::is_same_v<Spec, AddEdgeSpec> || std::is_same_v<Spec, RemoveEdgeSpec>) {
            limit(spec.from);
            limit(spec.to);
          } else if constexpr (std::is_same_v<Spec, MatchRanksSpec>) {
            // The rank to bring to the others' median is the one named.
            if (spec.rank == kStragglerRank) spec.rank = rank;
          } else if constexpr (!std::is_same_v<Spec, SetPolicySpec>) {
            limit(spec.select);
          }
        },
        t.spec);
  }
}

} // namespace dreamscope::whatif
