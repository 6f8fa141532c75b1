// Private to the evaluator library: a serialized ModelProto read at the level of protobuf's wire
// format, so that a large model's weights need not be parsed (copied) by protobuf at all.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace refeval::wire {

// Where one initializer's bytes lie in the serialized model.
struct ByteRange {
  int64_t offset = 0, length = 0;
};

// The model with the raw_data (TensorProto field 9) of every initializer of the main graph
// (ModelProto.graph = 7, GraphProto.initializer = 5) of at least `min_bytes` cut out, and where
// each cut raw_data lies, by the initializer's position (none: left in place, or not large). Only
// the lengths of the enclosing graph and tensors change; every other byte is copied as it is. A
// tensor keeps all its raw_data fields when the last one (the one protobuf reads) is small, and
// loses all of them when it is large. Empty when the bytes are not laid out plainly (not one graph
// field, groups, a length past the end): the caller then parses the model as it is.
struct Stripped {
  std::string model;
  std::vector<std::optional<ByteRange>> raw_data;
};
std::optional<Stripped> strip_initializer_bytes(const uint8_t* data, size_t size, size_t min_bytes);

}  // namespace refeval::wire
