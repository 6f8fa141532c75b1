// A small builder for tests and users, in the spirit of onnx.helper:
//
//   using namespace refeval::build;
//   Graph g = graph("g", {node("Add", {"X", "Y"}, {"Z"})},
//                   {tensor_info("X", DType::Float, {2, 3}), tensor_info("Y", DType::Float, {2, 3})},
//                   {tensor_info("Z", DType::Float, {2, 3})});
//   Model m = model(g, {{"", 17}});
#pragma once

#include <string>
#include <vector>

#include "refeval/ir.h"

namespace refeval::build {

// Attribute of any kind, by the type of the value.
Attribute attr(const std::string& name, float v);
Attribute attr(const std::string& name, double v);
Attribute attr(const std::string& name, int64_t v);
Attribute attr(const std::string& name, int v);
Attribute attr(const std::string& name, const std::string& v);
Attribute attr(const std::string& name, const char* v);
Attribute attr(const std::string& name, const std::vector<float>& v);
Attribute attr(const std::string& name, const std::vector<int64_t>& v);
Attribute attr(const std::string& name, const std::vector<std::string>& v);
Attribute attr(const std::string& name, const Tensor& v);
Attribute attr(const std::string& name, const Graph& v);
// An attribute of a function body that takes the caller's attribute `ref` (ref_attr_name).
Attribute attr_ref(const std::string& name, const std::string& ref, AttrType type);

Node node(const std::string& op_type, std::vector<std::string> inputs, std::vector<std::string> outputs,
          std::vector<Attribute> attributes = {}, const std::string& name = "", const std::string& domain = "");

// A dimension list entry: a number or a symbol.
struct DimSpec : Dim {
  DimSpec(int64_t v) { value = v; }
  DimSpec(int v) { value = v; }
  DimSpec(const char* p) { param = p; }
};
ValueInfo tensor_info(const std::string& name, DType dtype, std::vector<DimSpec> dims);
ValueInfo tensor_info_unknown_rank(const std::string& name, DType dtype);
ValueInfo untyped_info(const std::string& name);

Graph graph(const std::string& name, std::vector<Node> nodes, std::vector<ValueInfo> inputs,
            std::vector<ValueInfo> outputs, std::vector<Initializer> initializers = {});
Model model(Graph g, OpsetMap opsets = {{"", 17}}, int64_t ir_version = 8, std::vector<Function> functions = {});

}  // namespace refeval::build
