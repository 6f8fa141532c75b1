// Live activation memory of one run (`refeval profile --memory`): from the main graph's nodes in
// the order they ran, what each read and wrote, the bytes alive while each node runs.
//
// A value is alive from the node that makes it (a graph input from the start) to its last reader
// (a node that names it as an input, or whose If/Loop/Scan bodies read it from the outer scope); a
// graph output to the end of the run; a value nobody reads only while its producer runs. The
// bytes of a node are those of every value alive then, its inputs and outputs included. Weights
// (initializers) are counted apart, as are a body's own temporaries (inside its caller's time).
// Each value counts its own bytes, so a Reshape's output counts again though it may share the
// buffer of its input: this is the values' liveness, an allocator's figure would be lower.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "refeval/ir.h"

namespace refeval::profile {

using NamedBytes = std::vector<std::pair<std::string, int64_t>>;

// One main-graph node as it ran.
struct MemoryNode {
  std::string name;                // the node's event name (ORT's "<OpType>_<index>" when unnamed)
  std::string op_type;
  std::vector<std::string> reads;  // its inputs and the outer names its bodies read ("" skipped)
  NamedBytes writes;               // its outputs with their bytes ("" for an output nobody asked for)
};

struct LiveTensor {
  std::string name;
  int64_t bytes = 0;
  std::string producer, last_reader;  // node names; "(graph input)", "(graph output)", "(nobody)"
};

struct MemoryTimeline {
  std::vector<int64_t> live_bytes;  // per node, in execution order
  int64_t peak_bytes = 0;
  size_t peak_index = 0;           // the first node at the peak
  std::vector<LiveTensor> at_peak;  // alive at the peak, largest first
  // The peak if every elementwise node wrote its output into an input of the same size read for
  // the last time there (what ONNX Runtime's planner does with kernels that allow it).
  int64_t inplace_peak_bytes = 0;
};

// `feeds`: the graph inputs given, with their bytes; `outputs`: the graph outputs' names.
MemoryTimeline live_memory(const std::vector<MemoryNode>& nodes, const NamedBytes& feeds,
                           const std::vector<std::string>& outputs);

// The names a node's subgraph bodies read from enclosing scopes (If/Loop/Scan captures), nested
// bodies included.
std::set<std::string> outer_names(const Node& node);

// The run's figures as the model_run event's args.memory.
nlohmann::ordered_json memory_json(const MemoryTimeline& t, const std::vector<MemoryNode>& nodes);

}  // namespace refeval::profile
