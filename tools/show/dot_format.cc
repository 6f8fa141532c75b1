#include "dot_format.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "refeval/error.h"
#include "shape_inference.h"

extern char** environ;

namespace refeval::show {

std::string dot_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

std::string dot_header(const std::string& graph_name, const std::string& edge_font) {
  return fmt::format(
      "digraph \"{}\" {{\n  rankdir=TB; nodesep=0.25; ranksep=0.35;\n"
      "  node [shape=box, style=\"rounded,filled\", fillcolor=\"#eef3fb\", color=\"#6b7f99\", fontname=\"Helvetica\", fontsize=10];\n"
      "  edge [color=\"#8899aa\", arrowsize=0.6{}];\n",
      dot_escape(graph_name), edge_font);
}

namespace {


std::string type_string(const ValueType& t) {
  if (t.kind != ValueType::Kind::Tensor) return t.to_string();
  std::vector<std::string> dims;
  for (const Dim& d : t.dims) dims.push_back(d.fixed() ? std::to_string(d.value) : d.param.empty() ? "?" : d.param);
  return fmt::format("{}[{}]", dtype_short_name(t.dtype), fmt::join(dims, ","));
}

}  // namespace

std::map<std::string, std::string> inferred_shapes(const Model& m) {
  std::map<std::string, std::string> out;
  for (const auto& [name, type] : optimize::infer(m).types) out[name] = type_string(type);
  return out;
}

std::string graph_dot(const Graph& g, const DotOptions& o) {
  auto shape_of = [&](const std::string& v) {
    if (!o.shapes) return std::string();
    auto it = o.shapes->find(v);
    return it == o.shapes->end() ? std::string() : it->second;
  };
  std::map<std::string, std::string> producer;  // value -> dot node id
  std::set<std::string> inits;
  for (const Initializer& i : g.initializers) inits.insert(i.name);
  std::string out = dot_header(o.graph_id, "");
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    const ValueInfo& v = g.inputs[k];
    if (inits.count(v.name)) continue;
    const std::string id = fmt::format("in{}", k);
    producer[v.name] = id;
    out += fmt::format("  {} [id=\"{}\", shape=ellipse, fillcolor=\"#e8f5e9\", label=\"{}\\n{}\"];\n", id, id, dot_escape(v.name),
                       dot_escape(v.type.to_string()));
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    const std::string id = fmt::format("n{}", i);
    std::string label = dot_escape(n.domain.empty() ? n.op_type : n.domain + "." + n.op_type);
    if (!n.name.empty()) label += "\\n" + dot_escape(n.name);
    for (const std::string& in : n.inputs)
      if (inits.count(in)) {
        const Initializer* init = g.find_initializer(in);
        label += fmt::format("\\n{} {}[{}]", dot_escape(in), dtype_short_name(init->value.dtype()), fmt::join(init->value.shape(), ","));
      }
    for (const std::string& out_name : n.outputs) {
      if (out_name.empty()) continue;
      producer[out_name] = id;
      if (const std::string s = shape_of(out_name); !s.empty()) label += "\\n-> " + dot_escape(s);
    }
    if (auto it = o.note.find(i); it != o.note.end()) label += "\\n" + dot_escape(it->second);
    const auto fill = o.fill.find(i);
    out += fmt::format("  {} [id=\"{}\", label=\"{}\"{}];\n", id, id, label,
                       fill == o.fill.end() ? "" : fmt::format(", fillcolor=\"{}\"", fill->second));
  }
  for (size_t k = 0; k < g.outputs.size(); ++k)
    out += fmt::format("  out{} [id=\"out{}\", shape=ellipse, fillcolor=\"#fff3e0\", label=\"{}\\n{}\"];\n", k, k,
                       dot_escape(g.outputs[k].name), dot_escape(g.outputs[k].type.to_string()));
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    std::set<std::string> seen;
    for (const std::string& in : g.nodes[i].inputs)
      if (auto it = producer.find(in); it != producer.end() && seen.insert(it->second).second)
        out += fmt::format("  {} -> n{};\n", it->second, i);
  }
  for (size_t k = 0; k < g.outputs.size(); ++k)
    if (auto it = producer.find(g.outputs[k].name); it != producer.end()) out += fmt::format("  {} -> out{};\n", it->second, k);
  return out + "}\n";
}

std::string render_svg(const std::string& dot_text) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / fmt::format("refeval_dot_{}", getpid());
  fs::create_directories(dir);
  const fs::path in = dir / "graph.dot", out = dir / "graph.svg";
  std::ofstream(in) << dot_text;
  const std::string a0 = "dot", a1 = "-Tsvg", a2 = in.string(), a3 = "-o", a4 = out.string();
  char* argv[] = {const_cast<char*>(a0.c_str()), const_cast<char*>(a1.c_str()), const_cast<char*>(a2.c_str()),
                  const_cast<char*>(a3.c_str()), const_cast<char*>(a4.c_str()), nullptr};
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, "dot", nullptr, nullptr, argv, environ);
  int status = 0;
  if (spawned == 0) waitpid(pid, &status, 0);
  std::stringstream svg;
  svg << std::ifstream(out).rdbuf();
  fs::remove_all(dir);
  if (spawned != 0) fail_input("Graphviz's dot was not found: install graphviz (scripts/install-deps.sh does)");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || svg.str().empty()) fail_input("Graphviz's dot failed to lay out the graph");
  return svg.str();
}

}  // namespace refeval::show
