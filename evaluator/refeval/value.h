// Value: what flows along a graph edge. A tensor, a sequence, a map, an optional, or Absent (an
// omitted optional input, written as an empty name in the node).
#pragma once

#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "refeval/tensor.h"

namespace refeval {

struct ValueType;
class Value;

struct Absent {};

struct Sequence {
  DType elem_dtype = DType::Undefined;  // element type of tensor items; kept for empty sequences
  std::vector<Value> items;
};

// ONNX maps as ai.onnx.ml uses them: scalar keys (int64 or string) to scalar values, kept as two
// 1-D tensors of equal length in insertion order.
struct Map {
  Tensor keys;
  Tensor values;
};

struct Optional {
  std::shared_ptr<const Value> value;  // null: an empty optional
  std::shared_ptr<const ValueType> type;  // declared element type, needed to write an empty one
  bool has_value() const { return value != nullptr; }
};

class Value {
 public:
  Value() = default;  // Absent
  Value(Tensor t) : v_(std::move(t)) {}
  Value(Sequence s) : v_(std::move(s)) {}
  Value(Map m) : v_(std::move(m)) {}
  Value(Optional o) : v_(std::move(o)) {}

  bool is_absent() const { return std::holds_alternative<Absent>(v_); }
  bool is_tensor() const { return std::holds_alternative<Tensor>(v_); }
  bool is_sequence() const { return std::holds_alternative<Sequence>(v_); }
  bool is_map() const { return std::holds_alternative<Map>(v_); }
  bool is_optional() const { return std::holds_alternative<Optional>(v_); }

  // Checked accessors: throw an Error naming the kind found.
  const Tensor& tensor() const;
  const Sequence& sequence() const;
  const Map& map() const;
  const Optional& optional() const;

  std::string kind_name() const;  // "tensor", "sequence", "map", "optional", "absent"

 private:
  std::variant<Absent, Tensor, Sequence, Map, Optional> v_;
};

using Values = std::vector<Value>;

}  // namespace refeval
