// Private to the evaluator library: conversions between the ONNX protobuf classes and refeval's
// own types. Only .cc files include this, so protobuf headers stay out of the public API.
#pragma once

#include <onnx/onnx-data_pb.h>
#include <onnx/onnx_pb.h>

#include "refeval/ir.h"
#include "refeval/value.h"

namespace refeval::proto {

// `base_dir` resolves external data; `what` names the tensor in messages. Consumes raw_data
// (moves it out of `p`) so a large model's weights are held once, not twice.
Tensor to_tensor(onnx::TensorProto& p, const std::string& base_dir, const std::string& what);
Tensor sparse_to_dense(onnx::SparseTensorProto& p, const std::string& base_dir, const std::string& what);
void from_tensor(const Tensor& t, onnx::TensorProto* p);

ValueType to_value_type(const onnx::TypeProto& p);
void from_value_type(const ValueType& t, onnx::TypeProto* p);

Value to_value(onnx::SequenceProto& p, const std::string& what);
Value to_value(onnx::OptionalProto& p, const std::string& what);
Value to_value(onnx::MapProto& p, const std::string& what);
void from_value(const Value& v, onnx::SequenceProto* p);
void from_value(const Value& v, onnx::OptionalProto* p);
void from_value(const Value& v, onnx::MapProto* p);

Graph to_graph(onnx::GraphProto& p, const std::string& base_dir);
void from_graph(const Graph& g, onnx::GraphProto* p);
Node to_node(onnx::NodeProto& p, const std::string& base_dir);
void from_node(const Node& n, onnx::NodeProto* p);
Function to_function(onnx::FunctionProto& p, const std::string& base_dir);
void from_function(const Function& f, onnx::FunctionProto* p);
Model to_model(onnx::ModelProto& p, const std::string& base_dir);
void from_model(const Model& m, onnx::ModelProto* p);

}  // namespace refeval::proto
