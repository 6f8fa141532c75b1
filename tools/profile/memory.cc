#include "memory.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace refeval::profile {
namespace {

constexpr int kGraphInput = -1;

struct Lifetime {
  int64_t bytes = 0;
  int produced = kGraphInput;  // node index
  int last_read = kGraphInput;
  bool graph_output = false;
};

// Operators whose output may take the buffer of an input of its size that dies there: element by
// element computations (each element read before it is written) and views.
bool may_write_in_place(const std::string& op) {
  static const std::set<std::string> ops = {
      "Add",      "Sub",     "Mul",        "Div",         "Pow",      "Where",   "Relu",   "Sigmoid", "Tanh",
      "Erf",      "Exp",     "Log",        "Neg",         "Abs",      "Sqrt",    "Reciprocal", "Clip", "Cast",
      "LeakyRelu", "Elu",    "Selu",       "HardSigmoid", "HardSwish", "Softplus", "Gelu",  "FastGelu",
      "BiasGelu", "QuickGelu", "Identity", "Dropout",     "Reshape",  "Squeeze", "Unsqueeze", "Flatten"};
  return ops.count(op) > 0;
}

// The names `g` reads without defining them (its inputs, initializers and nodes' outputs).
void collect_outer_names(const Graph& g, std::set<std::string>& out) {
  std::set<std::string> defined;
  for (const ValueInfo& v : g.inputs) defined.insert(v.name);
  for (const Initializer& i : g.initializers) defined.insert(i.name);
  auto read = [&](const std::string& name) {
    if (!name.empty() && !defined.count(name)) out.insert(name);
  };
  for (const Node& n : g.nodes) {
    for (const std::string& in : n.inputs) read(in);
    for (const std::string& name : outer_names(n)) read(name);  // a nested body's reads from here or beyond
    for (const std::string& o : n.outputs)
      if (!o.empty()) defined.insert(o);
  }
  for (const ValueInfo& v : g.outputs) read(v.name);  // a body may return an outer value as it is
}

}  // namespace

std::set<std::string> outer_names(const Node& node) {
  std::set<std::string> out;
  for (const Attribute& a : node.attributes) {
    if (a.g) collect_outer_names(*a.g, out);
    for (const auto& body : a.graphs)
      if (body) collect_outer_names(*body, out);
  }
  return out;
}

MemoryTimeline live_memory(const std::vector<MemoryNode>& nodes, const NamedBytes& feeds,
                           const std::vector<std::string>& outputs) {
  const int n = int(nodes.size());
  std::unordered_map<std::string, Lifetime> values;
  std::vector<std::string> order;  // names in the order they appear, for stable listings
  for (const auto& [name, bytes] : feeds)
    if (values.emplace(name, Lifetime{bytes, kGraphInput, kGraphInput, false}).second) order.push_back(name);
  // Outputs nobody named ("") live only at their node: kept apart, per node.
  std::vector<int64_t> unnamed(size_t(n), 0);
  for (int i = 0; i < n; ++i) {
    for (const std::string& r : nodes[size_t(i)].reads)
      if (auto it = values.find(r); it != values.end()) it->second.last_read = i;  // weights are not in `values`
    for (const auto& [name, bytes] : nodes[size_t(i)].writes) {
      if (name.empty()) {
        unnamed[size_t(i)] += bytes;
        continue;
      }
      // A name is written once in a valid graph; a second write starts a new lifetime of it.
      if (!values.count(name)) order.push_back(name);
      values[name] = Lifetime{bytes, i, i, false};
    }
  }
  for (const std::string& o : outputs)
    if (auto it = values.find(o); it != values.end()) it->second.graph_output = true, it->second.last_read = n - 1;

  MemoryTimeline t;
  if (n == 0) return t;
  // Each lifetime adds its bytes from its first node and takes them away after its last.
  std::vector<int64_t> delta(size_t(n) + 1, 0);
  for (const auto& [name, life] : values) {
    const int from = std::max(life.produced, 0), to = std::max(life.last_read, from);
    delta[size_t(from)] += life.bytes;
    delta[size_t(to) + 1] -= life.bytes;
  }
  int64_t live = 0;
  for (int i = 0; i < n; ++i) {
    live += delta[size_t(i)];
    t.live_bytes.push_back(live + unnamed[size_t(i)]);
    if (t.live_bytes.back() > t.peak_bytes) t.peak_bytes = t.live_bytes.back(), t.peak_index = size_t(i);
  }

  auto node_name = [&](int i) { return nodes[size_t(i)].name; };
  const int p = int(t.peak_index);
  for (const std::string& name : order) {
    const Lifetime& life = values.at(name);
    const int from = std::max(life.produced, 0), to = std::max(life.last_read, from);
    if (from > p || to < p) continue;
    const bool read = life.last_read > life.produced;
    t.at_peak.push_back({name, life.bytes, life.produced == kGraphInput ? "(graph input)" : node_name(life.produced),
                         life.graph_output ? "(graph output)" : read ? node_name(life.last_read) : "(nobody)"});
  }
  if (unnamed[size_t(p)]) t.at_peak.push_back({"(outputs nobody reads)", unnamed[size_t(p)], node_name(p), node_name(p)});
  std::stable_sort(t.at_peak.begin(), t.at_peak.end(), [](const LiveTensor& a, const LiveTensor& b) { return a.bytes > b.bytes; });

  // In place: at node i an output may take the buffer of an input of its size read for the last
  // time there, made by a node (a feed is the caller's) and not a graph output; each buffer once.
  for (int i = 0; i < n; ++i) {
    const MemoryNode& node = nodes[size_t(i)];
    int64_t saved = 0;
    if (may_write_in_place(node.op_type)) {
      std::set<std::string> donated;
      for (const auto& [out, bytes] : node.writes)
        for (const std::string& r : node.reads) {
          auto it = values.find(r);
          if (it == values.end() || donated.count(r)) continue;
          const Lifetime& in = it->second;
          if (in.last_read == i && in.produced != kGraphInput && in.produced != i && !in.graph_output && in.bytes == bytes) {
            donated.insert(r);
            saved += bytes;
            break;
          }
        }
    }
    t.inplace_peak_bytes = std::max(t.inplace_peak_bytes, t.live_bytes[size_t(i)] - saved);
  }
  return t;
}

nlohmann::ordered_json memory_json(const MemoryTimeline& t, const std::vector<MemoryNode>& nodes) {
  nlohmann::ordered_json j;
  j["peak_bytes"] = t.peak_bytes;
  j["peak_node"] = nodes.empty() ? "" : nodes[t.peak_index].name;
  j["peak_node_index"] = t.peak_index;
  j["inplace_peak_bytes"] = t.inplace_peak_bytes;
  nlohmann::ordered_json at_peak = nlohmann::ordered_json::array();
  for (const LiveTensor& l : t.at_peak)
    at_peak.push_back({{"name", l.name}, {"bytes", l.bytes}, {"producer", l.producer}, {"last_reader", l.last_reader}});
  j["at_peak"] = std::move(at_peak);
  return j;
}

}  // namespace refeval::profile
