// `refeval show --format html`: one self-contained page (no script, style or font from the
// network). The graph is laid out by Graphviz (dot_format.h) and embedded as SVG; a small inline
// script adds pan (drag) and zoom (wheel), search by node name or op type, and a panel with the
// clicked node's attributes, inputs and outputs (types and shapes) and initializer statistics.
// Bodies of If/Loop/Scan and model-local functions are laid out too and expand below the graph.
// With a profile, nodes are coloured by their share of time and the costliest are listed; with a
// second model, both are shown side by side with removed, added and changed nodes marked, fused
// nodes linked to the nodes they replaced where names allow, and op-type counts of both sides.
// `#select=NODE` in the URL opens a node's panel on load (for links and for tests).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dot_format.h"
#include "refeval/ir.h"

namespace refeval::show {

// Time per node name from a profile, as `refeval report --by node` computes it.
struct NodeTimes {
  std::map<std::string, double> ms;  // node name -> total ms over the profile's runs
  double total_ms = 0;
  std::string source;
};
NodeTimes node_times(const std::string& profile_path);

// Colours the timed nodes of `g` by their share of time (white to red) and notes "12.3% 1.234 ms"
// in their labels; returns (ms, node index) pairs, the costliest first. A node without a name
// is the profile's "<OpType>_<index>", as ORT and refeval name it.
std::vector<std::pair<double, size_t>> add_heat(const Graph& g, const NodeTimes& times, DotOptions& dot);

std::string html_view(const Model& model, const std::map<std::string, std::string>& shapes, const NodeTimes* times);
std::string html_diff(const Model& before, const std::map<std::string, std::string>& before_shapes, const Model& after,
                      const std::map<std::string, std::string>& after_shapes);

}  // namespace refeval::show
