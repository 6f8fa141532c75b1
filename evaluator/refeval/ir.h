// The in-memory model: what a loaded ModelProto becomes. Plain structs, free of protobuf, so ops,
// tools and users never include protobuf headers. model_io.h converts to and from the protos.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "refeval/tensor.h"

namespace refeval {

struct Graph;

// A dimension of a declared shape: a fixed size, a symbol ("batch"), or unknown.
struct Dim {
  int64_t value = -1;  // >= 0 when fixed
  std::string param;   // symbol name when symbolic
  bool fixed() const { return value >= 0; }
};

// A declared type (TypeProto): tensor, sequence, map, optional or sparse tensor.
struct ValueType {
  enum class Kind { Unknown, Tensor, Sequence, Map, Optional, SparseTensor };
  Kind kind = Kind::Unknown;
  DType dtype = DType::Undefined;      // tensor / sparse element type, map value element type
  bool has_shape = false;              // false: rank unknown
  std::vector<Dim> dims;
  DType key_dtype = DType::Undefined;  // map key
  std::shared_ptr<ValueType> elem;     // sequence / optional element, map value

  static ValueType tensor(DType dtype, std::vector<Dim> dims);
  static ValueType tensor_of_unknown_rank(DType dtype);
  std::string to_string() const;  // "tensor(float)[2,N]", "seq(tensor(int64))"
};

struct ValueInfo {
  std::string name;
  ValueType type;
};

enum class AttrType {
  Undefined = 0, Float = 1, Int = 2, String = 3, Tensor = 4, Graph = 5, SparseTensor = 11,
  TypeProto = 13, Floats = 6, Ints = 7, Strings = 8, Tensors = 9, Graphs = 10,
  SparseTensors = 12, TypeProtos = 14,
};
std::string_view attr_type_name(AttrType t);

struct Attribute {
  std::string name;
  AttrType type = AttrType::Undefined;
  std::string ref_attr_name;  // set inside function bodies: take the caller's attribute of this name
  float f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;  // TENSOR, and SPARSE_TENSOR converted to dense
  std::shared_ptr<Graph> g;
  ValueType tp;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<Tensor> tensors;
  std::vector<std::shared_ptr<Graph>> graphs;
  std::vector<ValueType> type_protos;
};

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;  // "" for ai.onnx ("ai.onnx" is normalised to "")
  std::string overload;
  std::vector<std::string> inputs;   // "" marks an omitted optional input
  std::vector<std::string> outputs;  // "" marks an output that is not wanted
  std::vector<Attribute> attributes;

  const Attribute* find_attribute(const std::string& attr_name) const;
  std::string describe() const;  // "node 'name' (OpType)" for error messages
};

struct Initializer {
  std::string name;
  Tensor value;
};

struct Graph {
  std::string name;
  std::vector<Node> nodes;
  std::vector<ValueInfo> inputs;
  std::vector<ValueInfo> outputs;
  std::vector<ValueInfo> value_info;
  std::vector<Initializer> initializers;  // sparse initializers are stored here densified

  const Initializer* find_initializer(const std::string& n) const;
  const ValueInfo* find_input(const std::string& n) const;
  // The 2-D initializer W no feed can replace when value `n` is Transpose(W) (perm absent or
  // [1, 0]): a tied LM head reads the embedding table so. Null otherwise.
  const Initializer* transposed_initializer(const std::string& n) const;
  // Graph inputs that are not initializers: what a caller has to feed.
  std::vector<const ValueInfo*> feed_inputs() const;
};

using OpsetMap = std::map<std::string, int64_t>;  // domain -> version

// A model-local function (FunctionProto).
struct Function {
  std::string domain;
  std::string name;
  std::string overload;  // IR 10
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::vector<std::string> attribute_names;     // attributes without a default
  std::vector<Attribute> attribute_defaults;    // attribute_proto: attributes with a default (IR 9)
  std::vector<Node> nodes;
  std::vector<ValueInfo> value_info;
  OpsetMap opsets;
};

struct Model {
  int64_t ir_version = 0;
  OpsetMap opsets;
  Graph graph;
  std::vector<Function> functions;
  std::string producer_name;
  std::string producer_version;
  std::string domain;
  int64_t model_version = 0;
  std::string doc_string;
  std::vector<std::pair<std::string, std::string>> metadata;
  std::string path;      // file it was loaded from, if any
  std::string base_dir;  // folder external data is resolved against

  const Function* find_function(const std::string& domain, const std::string& name,
                                const std::string& overload = "") const;
};

// Domain names are compared after this: "ai.onnx" and "" are the same domain.
std::string normalize_domain(const std::string& domain);

}  // namespace refeval
