// Helpers of the optimizer tests: run passes on a small model, count operators, collect --explain's
// reasons, and check the result against the original with the evaluator on deterministic inputs.
#pragma once

#include <map>
#include <set>
#include <string>

#include "opset_convert.h"
#include "optimizer.h"
#include "refeval/builder.h"
#include "refeval/evaluator.h"
#include "test_util.h"
#include "verify.h"

namespace refeval::testing {

inline int count_ops(const Model& m, const std::string& op) {
  int n = 0;
  for (const Node& node : m.graph.nodes) n += node.op_type == op;
  return n;
}

// A float weight over `shape`: start, start + step, ... repeating every 23 values, so that larger
// weights stay small.
inline Tensor ramp(Shape shape, float start, float step) {
  std::vector<float> v(size_t(shape_size(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + step * float(i % 23);
  return Tensor::from_vector<float>(std::move(shape), v);
}

// Feeds for every graph input: a ramp of values in about [-2, 2] (symbolic dims as 3).
inline std::map<std::string, Value> ramp_feeds(const Model& m) {
  std::map<std::string, Value> feeds;
  for (const ValueInfo* in : m.graph.feed_inputs()) {
    Shape shape;
    for (const Dim& d : in->type.dims) shape.push_back(d.fixed() ? d.value : 3);
    const int64_t n = shape_size(shape);
    if (in->type.dtype == DType::Int64) {
      std::vector<int64_t> v(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) v[size_t(i)] = i % 5;
      feeds.emplace(in->name, Tensor::from_vector<int64_t>(shape, v));
    } else {
      std::vector<float> v(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) v[size_t(i)] = float((i * 37) % 41) / 10.0f - 2.0f;
      feeds.emplace(in->name, Tensor::from_vector<float>(shape, v));
    }
  }
  return feeds;
}

// Optimizes with only `passes` (all when empty) and checks the result equivalent to `m` on
// ramp_feeds, with the inputs named in `fed` given those values instead. Every fusion's own form
// (--forms all); what --forms cpu writes instead has its own tests.
inline Model optimized(const Model& m, std::set<std::string> passes = {}, const std::string& model_type = "", const std::string& forms = "all",
                       const std::map<std::string, Value>& fed = {}) {
  optimize::OptimizeOptions o;
  o.forms = forms;
  o.only = std::move(passes);
  o.model_type = model_type;
  Model out = optimize::optimize(m, Registry::builtin(), o).model;
  std::map<std::string, Value> feeds = ramp_feeds(m);
  for (const auto& [name, value] : fed) feeds.insert_or_assign(name, value);
  fusion::CheckOptions check;
  check.repeat = 1;
  check.tolerance.atol = 1e-5;
  const fusion::FusionReport r = optimize::verify(m, out, Registry::builtin(), feeds, check);
  CHECK_MESSAGE(r.equivalent(), "the optimized model differs from the original");
  return out;
}

// The "not fused" lines an --explain run collected, one per line.
inline std::string not_fused_lines(const optimize::Explain& explain) {
  std::string lines;
  for (const std::string& l : explain.not_fused) lines += l + "\n";
  return lines;
}

// The "not fused" lines `--explain` gives when only `passes` run on `m`, one per line.
inline std::string refusals(const Model& m, std::set<std::string> passes) {
  optimize::OptimizeOptions o;
  o.only = std::move(passes);
  o.explain = true;
  return not_fused_lines(optimize::optimize(m, Registry::builtin(), o).explain);
}

// A float value's declared type, as these tests' graphs give their inputs and outputs.
inline ValueInfo f32(const std::string& name, std::vector<build::DimSpec> dims) {
  return build::tensor_info(name, DType::Float, std::move(dims));
}

// `v`'s inferred dims as "2,seq,?" ("?" when its shape is unknown).
inline std::string dims_text(const optimize::Inference& inf, const std::string& v) {
  const auto it = inf.types.find(v);
  if (it == inf.types.end() || !it->second.has_shape) return "?";
  std::string out;
  for (const Dim& d : it->second.dims) out += (out.empty() ? "" : ",") + (d.fixed() ? std::to_string(d.value) : d.param.empty() ? "?" : d.param);
  return out;
}

// `m` raised (or lowered) to ONNX opset `to` by convert_opset; with `check`, its outputs equal the
// original's on ramp inputs.
inline Model converted(const Model& m, int64_t to, bool check = true) {
  Model out = m;
  optimize::convert_opset(out, Registry::builtin(), to);
  CHECK(out.opsets.at("") == to);
  if (check) {
    fusion::CheckOptions options;
    options.repeat = 1;
    options.tolerance.atol = 1e-6;
    CHECK(optimize::verify(m, out, Registry::builtin(), ramp_feeds(m), options).equivalent());
  }
  return out;
}

}  // namespace refeval::testing
