// Helpers shared by TreeEnsemble, TreeEnsembleClassifier and TreeEnsembleRegressor: numeric list
// attributes given either as floats or (from opset 3 of ai.onnx.ml) as a tensor, and the
// aggregate functions.
#pragma once

#include <limits>

#include "ml_common.h"

namespace refeval::ops {

// A tensor's elements as doubles (float, double, float16 and the integer types).
inline std::vector<double> tensor_to_doubles(const Tensor& t) {
  std::vector<double> v(size_t(t.size()));
  visit<Concat<Floats, Ints>>(t.dtype(), [&]<class T>() {
    for (int64_t i = 0; i < t.size(); ++i) v[i] = double(compute_t<T>(t.data<T>()[i]));
  });
  return v;
}

// `name` (floats) or, when the op version has it, `name`_as_tensor; at most one may be set.
inline std::vector<double> floats_or_tensor(const NodeContext& ctx, const std::string& name, bool tensor_form) {
  auto f = ctx.optional_attr<std::vector<float>>(name);
  std::optional<Tensor> t;
  if (tensor_form) t = ctx.optional_attr<Tensor>(name + "_as_tensor");
  if (f && t) ctx.fail("only one of " + name + " and " + name + "_as_tensor may be set");
  if (t) return tensor_to_doubles(*t);
  if (f) return std::vector<double>(f->begin(), f->end());
  return {};
}

enum class Aggregate { Average, Sum, Min, Max };

// Folds leaf weights into per-target accumulators.
struct Accumulator {
  Aggregate fn;
  std::vector<double> v;
  // MIN and MAX start from +-`largest`, the largest finite value of the output type.
  Accumulator(Aggregate f, int64_t n, double largest = std::numeric_limits<float>::max())
      : fn(f), v(size_t(n), f == Aggregate::Min ? largest : f == Aggregate::Max ? -largest : 0.0) {}
  void add(int64_t target, double w) {
    if (target < 0 || target >= int64_t(v.size())) fail_runtime(fmt::format("target id {} is out of range", target));
    double& a = v[size_t(target)];
    a = fn == Aggregate::Min ? std::min(a, w) : fn == Aggregate::Max ? std::max(a, w) : a + w;
  }
};

}  // namespace refeval::ops
