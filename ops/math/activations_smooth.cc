// Smooth activations: Elu Celu Selu Sigmoid Softplus Softsign Mish Gelu Swish, and SwiGLU
// (Swish(A) * B). For float32, Elu, Sigmoid, Softplus and Gelu run their transcendental part over
// the whole tensor through glibc's vector functions (vector_math.h, as Tanh does: within the
// backend tests' tolerance of the scalar ones) and the rest in plain loops, the same formulas.
#include <cmath>
#include <numbers>

#include "math_common.h"
#include "vector_math.h"

namespace refeval::ops {
namespace {

// 1 / (1 + e^-x), without overflow of e^-x for very negative x.
template <class C> C sigmoid(C x) {
  if (x >= C(0)) return C(1) / (C(1) + std::exp(-x));
  const C e = std::exp(x);
  return e / (C(1) + e);
}
// ln(1 + e^x), exact also where e^x overflows.
template <class C> C softplus(C x) { return x > C(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }

// y = f(x) for float32 x, f computing the whole array (y may hold intermediate values); other
// types element by element with `scalar`.
template <class List, class Vector, class Scalar>
Tensor map_unary_vector(const Tensor& x, Vector vector, Scalar scalar) {
  if (x.dtype() != DType::Float) return map_unary_of<List>(x, scalar);
  Tensor y = Tensor::uninitialized(DType::Float, x.shape());  // written in full
  vector(x.data<float>(), y.data<float>(), x.size());
  return y;
}

class Elu : public OpRun {
 public:
  using Types = Floats;
  explicit Elu(const NodeContext& ctx) : alpha_(ctx.attr<float>("alpha", 1.0f)) { ignore_consumed_inputs(ctx); }
  Values run(const Values& in, RunContext&) override {
    const float alpha = alpha_;
    auto vector = [alpha](const float* x, float* y, int64_t n) {
      expm1_floats(x, y, n);
      scale_negatives(x, y, alpha, y, n);
    };
    return {map_unary_vector<Types>(input_tensor(in, 0), vector, [&](auto v) {
      using C = decltype(v);
      return v < C(0) ? C(alpha_) * std::expm1(v) : v;
    })};
  }
 private:
  float alpha_;
};

class Celu : public OpRun {
 public:
  using Types = Floats;
  explicit Celu(const NodeContext& ctx) : alpha_(ctx.attr<float>("alpha", 1.0f)) {
    if (alpha_ == 0) ctx.fail("alpha must not be 0");
  }
  Values run(const Values& in, RunContext&) override {
    return {map_unary_of<Types>(input_tensor(in, 0), [&](auto v) {
      using C = decltype(v);
      if (std::isnan(v)) return v;  // std::max(0, NaN) and std::min(0, NaN) are 0
      return std::max(C(0), v) + std::min(C(0), C(alpha_) * std::expm1(v / C(alpha_)));
    })};
  }
 private:
  float alpha_;
};

class Selu : public OpRun {
 public:
  using Types = Floats;
  explicit Selu(const NodeContext& ctx)
      : alpha_(ctx.attr<float>("alpha", 1.67326319217681884765625f)),
        gamma_(ctx.attr<float>("gamma", 1.05070102214813232421875f)) { ignore_consumed_inputs(ctx); }
  Values run(const Values& in, RunContext&) override {
    return {map_unary_of<Types>(input_tensor(in, 0), [&](auto v) {
      using C = decltype(v);
      return v > C(0) ? C(gamma_) * v : C(gamma_) * (C(alpha_) * std::exp(v) - C(alpha_));
    })};
  }
 private:
  float alpha_, gamma_;
};

class Sigmoid : public OpRun {
 public:
  using Types = Floats;
  explicit Sigmoid(const NodeContext& ctx) { ignore_consumed_inputs(ctx); }
  Values run(const Values& in, RunContext&) override {
    auto vector = [](const float* x, float* y, int64_t n) {  // e = e^-|x|, then sigmoid's two branches
      for (int64_t i = 0; i < n; ++i) y[i] = -std::fabs(x[i]);
      exp_floats(y, y, n);
      for (int64_t i = 0; i < n; ++i) y[i] = (x[i] >= 0.0f ? 1.0f : y[i]) / (1.0f + y[i]);  // one vector loop, no branch
    };
    return {map_unary_vector<Types>(input_tensor(in, 0), vector, [](auto v) { return sigmoid(v); })};
  }
};

class Softplus : public OpRun {
 public:
  using Types = Floats;
  explicit Softplus(const NodeContext&) {}
  Values run(const Values& in, RunContext&) override {
    auto vector = [](const float* x, float* y, int64_t n) {  // max(x, 0) + ln(1 + e^-|x|)
      for (int64_t i = 0; i < n; ++i) y[i] = -std::fabs(x[i]);
      exp_floats(y, y, n);
      log1p_floats(y, y, n);
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] + y[i] : y[i];
    };
    return {map_unary_vector<Types>(input_tensor(in, 0), vector, [](auto v) { return softplus(v); })};
  }
};

class Softsign : public OpRun {
 public:
  using Types = Floats;
  explicit Softsign(const NodeContext&) {}
  Values run(const Values& in, RunContext&) override {
    return {map_unary_of<Types>(input_tensor(in, 0), [](auto v) { return v / (decltype(v)(1) + std::fabs(v)); })};
  }
};

class Mish : public OpRun {
 public:
  using Types = Floats;
  explicit Mish(const NodeContext&) {}
  Values run(const Values& in, RunContext&) override {
    return {map_unary_of<Types>(input_tensor(in, 0), [](auto v) { return v * std::tanh(softplus(v)); })};
  }
};

class Gelu : public OpRun {
 public:
  using Types = Floats;
  explicit Gelu(const NodeContext& ctx) {
    const auto a = ctx.attr<std::string>("approximate", "none");
    if (a != "none" && a != "tanh") ctx.fail("approximate must be 'none' or 'tanh', got '" + a + "'");
    tanh_ = a == "tanh";
  }
  Values run(const Values& in, RunContext&) override {
    const bool tanh = tanh_;
    auto vector = [tanh](const float* x, float* y, int64_t n) {
      const float k = float(std::sqrt(2.0 / std::numbers::pi));
      if (tanh) {
        for (int64_t i = 0; i < n; ++i) y[i] = k * (x[i] + 0.044715f * x[i] * x[i] * x[i]);
        tanh_floats(y, y, n);
        for (int64_t i = 0; i < n; ++i) y[i] = 0.5f * x[i] * (1.0f + y[i]);
      } else {
        gelu_erf_floats(x, y, n);  // erfc keeps the negative tail, where 1 + erf cancels
      }
    };
    return {map_unary_vector<Types>(input_tensor(in, 0), vector, [&](auto v) {
      using C = decltype(v);
      if (tanh_) {
        const C k = C(std::sqrt(2.0 / std::numbers::pi));
        return C(0.5) * v * (C(1) + std::tanh(k * (v + C(0.044715) * v * v * v)));
      }
      return C(0.5) * v * (C(1) + std::erf(v / C(std::numbers::sqrt2)));
    })};
  }
 private:
  bool tanh_;
};

class Swish : public OpRun {
 public:
  using Types = Floats;
  explicit Swish(const NodeContext& ctx) : alpha_(ctx.attr<float>("alpha", 1.0f)) {}
  Values run(const Values& in, RunContext&) override {
    return {map_unary_of<Types>(input_tensor(in, 0), [&](auto v) { return v * sigmoid(decltype(v)(alpha_) * v); })};
  }
 private:
  float alpha_;
};

// Y = Swish_alpha(A) * B; A and B have one shape (no broadcasting).
class SwiGLU : public OpRun {
 public:
  using Types = Floats;
  explicit SwiGLU(const NodeContext& ctx) : alpha_(ctx.attr<float>("alpha", 1.0f)) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor& a = input_tensor(in, 0);
    const Tensor& b = input_tensor(in, 1);
    require_same_dtype(a, b);
    if (a.shape() != b.shape())
      fail_runtime("A and B must have the same shape, got " + shape_to_string(a.shape()) + " and " +
                   shape_to_string(b.shape()));
    return {visit<Types>(a.dtype(), [&]<class T>() {
      return map_binary<T, T>(a, b, [&](auto x, auto y) {
        using C = decltype(x);
        return x * sigmoid(C(alpha_) * x) * y;
      });
    })};
  }
 private:
  float alpha_;
};

}  // namespace

void register_smooth_activations(Registry& reg) {
  reg.add("", "Elu", {1, 6, 22}, make<Elu>);
  reg.add("", "Celu", {12, 28}, make<Celu>);  // 28 accepts more float types (backend tests run float16/bfloat16 at 28)
  reg.add("", "Selu", {1, 6, 22}, make<Selu>);
  reg.add("", "Sigmoid", {1, 6, 13}, make<Sigmoid>);
  reg.add("", "Softplus", {1, 22}, make<Softplus>);
  reg.add("", "Softsign", {1, 22}, make<Softsign>);
  reg.add("", "Mish", {18, 22}, make<Mish>);
  reg.add("", "Gelu", {20}, make<Gelu>);
  reg.add("", "Swish", {24}, make<Swish>);
  reg.add("", "SwiGLU", {28}, make<SwiGLU>);
}

}  // namespace refeval::ops
