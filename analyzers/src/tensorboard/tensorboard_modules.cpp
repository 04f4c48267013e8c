// The TensorBoard plugin's module view (its module_op.py): the nn.Module hierarchy read from
// the Python ids of Kineto's python_function events, and the module scopes of the call trees
// summed per module onto it.
#include "tensorboard/tensorboard_tree.h"

#include "dreamscope/storage/limits.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace dreamscope::analyzers {

namespace {

using tb::CallTrees;
using tb::Model;
using tb::Node;
using tb::NodeType;

constexpr std::string_view kModulePrefix = "nn.Module: ";

// Kineto writes Python ids as integers; anything else (and a missing or null arg) is None.
std::optional<std::int64_t> integer_arg(const Trace& trace, AnnotationIndex row, std::string_view key) {
  const EventArg* a = trace.find_arg(row, key);
  if (!a) return std::nullopt;
  if (a->type == ArgType::Int) return a->int_value;
  // Python keys 3.0 and 3 alike.
  if (a->type == ArgType::Double && std::trunc(a->double_value) == a->double_value &&
      std::abs(a->double_value) < 9.0e18) {
    return static_cast<std::int64_t>(a->double_value);
  }
  return std::nullopt;
}

std::int64_t module_id_of(const Trace& trace, AnnotationIndex row) {
  return integer_arg(trace, row, "Python module id").value_or(kNoValue);
}

struct Function {
  AnnotationIndex row{};
  std::int64_t id = 0;
  std::optional<std::int64_t> parent;
  bool module = false;
};

// Python's dict: lookups by key, iteration in first-insertion order.
template <class V>
struct InsertionOrdered {
  std::vector<std::pair<std::int64_t, V>> items;
  std::unordered_map<std::int64_t, std::size_t> index;

