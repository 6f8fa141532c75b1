// Helpers of the loss family: the negative log-likelihood of per-class log-probabilities, shared
// by NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (which feeds it a log-softmax).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "../nn/nn_common.h"
#include "refeval/dispatch.h"
#include "refeval/op_run.h"
#include "refeval/tensor.h"

namespace refeval::ops {

struct LossAttrs {
  std::optional<int64_t> ignore_index;
  std::string reduction = "mean";

  explicit LossAttrs(const NodeContext& ctx)
      : ignore_index(ctx.optional_attr<int64_t>("ignore_index")), reduction(ctx.attr<std::string>("reduction", "mean")) {
    if (reduction != "none" && reduction != "sum" && reduction != "mean")
      ctx.fail("reduction must be none, sum or mean, got " + reduction);
  }
};

// x: log-probabilities of shape (N, C, d1, ..., dk) as doubles; target of shape (N, d1, ..., dk).
// loss[n, d] = -x[n, target[n, d], d] * weight[target[n, d]], 0 where target == ignore_index;
// mean divides the sum by the sum of the weights used.
inline Tensor nll_loss(DType dtype, const Shape& x_shape, const std::vector<double>& x, const Tensor& target,
                       const std::optional<std::vector<double>>& weight, const LossAttrs& a) {
  if (x_shape.size() < 2) fail_runtime("input must have at least 2 dimensions (N, C)");
  const int64_t n = x_shape[0], c = x_shape[1];
  int64_t inner = 1;
  for (size_t d = 2; d < x_shape.size(); ++d) inner *= x_shape[d];
  Shape t_shape{n};
  t_shape.insert(t_shape.end(), x_shape.begin() + 2, x_shape.end());
  if (target.shape() != t_shape)
    fail_runtime(fmt::format("target shape {} does not match {}", shape_to_string(target.shape()), shape_to_string(t_shape)));
  if (weight && int64_t(weight->size()) != c) fail_runtime(fmt::format("weight must have {} values", c));
  const std::vector<int64_t> t = visit<TypeList<int32_t, int64_t>>(target.dtype(), [&]<class I>() {
    const I* p = target.data<I>();
    return std::vector<int64_t>(p, p + target.size());
  });
  std::vector<double> loss(t.size());
  double total = 0, weight_sum = 0;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < inner; ++i) {
      const size_t k = size_t(b * inner + i);
      const int64_t cls = t[k];
      if (a.ignore_index && cls == *a.ignore_index) continue;
      if (cls < 0 || cls >= c) fail_runtime(fmt::format("target {} is out of range [0, {})", cls, c));
      const double w = weight ? (*weight)[size_t(cls)] : 1.0;
      loss[k] = -x[size_t((b * c + cls) * inner + i)] * w;
      total += loss[k];
      weight_sum += w;
    }
  if (a.reduction == "none") return from_doubles(dtype, t_shape, loss);
  return from_doubles(dtype, {}, {a.reduction == "sum" ? total : total / weight_sum});
}

}  // namespace refeval::ops
