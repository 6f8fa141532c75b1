// A graph as Graphviz DOT, top to bottom: one box per node labelled with its op type, name and
// output shapes, initializers folded into their consumer's label, graph inputs and outputs as
// ellipses. Node ids are "n<index>" so a viewer can find them in the SVG Graphviz writes.
#pragma once

#include <map>
#include <string>

#include "refeval/ir.h"

namespace refeval::show {

struct DotOptions {
  const std::map<std::string, std::string>* shapes = nullptr;  // value name -> "float[batch,seq,768]"
  std::map<size_t, std::string> fill;                          // node index -> fill colour (heat, diff)
  std::map<size_t, std::string> note;                          // node index -> an extra label line ("12.3% 1.2 ms")
  std::string graph_id = "g";
};

std::string graph_dot(const Graph& g, const DotOptions& options);

// Value name -> type text for every value ONNX shape inference types ("float[batch,seq,768]").
std::map<std::string, std::string> inferred_shapes(const Model& m);

// Graphviz's `dot` laying out `dot_text` as SVG; ErrorKind::Input when Graphviz is missing or fails.
std::string render_svg(const std::string& dot_text);
// A string inside a DOT double-quoted ID: `"` and `\` escaped.
std::string dot_escape(const std::string& s);
// "digraph NAME {" with the house style of nodes and edges; `edge_font` adds to the edge attributes
// (e.g. ", fontname=\"Helvetica\", fontsize=8" for labelled edges).
std::string dot_header(const std::string& graph_name, const std::string& edge_font);

}  // namespace refeval::show
