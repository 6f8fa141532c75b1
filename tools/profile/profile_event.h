// One event of an ONNX Runtime profile (ort-profiling-and-fusions.md §A): the Chrome-trace
// "complete event" ORT writes for sessions, runs and kernels, as refeval writes and reads it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace refeval::profile {

enum class EventKind {
  Session,  // cat "Session": model_loading_*, session_initialization, model_run, executor spans
  Kernel,   // cat "Node", name "<node>_kernel_time": the operator's compute
  Fence,    // cat "Node", name "<node>_fence_before" / "_fence_after" (ORT before 1.20)
  Counter,  // "ph": "C", a counter track's sample (refeval's "Memory": args are the series' values)
  Other,    // GPU "Kernel" and "Api" events, anything unknown: kept, not aggregated
};

// One tensor of input_type_shape / output_type_shape: {"float": [1, 9, 768]}.
struct TypeShape {
  std::string type;
  std::vector<int64_t> shape;
  bool operator==(const TypeShape&) const = default;
};

struct Event {
  std::string cat, name;
  int64_t pid = 0, tid = 0;
  int64_t ts = 0, dur = 0;  // microseconds; ts relative to the start of profiling
  EventKind kind = EventKind::Other;
  // Node events: the node name (the event name without its suffix), args.op_name (the operator
  // type), args.provider ("" for fences), args.node_index (or the older graph_index).
  std::string node, op_type, provider;
  std::optional<int64_t> node_index;
  std::vector<TypeShape> inputs, outputs;
  int64_t activation_size = 0, parameter_size = 0, output_size = 0;  // bytes
  nlohmann::ordered_json extra_args = nlohmann::ordered_json::object();  // args kept as they were read
};

// "float[1x9x768]+int64[]": a call's shapes in one short string for tables.
std::string shapes_to_string(const std::vector<TypeShape>& shapes);

}  // namespace refeval::profile