  void assign(std::int64_t key, const V& value) {
    auto [it, inserted] = index.try_emplace(key, items.size());
    if (inserted) items.emplace_back(key, value);
    else items[it->second].second = value;
  }
  void set_default(std::int64_t key, const V& value) {
    if (index.try_emplace(key, items.size()).second) items.emplace_back(key, value);
  }
};

struct SeenHash {
  std::size_t operator()(const std::pair<std::int64_t, std::optional<std::int64_t>>& k) const {
    const std::size_t h = std::hash<std::int64_t>{}(k.first);
    const std::size_t c = k.second ? std::hash<std::int64_t>{}(*k.second) : 0x9e3779b97f4a7c15ULL;
    return h ^ (c + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
  }
};

// One key per tree shape: each module (preorder) as its name's length, name, id and number of
// children, so that equal keys mean equal trees.
void shape_key(const ModuleTree& root, std::string& out) {
  std::vector<const ModuleTree*> todo{&root};
  while (!todo.empty()) {
    const ModuleTree* m = todo.back();
    todo.pop_back();
    out += std::to_string(m->name.size());
    out += ':';
    out += m->name;
    out += std::to_string(m->module_id);
    out += '/';
    out += std::to_string(m->children.size());
    out += ';';
    for (auto it = m->children.rbegin(); it != m->children.rend(); ++it) todo.push_back(&*it);
  }
}

// The plugin's _build_module_hierarchy.
std::vector<ModuleTree> build_hierarchy(const Model& m) {
  const Trace& trace = *m.trace;
  // A function without a Python id cannot be placed (the plugin takes all of them for one
  // function, None); Kineto always writes one.
  std::vector<Function> functions;
  functions.reserve(m.python_functions.size());
  for (const tb::PythonFunction& f : m.python_functions) {
    const auto id = integer_arg(trace, f.row, "Python id");
    if (!id) continue;
    functions.push_back(
        {.row = f.row, .id = *id, .parent = integer_arg(trace, f.row, "Python parent id"), .module = f.module});
  }

  // A Python id stands for the last function with it.
  std::unordered_map<std::int64_t, std::size_t> function_of_id;
  std::unordered_set<std::int64_t> parents;
  std::vector<std::int64_t> ids; // first-seen order
  for (std::size_t i = 0; i < functions.size(); ++i) {
    if (function_of_id.insert_or_assign(functions[i].id, i).second) ids.push_back(functions[i].id);
    if (functions[i].parent) parents.insert(*functions[i].parent);
  }

  // From each innermost function up through its callers, each module's nearest calling module.
  // A walk stops where one before it went on with the same module below.
  InsertionOrdered<std::optional<std::int64_t>> parent_module;
  std::unordered_set<std::pair<std::int64_t, std::optional<std::int64_t>>, SeenHash> seen;
  for (std::int64_t leaf : ids) {
    if (parents.contains(leaf)) continue;
    std::optional<std::int64_t> below; // the last module met
    for (std::size_t f = function_of_id[leaf];;) {
      const Function& fn = functions[f];
      if (fn.module) {
        if (below) parent_module.assign(*below, fn.id);
        below = fn.id;
        parent_module.set_default(fn.id, std::nullopt);
      }
      if (!seen.insert({fn.id, below}).second) break;
      if (!fn.parent) break;
      auto it = function_of_id.find(*fn.parent);
      if (it == function_of_id.end()) break;
      f = it->second;
    }
  }

  std::vector<std::int64_t> roots;
  std::unordered_map<std::int64_t, std::vector<std::int64_t>> children_of;
  for (const auto& [child, parent] : parent_module.items) {
    if (parent) children_of[*parent].push_back(child);
    else roots.push_back(child);
  }
  auto module_of = [&](std::int64_t id) {
    const AnnotationIndex row = functions[function_of_id.find(id)->second].row;
    return ModuleTree{.name = std::string(trace.str(trace.annotations().name[row])),
                      .module_id = module_id_of(trace, row)};
  };

  // Each root's modules are a tree (a module's calling module is one), built without recursion
  // however deep; each identical tree once.
  std::vector<ModuleTree> out;
  std::unordered_set<std::string> shapes;
  for (std::int64_t root_id : roots) {
    ModuleTree root = module_of(root_id);
    std::vector<std::pair<ModuleTree*, std::int64_t>> todo{{&root, root_id}};
    while (!todo.empty()) {
      auto [tree, id] = todo.back();
      todo.pop_back();
      auto it = children_of.find(id);
      if (it == children_of.end()) continue;
      // Filled before any pointer into it is taken, and never grown after.
      tree->children.reserve(it->second.size());
      for (std::int64_t c : it->second) tree->children.push_back(module_of(c));
      for (std::size_t i = 0; i < it->second.size(); ++i) todo.emplace_back(&tree->children[i], it->second[i]);
    }
    std::string key;
    shape_key(root, key);
    if (shapes.insert(std::move(key)).second) out.push_back(std::move(root));
  }
  // The plugin keeps the trees in a set; ties in name are in first-seen order here.
  std::stable_sort(out.begin(), out.end(), [](const ModuleTree& a, const ModuleTree& b) { return a.name < b.name; });
  return out;
}

struct Sums {
  std::int64_t occurrences = 0, operators = 0;
  TimeNs host = 0, self_host = 0, device = 0, self_device = 0;
};

using ModuleKey = std::pair<std::string_view, std::int64_t>;

// The module scopes of all trees, summed per (name, module id). The plugin does not look
// below a module's backward node.
std::map<ModuleKey, Sums> sum_modules(const Model& m, const CallTrees& t) {
  std::map<ModuleKey, Sums> out;
  std::vector<std::uint32_t> todo;
  for (std::uint32_t root : t.roots) {
    todo.assign(t.nodes[root].children.rbegin(), t.nodes[root].children.rend());
    while (!todo.empty()) {
      const Node& n = t.nodes[todo.back()];
      todo.pop_back();
      if (n.type == NodeType::Backward) continue;
      if (n.type == NodeType::Module) {
        Sums& s = out[{n.name, module_id_of(*m.trace, m.host[n.host].row)}];
        ++s.occurrences;
        for (std::uint32_t c : n.children) s.operators += t.nodes[c].plain_operator ? 1 : 0;
        s.host = limits::add_ns(s.host, n.end - n.start);
        s.self_host = limits::add_ns(s.self_host, n.self_host);
        s.device = limits::add_ns(s.device, n.device);
        s.self_device = limits::add_ns(s.self_device, n.self_device);
      }
      todo.insert(todo.end(), n.children.rbegin(), n.children.rend());
    }
  }
  return out;
}

std::string without_prefix(std::string_view name) {
  // The plugin removes every occurrence (str.replace), not only the leading one.
  std::string out;
  for (std::size_t at = 0;;) {
    const std::size_t next = name.find(kModulePrefix, at);
    out.append(name.substr(at, next - at));
    if (next == std::string_view::npos) return out;
    at = next + kModulePrefix.size();
  }
}

ModuleStats stats_of(const ModuleTree& module, const std::map<ModuleKey, Sums>& sums) {
  ModuleStats s{.name = without_prefix(module.name), .module_id = module.module_id};
  // A module with no scope in the trees (one left out for straddling its caller's end) has
  // zeros; the plugin fails on such a trace.
  if (auto it = sums.find({module.name, module.module_id}); it != sums.end()) {
    const Sums& v = it->second;
    s.occurrences = v.occurrences;
    s.operators = v.operators;
    s.host = v.host;
    s.self_host = v.self_host;
    s.device = v.device;
    s.self_device = v.self_device;
    const TimeNs per = v.device > 0 ? v.device : v.host;
    s.average = static_cast<double>(per) / static_cast<double>(v.occurrences);
  }
  return s;
}

} // namespace

std::vector<ModuleTree> module_hierarchy(const Trace& trace) { return build_hierarchy(tb::build_model(trace)); }

std::vector<ModuleStats> module_view(const Trace& trace) {
  const Model m = tb::build_model(trace);
  const std::vector<ModuleTree> hierarchy = build_hierarchy(m);
  if (hierarchy.empty()) return {};
  const CallTrees t = tb::build_call_trees(m);
  const std::map<ModuleKey, Sums> sums = sum_modules(m, t);
  if (sums.empty()) return {};

  std::vector<ModuleStats> out;
  out.reserve(hierarchy.size());
  for (const ModuleTree& root : hierarchy) {
    out.push_back(stats_of(root, sums));
    std::vector<std::pair<const ModuleTree*, ModuleStats*>> todo{{&root, &out.back()}};
    while (!todo.empty()) {
      auto [tree, stats] = todo.back();
      todo.pop_back();
      stats->children.reserve(tree->children.size());
      for (const ModuleTree& c : tree->children) stats->children.push_back(stats_of(c, sums));
      for (std::size_t i = 0; i < tree->children.size(); ++i)
        todo.emplace_back(&tree->children[i], &stats->children[i]);
    }
  }
  // Sorted again: without the prefix, names can compare otherwise.
  std::stable_sort(out.begin(), out.end(), [](const ModuleStats& a, const ModuleStats& b) { return a.name < b.name; });
  return out;
}

} // namespace dreamscope::analyzers
