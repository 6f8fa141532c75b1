// The NaN/Inf finder (`refeval run --check-finite`): an observer that stops the run at the first
// value holding NaN or Inf: an initializer or input before any node runs, else a node's output,
// in bodies too.
//
//   refeval::FiniteCheckObserver check;
//   ev.add_observer(&check);
//   try { ev.run({}, feeds); } catch (const refeval::NonFiniteFound&) { report(*check.finding()); }
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "refeval/observer.h"
#include "refeval/stats.h"

namespace refeval {

struct NonFinite {
  enum class Source { Initializer, Input, Node };
  Source source = Source::Node;
  std::string value;    // the value's name; "NAME[k]" for item k of a sequence
  Tensor tensor;        // the tensor holding NaN or Inf
  TensorStats stats;    // of `tensor`, with its first non-finite flat positions
  // For a node's output:
  std::string node_id;  // qualified id (CLI.md node addressing)
  const Node* node = nullptr;  // valid while the evaluator lives
  std::vector<std::string> bodies;  // enclosing body runs, outermost first: "Loop 'L': body iteration 2"
  NamedValues inputs;   // the node's inputs (an omitted optional input is absent)
};

// Thrown out of ReferenceEvaluator::run when the check stops the run. It is not a
// std::exception, so nothing on the way (the engine's error wrapping, bodies) turns it into an
// evaluation error; the details are in FiniteCheckObserver::finding().
struct NonFiniteFound {};

class FiniteCheckObserver : public Observer {
 public:
  // `positions`: how many first non-finite positions to keep.
  explicit FiniteCheckObserver(size_t positions = 5) : positions_(positions) {}
  void graph_begin(const GraphEvent& e) override;
  void graph_end(const GraphEvent& e) override;
  void after_node(const NodeEvent& e, Values& outputs) override;
  const std::optional<NonFinite>& finding() const { return finding_; }
  int64_t values_checked() const { return checked_; }

 private:
  // Records `v` as the finding and throws if it holds NaN or Inf.
  void check(const std::string& name, const Value& v, NonFinite::Source source, const NodeEvent* node);
  size_t positions_;
  std::vector<std::string> bodies_;
  std::optional<NonFinite> finding_;
  int64_t checked_ = 0;
};

// The finding as text, one fact per line: where, the offending value's statistics and first
// positions (multi-indices), then each input of the node.
std::string format_finding(const NonFinite& f);
// "float32:(2, 3) min -1.0 max 2.5 mean 0.25, 1 NaN, 0 Inf": statistics over finite elements.
std::string format_stats(const Value& v);

}  // namespace refeval
