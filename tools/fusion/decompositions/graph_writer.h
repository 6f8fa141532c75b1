// GraphWriter: what every decomposition uses to write a fused node's meaning as plain ONNX nodes.
// The graph it produces takes the fused node's own input names and produces its own output
// names, so the same feeds drive the fused kernel and its decomposition.
//
//   GraphWriter w(node, samples);
//   std::string s = w.op("Add", {w.in(0), w.in(1)});
//   w.output(0, w.op("Relu", {s}));
//   Graph g = w.finish();
#pragma once

#include <string>
#include <vector>

#include "refeval/builder.h"
#include "refeval/ir.h"
#include "refeval/value.h"

namespace refeval::fusion {

class GraphWriter {
 public:
  // `samples`: one value per node input (absent where the input is omitted); decompositions read
  // shapes and element types from them (they stay fixed across the checked input sets).
  GraphWriter(const Node& fused, const Values& samples);

  const Node& node() const { return node_; }
  bool has(size_t i) const;                 // input i is given
  const std::string& in(size_t i) const;    // its name (a usage error if omitted)
  const Tensor& sample(size_t i) const;     // its value in the first input set
  DType dtype(size_t i = 0) const { return sample(i).dtype(); }
  bool wants(size_t i) const;               // output i is requested by the node

  // Attributes of the fused node, with the defaults of its spec.
  int64_t attr_int(const std::string& name, int64_t default_value) const;
  float attr_float(const std::string& name, float default_value) const;

  // A node with one output; returns the fresh output name.
  std::string op(const std::string& type, std::vector<std::string> inputs, std::vector<Attribute> attrs = {});
  // A node with n outputs.
  std::vector<std::string> ops(const std::string& type, std::vector<std::string> inputs, size_t n,
                               std::vector<Attribute> attrs = {});
  std::string ints(const std::vector<int64_t>& values);   // an int64 1-D constant
  std::string scalar(double value, DType dtype);          // a 0-D constant of that element type
  std::string constant(const Tensor& value);

  // Binds the node's output i to `value` (skipped when the node does not request it).
  void output(size_t i, const std::string& value);
  Graph finish();

  // A decomposition that cannot express this node: a usage error naming it and why.
  [[noreturn]] void unsupported(const std::string& why) const;

 private:
  std::string fresh(const std::string& hint);
  Node node_;
  Values samples_;
  std::vector<Node> nodes_;
  std::vector<Initializer> constants_;
  int counter_ = 0;
};

}  // namespace refeval::fusion
