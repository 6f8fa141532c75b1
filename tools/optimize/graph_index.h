// Who produces and who consumes each value of a graph, which values are constants, and their
// inferred types: what every rewrite asks about the graph. Built once per pass (cheap: one walk).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "refeval/ir.h"

namespace refeval::optimize {

// What ONNX shape inference (shape_inference.h) says about the values of a graph.
struct Inference {
  std::map<std::string, ValueType> types;               // value name -> inferred type
  std::map<std::string, std::vector<Dim>> shape_data;   // values computed from shapes (Shape, Gather,
                                                        // Concat...) -> their elements as dims
  std::map<std::string, std::string> aliases;           // a symbol ONNX named ("total_sequence") -> the
                                                        // polynomial it equals ("past_sequence + sequence")
};

class GraphIndex {
 public:
  GraphIndex(const Graph& g, const Inference* inference = nullptr);

  const Graph& graph() const { return g_; }
  const Inference* inference() const { return inference_; }
  // The index of the node producing `value`, -1 for graph inputs, initializers and unknown names.
  int producer(const std::string& value) const;
  // That node itself, or null.
  const Node* producer_node(const std::string& value) const;
  // Indices of the nodes reading `value`, in graph order (a node reading it twice appears once).
  const std::vector<int>& consumers(const std::string& value) const;
  bool is_graph_output(const std::string& value) const { return outputs_.count(value) > 0; }
  // Read by another node or a graph output.
  bool is_used(const std::string& value) const { return is_graph_output(value) || !consumers(value).empty(); }

  // The value of an initializer no feed can replace, or of a Constant node; null otherwise.
  const Tensor* constant(const std::string& value) const;
  // A constant with one element, as a double (floating or integer); nullopt otherwise.
  std::optional<double> scalar(const std::string& value) const;
  // A constant's values as int64 (an integer tensor), nullopt otherwise.
  std::optional<std::vector<int64_t>> ints(const std::string& value) const;

  // The inferred type (a constant's own type first), or null when nothing is known about it.
  const ValueType* type(const std::string& value) const;
  // Rank and dims when the type has a shape.
  const std::vector<Dim>* dims(const std::string& value) const;
  // The elements of a shape-valued tensor (data propagation), null when unknown.
  const std::vector<Dim>* shape_data(const std::string& value) const;
  // The elements of a shape value (a Reshape target, Slice bounds): a constant's integers, else
  // the propagated shape data; nullopt when neither is known. (A constant -1 reads as an unknown
  // Dim: callers that need it read ints().)
  std::optional<std::vector<Dim>> shape_values(const std::string& value) const;

 private:
  const Graph& g_;
  const Inference* inference_;
  std::map<std::string, int> producer_;
  std::map<std::string, std::vector<int>> consumers_;
  std::set<std::string> outputs_;
  std::map<std::string, const Tensor*> constants_;
  std::map<std::string, Tensor> constant_nodes_;  // Constant nodes' values, made once
  mutable std::map<std::string, ValueType> constant_types_;
};

// A one-element floating or integer tensor's value as a double (a ConstantOfShape's `value`); nullopt otherwise.
std::optional<double> scalar_of(const Tensor& t);

// Two dims known equal: the same fixed size, or the same symbol.
bool same_dim(const Dim& a, const Dim& b);
bool same_shape(const std::vector<Dim>& a, const std::vector<Dim>& b);

}  // namespace refeval::optimize
