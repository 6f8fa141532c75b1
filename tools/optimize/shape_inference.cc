#include "shape_inference.h"

#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <spdlog/spdlog.h>

#include "refeval/model_io.h"

namespace refeval::optimize {
namespace {

constexpr int64_t kKeptInitializerElements = 64;  // small ones stay: shape constants propagate

std::vector<Dim> dims_of(const onnx::TensorShapeProto& s) {
  std::vector<Dim> out;
  for (const auto& d : s.dim()) {
    Dim dim;
    if (d.has_dim_value()) dim.value = d.dim_value();
    else if (d.has_dim_param()) dim.param = d.dim_param();
    out.push_back(dim);
  }
  return out;
}

}  // namespace

Inference infer(const Model& model) {
  Model light = model;
  light.functions.clear();
  std::vector<Initializer> kept;
  for (const Initializer& init : light.graph.initializers) {
    if (init.value.size() <= kKeptInitializerElements) {
      kept.push_back(init);
      continue;
    }
    std::vector<Dim> dims;
    for (int64_t d : init.value.shape()) dims.push_back(Dim{d, ""});
    light.graph.inputs.push_back({init.name, ValueType::tensor(init.value.dtype(), dims)});
  }
  light.graph.initializers = kept;
  light.graph.value_info.clear();  // inferred afresh: an earlier pass may have changed a value

  onnx::ModelProto proto;
  Inference out;
  if (!proto.ParseFromString(serialize_model(light))) return out;
  std::unordered_map<std::string, onnx::TensorShapeProto> shape_data;
  try {
    onnx::shape_inference::InferShapes(proto, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(/*check_type=*/false, /*error_mode=*/0, /*data_prop=*/true),
                                       &shape_data);
  } catch (const std::exception& e) {
    spdlog::debug("shape inference stopped: {}", e.what());
  }
  const Model inferred = parse_model(proto.SerializeAsString(), model.base_dir, "inferred model");
  for (const auto* list : {&inferred.graph.inputs, &inferred.graph.value_info, &inferred.graph.outputs})
    for (const ValueInfo& v : *list)
      if (v.type.kind != ValueType::Kind::Unknown) out.types[v.name] = v.type;
  for (const Initializer& init : model.graph.initializers) {
    std::vector<Dim> dims;
    for (int64_t d : init.value.shape()) dims.push_back(Dim{d, ""});
    out.types[init.name] = ValueType::tensor(init.value.dtype(), dims);
  }
  for (const auto& [name, shape] : shape_data) out.shape_data[name] = dims_of(shape);
  return out;
}

}  // namespace refeval::optimize
