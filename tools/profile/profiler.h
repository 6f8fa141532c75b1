// The profiler: an observer (DESIGN.md) that times every node of every run, bodies of
// If/Loop/Scan and function calls included, and records ONNX Runtime's events for them
// (ort-profiling-and-fusions.md §A): Session spans the caller marks (model loading, session
// initialization, one model_run per run) and a "<node>_kernel_time" Node event per node call
// with op_name, provider "refeval", node_index, input/output types and shapes and byte sizes.
//
//   Profiler p;
//   ev.add_observer(&p);
//   p.begin_run(); ev.run({}, feeds); p.end_run();
//   write_profile("profile.json", p.events());
//
// Times are integer microseconds from the profiler's creation, start and end both rounded down,
// so every node event lies inside the model_run that contains it. While the model runs, a node
// costs two clock reads and a compact record in a few growing arrays: building events with their
// strings then would scatter small allocations between the tensors' and fragment the heap (it
// made GPT-2 runs 1.6x slower). events() builds them afterwards, from the nodes the records
// point to, so it must be called while the evaluator that ran them is alive.
#pragma once

#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "memory.h"
#include "profile_event.h"
#include "refeval/memory_stats.h"
#include "refeval/observer.h"

namespace refeval::profile {

inline constexpr const char* kProvider = "refeval";

class Profiler : public Observer {
 public:
  using Clock = std::chrono::steady_clock;
  explicit Profiler(Clock::time_point origin = Clock::now());

  // A Session event for work done outside a run (loading, planning).
  void add_session_event(const std::string& name, Clock::time_point start, Clock::time_point end);
  void begin_run();
  // `args` go into the model_run event's args (refeval generate tags each run with its phase and step).
  void end_run(const nlohmann::ordered_json& args = nlohmann::ordered_json::object());

  // `refeval profile --memory`: events() then also gives each main-graph node's live activation
  // bytes (args.live_bytes), a "Memory" counter track and the run's peak (model_run args.memory;
  // memory.h says what counts). Costs a few vector appends per node while the model runs.
  void record_memory() { memory_ = true; }

  std::vector<Event> events() const;

  void graph_begin(const GraphEvent& e) override;
  void graph_end(const GraphEvent& e) override;
  void before_node(const NodeEvent& e) override;
  void after_node(const NodeEvent& e, Values& outputs) override;
  // A run as it runs unobserved: a weight's Transpose that a MatMul packs from the weight itself
  // is not made, so neither its time nor its memory appears (it would only once, folded).
  bool sees_every_node() const override { return false; }

 private:
  struct TensorRecord {
    DType dtype;
    uint32_t rank;  // its dims follow in dims_
  };
  struct NodeRecord {
    const Node* node;
    const std::string* id;  // the plan's qualified id
    int depth, index;
    int64_t start, end;
    size_t first_tensor, first_dim;  // where its tensors start in tensors_, their dims in dims_
    uint32_t inputs, outputs;        // how many tensors: the inputs', then the outputs'
    int64_t activation_size, parameter_size, output_size;
    int run;                              // begin_run's count, from 0
    size_t first_write, writes;           // with record_memory: its outputs' bytes in writes_
  };
  struct RunMemory {  // with record_memory, per run
    NamedBytes feeds;
    std::vector<std::string> outputs;
    int64_t weights_bytes = 0;
    AllocatorStats allocator;  // at the run's end
  };
  void add_memory_events(std::vector<Event>& out, const std::vector<size_t>& event_of) const;
  int64_t micros(Clock::time_point t) const;
  void add_tensor(const Tensor& t);

  Clock::time_point origin_;
  int64_t pid_, tid_;
  std::vector<Event> session_events_;
  std::vector<NodeRecord> nodes_;
  std::vector<TensorRecord> tensors_;
  std::vector<int64_t> dims_;
  std::vector<std::set<std::string>> constants_;  // initializer names of each open graph
  std::vector<Clock::time_point> starts_;         // of the nodes running, innermost last
  Clock::time_point run_start_;
  bool memory_ = false;
  int run_ = -1;
  std::vector<size_t> run_events_;  // each run's model_run in session_events_
  std::vector<RunMemory> run_memory_;
  std::vector<int64_t> writes_;
};

}  // namespace refeval::profile
