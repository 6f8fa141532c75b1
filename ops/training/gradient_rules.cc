#include "gradient_rules.h"

#include <cmath>
#include <functional>
#include <map>

#include <fmt/format.h>

#include "../nn/nn_common.h"
#include "refeval/dispatch.h"

namespace refeval::ops {

Dense to_dense(const Tensor& t) { return Dense{t.shape(), to_doubles(t)}; }

Tensor from_dense(const Dense& d, DType dtype) {
  Tensor t(dtype, d.shape);
  visit<Floats>(dtype, [&]<class T>() {
    for (int64_t i = 0; i < t.size(); ++i) t.data<T>()[i] = T(d.v[size_t(i)]);
  });
  return t;
}

namespace {

// For each element of `out_shape`, the flat index of the element of `in_shape` that numpy
// broadcasting reads there.
std::vector<size_t> broadcast_source(const Shape& out_shape, const Shape& in_shape) {
  int64_t total = 1;
  for (int64_t d : out_shape) total *= d;
  std::vector<size_t> src(static_cast<size_t>(total));
  const size_t rank = out_shape.size(), offset = rank - in_shape.size();
  for (int64_t flat = 0; flat < total; ++flat) {
    int64_t rest = flat, index = 0, stride = 1;
    for (size_t d = rank; d-- > 0;) {
      const int64_t coord = rest % out_shape[d];
      rest /= out_shape[d];
      if (d >= offset) {
        const int64_t in_dim = in_shape[d - offset];
        index += (in_dim == 1 ? 0 : coord) * stride;
        stride *= in_dim;
      }
    }
    src[size_t(flat)] = size_t(index);
  }
  return src;
}

// x read at every position of `shape` (broadcast).
std::vector<double> expand(const Dense& x, const Shape& shape) {
  const auto src = broadcast_source(shape, x.shape);
  std::vector<double> out(src.size());
  for (size_t i = 0; i < src.size(); ++i) out[i] = x.v[src[i]];
  return out;
}

// A gradient over the broadcast shape, summed back onto the input's shape.
Dense reduce_to(const std::vector<double>& g, const Shape& out_shape, const Shape& in_shape) {
  Dense d{in_shape, {}};
  int64_t n = 1;
  for (int64_t s : in_shape) n *= s;
  d.v.assign(size_t(n), 0.0);
  const auto src = broadcast_source(out_shape, in_shape);
  for (size_t i = 0; i < src.size(); ++i) d.v[src[i]] += g[i];
  return d;
}

using Rule = std::function<std::vector<Dense>(const std::vector<Dense>&, const Dense&, const Dense&)>;

// y = f(a, b) elementwise with broadcasting: da = dy * df/da, db = dy * df/db.
Rule binary(std::function<double(double, double, double)> dfa, std::function<double(double, double, double)> dfb) {
  return [=](const std::vector<Dense>& in, const Dense& y, const Dense& dy) {
    const auto a = expand(in[0], y.shape), b = expand(in[1], y.shape);
    std::vector<double> ga(y.v.size()), gb(y.v.size());
    for (size_t i = 0; i < y.v.size(); ++i) {
      ga[i] = dy.v[i] * dfa(a[i], b[i], y.v[i]);
      gb[i] = dy.v[i] * dfb(a[i], b[i], y.v[i]);
    }
    return std::vector<Dense>{reduce_to(ga, y.shape, in[0].shape), reduce_to(gb, y.shape, in[1].shape)};
  };
}

// y = f(x): dx = dy * f'(x, y).
Rule unary(std::function<double(double, double)> df) {
  return [=](const std::vector<Dense>& in, const Dense& y, const Dense& dy) {
    Dense dx{in[0].shape, std::vector<double>(y.v.size())};
    for (size_t i = 0; i < y.v.size(); ++i) dx.v[i] = dy.v[i] * df(in[0].v[i], y.v[i]);
    return std::vector<Dense>{dx};
  };
}

// Y = A B for matrices: dA = dY B^T, dB = A^T dY.
std::vector<Dense> matmul(const std::vector<Dense>& in, const Dense&, const Dense& dy) {
  const Dense &a = in[0], &b = in[1];
  if (a.shape.size() != 2 || b.shape.size() != 2)
    fail_runtime(fmt::format("the MatMul derivative is implemented for matrices only, got ranks {} and {}",
                             a.shape.size(), b.shape.size()));
  const int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
  Dense da{a.shape, std::vector<double>(a.v.size())}, db{b.shape, std::vector<double>(b.v.size())};
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const double g = dy.v[size_t(i * n + j)];
      for (int64_t p = 0; p < k; ++p) {
        da.v[size_t(i * k + p)] += g * b.v[size_t(p * n + j)];
        db.v[size_t(p * n + j)] += g * a.v[size_t(i * k + p)];
      }
    }
  return {da, db};
}

const std::map<std::string, Rule>& rules() {
  static const std::map<std::string, Rule> table{
      {"Add", binary([](double, double, double) { return 1.0; }, [](double, double, double) { return 1.0; })},
      {"Sub", binary([](double, double, double) { return 1.0; }, [](double, double, double) { return -1.0; })},
      {"Mul", binary([](double, double b, double) { return b; }, [](double a, double, double) { return a; })},
      {"Div", binary([](double, double b, double) { return 1.0 / b; }, [](double a, double b, double) { return -a / (b * b); })},
      {"Neg", unary([](double, double) { return -1.0; })},
      {"Identity", unary([](double, double) { return 1.0; })},
      {"Relu", unary([](double x, double) { return x > 0 ? 1.0 : 0.0; })},
      {"Sigmoid", unary([](double, double y) { return y * (1 - y); })},
      {"Tanh", unary([](double, double y) { return 1 - y * y; })},
      {"Exp", unary([](double, double y) { return y; })},
      {"Log", unary([](double x, double) { return 1.0 / x; })},
      {"Sqrt", unary([](double, double y) { return 0.5 / y; })},
      {"MatMul", matmul},
  };
  return table;
}

}  // namespace

bool has_gradient_rule(const std::string& op_type) { return rules().count(op_type) > 0; }

std::vector<Dense> input_gradients(const std::string& op_type, const std::vector<Dense>& inputs, const Dense& output,
                                   const Dense& output_grad) {
  return rules().at(op_type)(inputs, output, output_grad);
}

}  // namespace refeval::ops
