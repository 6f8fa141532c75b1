// Reading and writing models and values: ONNX protobuf files (.onnx, .pb) and numpy .npy files.
#pragma once

#include <cstdint>
#include <string>

#include "refeval/ir.h"
#include "refeval/value.h"

namespace refeval {

// Loads a model file. External data is resolved against the model's folder; a location that
// would leave that folder is refused. Errors (ErrorKind::Model) name the file and what is wrong.
Model load_model(const std::string& path);
// Parses serialized ModelProto bytes. `display_name` is used in messages.
Model parse_model(const std::string& bytes, const std::string& base_dir,
                  const std::string& display_name = "<memory>");
std::string serialize_model(const Model& model);
// Writes `path`. A model whose initializers hold at least `external_above` bytes (default 64 MiB)
// keeps them in `path` + ".data" instead (ONNX external data, each tensor of 1 KB or more at a
// 64-byte aligned offset), as ONNX Runtime's tools write large models: loading maps them from
// the file instead of parsing a copy, and the protobuf's 2 GB limit does not apply. 0: never.
inline constexpr uint64_t kExternalDataAbove = uint64_t(64) << 20;
void save_model(const Model& model, const std::string& path, uint64_t external_above = kExternalDataAbove);

// A protobuf value file. The message kind (TensorProto, SequenceProto, OptionalProto, MapProto)
// is chosen from `declared` (the files carry no tag); null or unknown means TensorProto.
Value read_value_pb(const std::string& path, const ValueType* declared);
Tensor read_tensor_pb(const std::string& path);
// Writes `v` as the message its kind calls for, with `name` set.
void write_value_pb(const std::string& path, const std::string& name, const Value& v);

// numpy .npy (format versions 1-3; C or Fortran order; little or big endian).
Tensor read_npy(const std::string& path);
Tensor parse_npy(const std::string& bytes, const std::string& display_name);
void write_npy(const std::string& path, const Tensor& t);

// .pb or .npy, chosen by the file's extension.
Value read_value_file(const std::string& path, const ValueType* declared);

std::string read_file_bytes(const std::string& path);  // ErrorKind::Input if unreadable

}  // namespace refeval
