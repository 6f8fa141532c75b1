// The trace observer: `--verbose 2..4`, byte-identical to ONNX's Python ReferenceEvaluator for a
// graph without bodies; bodies and function calls are traced one level lower, indented.
#pragma once

#include <cstdio>

#include "refeval/observer.h"

namespace refeval {

class TraceObserver : public Observer {
 public:
  explicit TraceObserver(int level, std::FILE* out = stdout) : level_(level > 4 ? 4 : level), out_(out) {}
  void graph_begin(const GraphEvent& e) override;
  void before_node(const NodeEvent& e) override;
  void after_node(const NodeEvent& e, Values& outputs) override;

 private:
  int level_at(int depth) const { return level_ - depth; }
  void line(int depth, const std::string& text);
  int level_;
  std::FILE* out_;
};

}  // namespace refeval
