// Helpers shared by the ai.onnx.ml family: reading a numeric [N, C] or [C] input as rows of
// doubles, the post transforms of the classifiers and regressors, label outputs.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "refeval/dispatch.h"
#include "refeval/op_run.h"
#include "refeval/registry.h"

namespace refeval::ops {

inline constexpr const char* kMl = "ai.onnx.ml";

// The numeric input types most ai.onnx.ml operators accept.
using MlNumeric = TypeList<float, double, int64_t, int32_t>;

// A [N, C] (or [C], read as [1, C]) numeric input, converted to double.
struct Rows {
  int64_t n = 0, c = 0;
  std::vector<double> v;
  const double* row(int64_t i) const { return v.data() + i * c; }
};

template <class List = MlNumeric>
Rows read_rows(const Tensor& x) {
  Rows r;
  if (x.rank() == 1) r = {1, x.dim(0), {}};
  else if (x.rank() == 2) r = {x.dim(0), x.dim(1), {}};
  else fail_runtime("input must be [N, C] or [C], got " + shape_to_string(x.shape()));
  r.v.resize(size_t(x.size()));
  visit<List>(x.dtype(), [&]<class T>() {
    for (int64_t i = 0; i < x.size(); ++i) r.v[i] = double(compute_t<T>(x.data<T>()[i]));
  });
  return r;
}

enum class PostTransform { None, Softmax, Logistic, SoftmaxZero, Probit };

inline PostTransform post_transform_attr(const NodeContext& ctx) {
  const std::string s = ctx.attr<std::string>("post_transform", "NONE");
  if (s == "NONE") return PostTransform::None;
  if (s == "SOFTMAX") return PostTransform::Softmax;
  if (s == "LOGISTIC") return PostTransform::Logistic;
  if (s == "SOFTMAX_ZERO") return PostTransform::SoftmaxZero;
  if (s == "PROBIT") return PostTransform::Probit;
  ctx.fail("post_transform must be NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO or PROBIT, got '" + s + "'");
}

inline double logistic(double x) {
  const double v = 1.0 / (1.0 + std::exp(-std::fabs(x)));
  return x < 0 ? 1.0 - v : v;
}

// The inverse error function approximation (Winitzki, a = 0.147) the ONNX and onnxruntime
// implementations of PROBIT use.
inline double erf_inv_approx(double x) {
  const double sgn = x < 0 ? -1.0 : 1.0;
  const double t = (1.0 - x) * (1.0 + x);
  if (t == 0) return 0;
  const double lg = std::log(t);
  const double v = 2.0 / (M_PI * 0.147) + 0.5 * lg;
  const double v2 = lg / 0.147;
  return sgn * std::sqrt(-v + std::sqrt(v * v - v2));
}
inline double probit(double p) { return 1.41421356 * erf_inv_approx(2.0 * p - 1.0); }

// Applies a post transform to one row of scores in place.
inline void apply_post_transform(double* s, int64_t n, PostTransform pt) {
  switch (pt) {
    case PostTransform::None: return;
    case PostTransform::Logistic:
      for (int64_t i = 0; i < n; ++i) s[i] = logistic(s[i]);
      return;
    case PostTransform::Probit:
      for (int64_t i = 0; i < n; ++i) s[i] = probit(s[i]);
      return;
    case PostTransform::Softmax: {
      if (n == 0) return;
      double mx = s[0], sum = 0;
      for (int64_t i = 1; i < n; ++i) mx = std::max(mx, s[i]);
      for (int64_t i = 0; i < n; ++i) sum += (s[i] = std::exp(s[i] - mx));
      for (int64_t i = 0; i < n; ++i) s[i] /= sum;
      return;
    }
    case PostTransform::SoftmaxZero: {  // softmax that keeps exact zeros at zero
      if (n == 0) return;
      double mx = s[0], sum = 0;
      for (int64_t i = 1; i < n; ++i) mx = std::max(mx, s[i]);
      const double exp_neg_max = std::exp(-mx);
      for (int64_t i = 0; i < n; ++i) {
        s[i] = (s[i] > 1e-7 || s[i] < -1e-7) ? std::exp(s[i] - mx) : s[i] * exp_neg_max;
        sum += s[i];
      }
      for (int64_t i = 0; i < n; ++i) s[i] = sum == 0 ? 0.5 : s[i] / sum;
      return;
    }
  }
}

// A float tensor from doubles.
inline Tensor float_tensor(const Shape& shape, const std::vector<double>& v) {
  Tensor t(DType::Float, shape);
  for (size_t i = 0; i < v.size(); ++i) t.data<float>()[i] = float(v[i]);
  return t;
}

// Class labels given as classlabels_ints / classlabels_strings (the attribute names vary).
struct ClassLabels {
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  bool use_strings = false;
  size_t size() const { return use_strings ? strings.size() : ints.size(); }
  void read(const NodeContext& ctx, const std::string& ints_name, const std::string& strings_name) {
    ints = ctx.attr<std::vector<int64_t>>(ints_name, {});
    strings = ctx.attr<std::vector<std::string>>(strings_name, {});
    if (!ints.empty() && !strings.empty()) ctx.fail("only one of " + ints_name + " and " + strings_name + " may be set");
    use_strings = !strings.empty();
  }
  // The label tensor [N] for class indices.
  Tensor labels(const std::vector<int64_t>& index) const {
    const int64_t n = int64_t(index.size());
    if (use_strings) {
      Tensor t(DType::String, {n});
      for (int64_t i = 0; i < n; ++i) t.data<std::string>()[i] = strings.at(size_t(index[i]));
      return t;
    }
    Tensor t(DType::Int64, {n});
    for (int64_t i = 0; i < n; ++i) t.data<int64_t>()[i] = ints.empty() ? index[i] : ints.at(size_t(index[i]));
    return t;
  }
};

}  // namespace refeval::ops
