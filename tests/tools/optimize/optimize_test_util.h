// Helpers of the optimizer tests: run passes on a small model, count operators, collect --explain's
// reasons, and check the result against the original with the evaluator on deterministic inputs.
#pragma once

#include <cmath>
#include <map>
#include <set>
#include <string>

#include "opset_convert.h"
#include "optimizer.h"
#include "refeval/builder.h"
#include "refeval/evaluator.h"
#include "shape_inference.h"
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

// The standard-ops pass alone on `m` (--target onnx's rewrite of com.microsoft operators): the
// rewritten model and the first refusal ("" when none).
inline std::pair<Model, std::string> to_standard(const Model& m) {
  const optimize::Inference inference = optimize::infer(m);
  optimize::PassContext ctx{Registry::builtin(), &inference, nullptr};
  Model out = m;
  optimize::to_standard_ops_pass().run(out, ctx);
  return {out, ctx.unconverted.empty() ? "" : ctx.unconverted.front().second};
}

// Integers as a 1-D int64 tensor: a Slice's starts, a Reshape's shape.
inline Tensor ints(std::vector<int64_t> v) { return Tensor::from_vector<int64_t>({int64_t(v.size())}, v); }

// A graph under construction, for a test's own builder to derive from: add() appends a node named
// "/Op_k" (name "-": unnamed) whose outputs are "Op_k", "Op_k_1", ...; c() adds a constant.
class GraphUnderConstruction {
 public:
  std::string add(const std::string& op, std::vector<std::string> in, std::vector<Attribute> a = {}, int outputs = 1, std::string name = "") {
    const std::string base = op + "_" + std::to_string(nodes_.size());
    std::vector<std::string> out;
    for (int k = 0; k < outputs; ++k) out.push_back(base + (k ? "_" + std::to_string(k) : ""));
    nodes_.push_back(build::node(op, std::move(in), out, std::move(a), name == "-" ? "" : name.empty() ? "/" + base : name));
    return out[0];
  }
  std::string c(Tensor t) {
    const std::string name = "c" + std::to_string(inits_.size());
    inits_.push_back({name, std::move(t)});
    return name;
  }
  std::string input(ValueInfo v) {
    inputs_.push_back(std::move(v));
    return inputs_.back().name;
  }
  void out(const std::string& v) { outputs_.push_back({v, ValueType::tensor_of_unknown_rank(DType::Float)}); }

 protected:
  std::vector<Node> nodes_;
  std::vector<Initializer> inits_;
  std::vector<ValueInfo> inputs_, outputs_;
};

// Rotary embedding's inverse frequencies over `rotated` columns: 10000^(-2i / rotated).
inline std::vector<float> rope_inv_freq(int64_t rotated) {
  std::vector<float> inv(size_t(rotated / 2));
  for (int64_t i = 0; i < rotated / 2; ++i) inv[size_t(i)] = float(1.0 / std::pow(10000.0, double(2 * i) / double(rotated)));
  return inv;
}

// cos or sin of p * inv_freq[i] for p < rows and `width` columns, inv_freq of a rotation over
// `rotated` columns (width rotated / 2: one value per pair; rotated: cat(freqs, freqs)).
inline Tensor rope_table(bool cosine, int64_t rows, int64_t width, int64_t rotated) {
  std::vector<float> v(size_t(rows * width));
  for (int64_t p = 0; p < rows; ++p)
    for (int64_t i = 0; i < width; ++i) {
      const double inv = 1.0 / std::pow(10000.0, double(2 * (i % (rotated / 2))) / double(rotated));
      v[size_t(p * width + i)] = float(cosine ? std::cos(double(p) * inv) : std::sin(double(p) * inv));
    }
  return Tensor::from_vector<float>({rows, width}, v);
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
