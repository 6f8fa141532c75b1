// com.microsoft GELU family (v1), each an elementwise function of z = X (+ a bias over the last
// dimension):
//   Gelu(X)            y = 0.5 z (1 + erf(z / sqrt 2))                              (exact)
//   BiasGelu(A, B)     Gelu(A + B)
//   FastGelu(X, bias?) y = 0.5 z (1 + tanh(z (sqrt(2 / pi) + 0.044715 sqrt(2 / pi) z^2)))  (tanh form)
//   QuickGelu(X)       y = z * sigmoid(alpha z), alpha defaults to 1.702
// float32 computes in float as ORT's kernels and the unfused graphs do: z = X + bias rounded to
// float, the transcendental part through glibc's vector functions (tanh, exp, erfc:
// vector_math.h, as the standard Tanh and Sigmoid do). Gelu's 1 + erf(z / sqrt 2) is taken as
// erfc(-z / sqrt 2), the same value, which keeps its few-ulp accuracy for z < 0 where 1 + erf
// cancels (glibc's vector erff does not, there). float16 / bfloat16 / double compute in double
// and round once.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "../math/vector_math.h"
#include "contrib_common.h"
#include "refeval/elementwise.h"
#include "refeval/registry.h"
#include "refeval/threads.h"

namespace refeval::ops::contrib {
namespace {

constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2 / pi)
constexpr double kTanhCubic = 0.044715;

void gelu_erf(std::vector<double>& v) {
  for (double& z : v) z = 0.5 * z * (1.0 + std::erf(z / std::numbers::sqrt2));
}
// The tanh through the vector math library in double (ops/math/vector_math.h), a whole tensor at once.
void gelu_tanh(std::vector<double>& v) {
  std::vector<double> t(v.size());
  for (size_t i = 0; i < v.size(); ++i) t[i] = v[i] * (kSqrt2OverPi + kSqrt2OverPi * kTanhCubic * v[i] * v[i]);
  tanh_doubles(t.data(), t.data(), int64_t(t.size()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.5 * v[i] * (1.0 + t[i]);
}

// The float32 forms, in place over z. The vector functions need a scratch array next to z; it is
// a block on the stack (no allocation, no page faults for a fresh buffer), and blocks are split
// across threads for large tensors (the functions are lane by lane: the split changes no bit).
constexpr int64_t kBlock = 1024;
template <class F> void by_blocks(float* z, int64_t n, const F& f) {
  parallel_for(n, kParallelElements, [&](int64_t begin, int64_t end) {
    float t[kBlock];
    for (int64_t i = begin; i < end; i += kBlock) f(z + i, t, std::min(kBlock, end - i));
  });
}
void gelu_erf_in_place(float* z, int64_t n) {
  parallel_for(n, kParallelElements, [&](int64_t begin, int64_t end) { gelu_erf_floats(z + begin, z + begin, end - begin); });
}
void gelu_tanh_floats(float* z, int64_t n) {
  const float a = float(kSqrt2OverPi), c = float(kSqrt2OverPi * kTanhCubic);
  by_blocks(z, n, [&](float* v, float* t, int64_t m) {
    for (int64_t i = 0; i < m; ++i) t[i] = v[i] * (a + c * v[i] * v[i]);
    tanh_floats(t, t, m);
    for (int64_t i = 0; i < m; ++i) v[i] = 0.5f * v[i] * (1.0f + t[i]);
  });
}
// z * sigmoid(alpha z) with Sigmoid's two branches: e = e^-|alpha z|, sigmoid = (1 or e) / (1 + e).
void quick_gelu_floats(float* z, int64_t n, float alpha) {
  by_blocks(z, n, [&](float* v, float* t, int64_t m) {
    for (int64_t i = 0; i < m; ++i) t[i] = -std::fabs(alpha * v[i]);
    exp_floats(t, t, m);
    for (int64_t i = 0; i < m; ++i) v[i] = v[i] * ((alpha * v[i] >= 0.0f ? 1.0f : t[i]) / (1.0f + t[i]));
  });
}

// The bias input `bias_input` (optional unless the op checked it): a 1-D tensor of X's last
// dimension and X's type, checked; an undefined tensor when absent.
Tensor bias_of(const Values& in, size_t bias_input, const Tensor& x) {
  if (!has_value(in, bias_input)) return {};
  if (x.rank() == 0) fail_runtime("X must have at least one dimension to take a bias");
  const Tensor& bias = input_tensor(in, bias_input);
  require_dtype(bias, x.dtype(), "bias");
  require_shape(bias, {x.shape().back()}, "bias");
  return bias;
}

// y = f(x + bias[i % H]) with the bias (input `bias_input`) a 1-D tensor of X's last dimension H:
// float32 through `f_float` (in place over a float array), other types through `f` over doubles.
template <class F, class FFloat>
Tensor apply_with_bias(const Values& in, size_t bias_input, const F& f, const FFloat& f_float) {
  const Tensor& x = input_tensor(in, 0);
  require_types<FloatTypes>(x.dtype());
  const Tensor bias = bias_of(in, bias_input, x);
  if (x.dtype() == DType::Float) {
    Tensor y(DType::Float, x.shape());
    const float* px = x.data<float>();
    float* py = y.data<float>();
    if (bias.defined() && bias.size() > 0) {
      const float* pb = bias.data<float>();
      const int64_t h = bias.size();
      for (int64_t r = 0; r < x.size(); r += h)
        for (int64_t j = 0; j < h; ++j) py[r + j] = px[r + j] + pb[j];
    } else {
      std::copy_n(px, x.size(), py);
    }
    f_float(py, y.size());
    return y;
  }
  std::vector<double> v = to_doubles(x);
  if (bias.defined()) {
    const std::vector<double> b = to_doubles(bias);
    for (size_t i = 0; i < v.size(); ++i) v[i] += b[i % b.size()];
  }
  f(v);
  return from_doubles(x.dtype(), x.shape(), v);
}

class Gelu : public OpRun {
 public:
  using Types = FloatTypes;
  explicit Gelu(const NodeContext&) {}
  Values run(const Values& in, RunContext&) override { return {apply_with_bias(in, 1, gelu_erf, gelu_erf_in_place)}; }
};

class BiasGelu : public OpRun {
 public:
  using Types = FloatTypes;
  explicit BiasGelu(const NodeContext&) {}
  Values run(const Values& in, RunContext&) override {
    input_tensor(in, 1);  // B is required: a clear error when it is missing
    return {apply_with_bias(in, 1, gelu_erf, gelu_erf_in_place)};
  }
};

class FastGelu : public OpRun {
 public:
  using Types = FloatTypes;
  explicit FastGelu(const NodeContext&) {}
  Values run(const Values& in, RunContext&) override { return {apply_with_bias(in, 1, gelu_tanh, gelu_tanh_floats)}; }
};

class QuickGelu : public OpRun {
 public:
  using Types = FloatTypes;
  explicit QuickGelu(const NodeContext& ctx) : alpha_(ctx.attr<float>("alpha", 1.702f)) {}
  Values run(const Values& in, RunContext&) override {
    const double alpha = alpha_;
    const float alpha_f = alpha_;
    return {apply_with_bias(
        in, 1,
        [alpha](std::vector<double>& v) {
          for (double& z : v) z = z / (1.0 + std::exp(-alpha * z));
        },
        [alpha_f](float* z, int64_t n) { quick_gelu_floats(z, n, alpha_f); })};
  }
 private:
  float alpha_;
};

}  // namespace

void register_gelu(Registry& reg) {
  reg.add("com.microsoft", "Gelu", {1}, make<Gelu>);
  reg.add("com.microsoft", "BiasGelu", {1}, make<BiasGelu>);
  reg.add("com.microsoft", "FastGelu", {1}, make<FastGelu>);
  reg.add("com.microsoft", "QuickGelu", {1}, make<QuickGelu>);
}

}  // namespace refeval::ops::contrib
