// The kernel shared by SVMClassifier and SVMRegressor: kernel_type LINEAR, POLY, RBF or SIGMOID
// with kernel_params [gamma, coef0, degree].
#pragma once

#include "ml_common.h"

namespace refeval::ops {

struct SvmKernel {
  enum class Type { Linear, Poly, Rbf, Sigmoid } type = Type::Linear;
  double gamma = 0, coef0 = 0;
  int64_t degree = 0;

  explicit SvmKernel(const NodeContext& ctx) {
    const std::string k = ctx.attr<std::string>("kernel_type", "LINEAR");
    if (k == "LINEAR") type = Type::Linear;
    else if (k == "POLY") type = Type::Poly;
    else if (k == "RBF") type = Type::Rbf;
    else if (k == "SIGMOID") type = Type::Sigmoid;
    else ctx.fail("kernel_type must be LINEAR, POLY, RBF or SIGMOID, got '" + k + "'");
    const auto p = ctx.attr<std::vector<float>>("kernel_params", {});
    if (!p.empty()) {
      if (p.size() != 3) ctx.fail("kernel_params must be [gamma, coef0, degree]");
      gamma = p[0], coef0 = p[1], degree = int64_t(p[2]);
    }
  }

  double operator()(const double* a, const float* b, int64_t n, Type t) const {
    double s = 0;
    if (t == Type::Rbf) {
      for (int64_t i = 0; i < n; ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
      return std::exp(-gamma * s);
    }
    for (int64_t i = 0; i < n; ++i) s += a[i] * double(b[i]);
    if (t == Type::Poly) return std::pow(s * gamma + coef0, double(degree));
    if (t == Type::Sigmoid) return std::tanh(s * gamma + coef0);
    return s;
  }
};

}  // namespace refeval::ops
