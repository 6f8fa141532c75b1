// Private to the evaluator library: conversions between the ONNX protobuf classes and refeval's
// own types. Only .cc files include this, so protobuf headers stay out of the public API.
#pragma once

#include <optional>
#include <vector>

#include <onnx/onnx-data_pb.h>
#include <onnx/onnx_pb.h>

#include "refeval/file_backed.h"
#include "refeval/ir.h"
#include "refeval/value.h"

namespace refeval::proto {

// Where a tensor's raw_data lies in the model file the proto was parsed from.
struct FileRange {
  std::shared_ptr<MappedFile> file;
  int64_t offset = 0, length = 0;
};

// `base_dir` resolves external data; `what` names the tensor in messages. Consumes raw_data
// (moves it out of `p`) so a large model's weights are held once, not twice. A large tensor of
// plain elements in external data, or in the model file at `in_file`, becomes a view of its file
// (refeval/file_backed.h) instead of a copy.
Tensor to_tensor(onnx::TensorProto& p, const std::string& base_dir, const std::string& what, const FileRange* in_file = nullptr);
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

// `raw_data` (optional): where each initializer's raw_data lies in the model file, by position.
Graph to_graph(onnx::GraphProto& p, const std::string& base_dir, const std::vector<std::optional<FileRange>>* raw_data = nullptr);
void from_graph(const Graph& g, onnx::GraphProto* p);
Node to_node(onnx::NodeProto& p, const std::string& base_dir);
void from_node(const Node& n, onnx::NodeProto* p);
Function to_function(onnx::FunctionProto& p, const std::string& base_dir);
void from_function(const Function& f, onnx::FunctionProto* p);
Model to_model(onnx::ModelProto& p, const std::string& base_dir, const std::vector<std::optional<FileRange>>* raw_data = nullptr);
void from_model(const Model& m, onnx::ModelProto* p);

}  // namespace refeval::proto
