// `refeval show --format html`: one self-contained page (no script, style or font from the
// network) that stays usable on LLM graphs of tens of thousands of nodes, the way Google's Model
// Explorer does it: nodes are grouped by their name scopes (scopes.h), groups start collapsed
// (a "trunk" group holding most of the graph is opened), and each group is laid out in the page
// by dagre (embedded at build time from Debian's node-dagre-layout) only when opened: its direct
// children, collapsed subgroups as boxes, edges lifted to the two outermost visible boxes, values
// entering or leaving an opened group as small ports on its top and bottom. The
// graph travels as compact arrays (integer ids for ops, values, groups); the SVG is drawn by the
// script. Graphviz lays out whole graphs for --format dot|svg only: on a 12-layer Llama (3159
// nodes) it was still running after 2 minutes; dagre lays out that model's top level in 25 ms and
// a layer in 20 ms in Chromium.
// The page has pan (drag), zoom (wheel), fit, search by node name or op type (a hit inside a
// collapsed group opens its ancestors; Enter jumps to the next), a panel with the clicked node's
// op, attributes, inputs and outputs (types and shapes), initializer statistics and notes, the
// op-type counts, repeated blocks ("layers.1–11: 11 identical blocks", a badge on each), and the
// bodies of If/Loop/Scan and model-local functions in the same viewer below the graph.
// Overlays: a profile colours nodes by their share of time and groups by the sum of theirs (with
// the costliest node); an accuracy report (`refeval accuracy --json`) colours nodes by their
// local RMS error and groups by their worst node; a second model is shown side by side with
// removed, added and changed nodes coloured, counts per group, and fused nodes linked to the
// nodes they replaced. URL hash commands (for links and headless tests), joined by '&':
// `#select=NODE` (name or n<index>), `#search=TEXT`, `#expand=GROUP_PATH` (or a unique suffix;
// the time taken goes to body[data-expand-ms]); body[data-load-ms] is set when the script ends.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dot_format.h"
#include "refeval/ir.h"

namespace refeval::show {

// Time per node name from a profile, as `refeval report --by node` computes it; or, with
// `memory` (`show --heat memory`), the live MiB while each node runs in the profile's run with the
// highest peak (`refeval report --by memory`), total_ms then being that peak.
struct NodeTimes {
  std::map<std::string, double> ms;  // node name -> total ms over the profile's runs (or live MiB)
  double total_ms = 0;
  std::string source;
  bool memory = false;
};
NodeTimes node_times(const std::string& profile_path);
NodeTimes node_memory(const std::string& profile_path);

// Local and accumulated RMS error per node name, from `refeval accuracy --json`.
struct NodeErrors {
  struct Entry {
    double local_rms = -1;  // the largest over the node's outputs; -1 when not computed
    std::string text;       // one line per output for the panel
  };
  std::map<std::string, Entry> nodes;
  std::string source;
};
NodeErrors node_errors(const std::string& accuracy_json_path);

// Colours the timed nodes of `g` by their share of time (white to red) and notes "12.3% 1.234 ms"
// in their labels (with memory: by their live bytes against the peak, "3.20 MiB live"); returns (ms, node index) pairs, the costliest first. A node without a name
// is the profile's "<OpType>_<index>", as ORT and refeval name it.
std::vector<std::pair<double, size_t>> add_heat(const Graph& g, const NodeTimes& times, DotOptions& dot);

std::string html_view(const Model& model, const std::map<std::string, std::string>& shapes, const NodeTimes* times,
                      const NodeErrors* errors = nullptr);
std::string html_diff(const Model& before, const std::map<std::string, std::string>& before_shapes, const Model& after,
                      const std::map<std::string, std::string>& after_shapes);

// The dagre layout library (MIT), embedded at build time.
extern const char* const kDagreJs;
// The page's own script and styles (tools/show/viewer.js, viewer.css), embedded at build time.
extern const char* const kViewerJs;
extern const char* const kViewerCss;

}  // namespace refeval::show
