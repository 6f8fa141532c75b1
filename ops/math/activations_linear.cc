// Piecewise-linear activations: Relu LeakyRelu PRelu ThresholdedRelu HardSigmoid HardSwish Shrink.
#include <cmath>

#include "math_common.h"
#include "vector_math.h"

namespace refeval::ops {
namespace {

class Relu : public OpRun {
 public:
  using Types = SignedNumeric;
  explicit Relu(const NodeContext& ctx) { ignore_consumed_inputs(ctx); }
  Values run(const Values& in, RunContext&) override {
    // max(x, 0) as numpy computes it for the reference: NaN stays NaN (it is where a NaN hunt
    // must see it), -0 becomes +0.
    return {map_unary_of<Types>(input_tensor(in, 0), [](auto v) { return v > decltype(v)(0) || v != v ? v : decltype(v)(0); })};
  }
};

class LeakyRelu : public OpRun {
 public:
  using Types = Floats;
  explicit LeakyRelu(const NodeContext& ctx) : alpha_(ctx.attr<float>("alpha", 0.01f)) { ignore_consumed_inputs(ctx); }
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    if (x.dtype() == DType::Float) {
      Tensor y = Tensor::uninitialized(DType::Float, x.shape());  // written in full
      scale_negatives(x.data<float>(), x.data<float>(), alpha_, y.data<float>(), x.size());
      return {y};
    }
    return {map_unary_of<Types>(x, [alpha = alpha_](auto v) { return v < 0 ? decltype(v)(alpha) * v : v; })};
  }
 private:
  float alpha_;
};

// Y = X where X >= 0, slope * X elsewhere; slope broadcasts to X's shape (unidirectionally).
class PRelu : public OpRun {
 public:
  using Types = Concat<Floats, TypeList<int32_t, int64_t, uint32_t, uint64_t>>;
  explicit PRelu(const NodeContext& ctx) : per_channel_(ctx.since_version() < 7) { ignore_consumed_inputs(ctx); }
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    Tensor slope = input_tensor(in, 1);
    // Before opset 7 a 1-D slope holds one value per channel (axis 1), not per last-axis element.
    if (per_channel_ && slope.rank() == 1 && x.rank() > 2 && slope.dim(0) == x.dim(1) && slope.dim(0) > 1) {
      Shape s(x.rank() - 1, 1);
      s[0] = slope.dim(0);
      slope = slope.reshaped(s);
    }
    require_same_dtype(x, slope, "X and slope");
    Tensor y = visit<Types>(x.dtype(), [&]<class T>() {
      return map_binary<T, T>(x, slope, [](auto v, auto s) { return v < decltype(v)(0) ? wrap_mul(s, v) : v; });
    });
    if (y.shape() != x.shape())
      fail_runtime("slope of shape " + shape_to_string(slope.shape()) + " does not broadcast to X of shape " +
                   shape_to_string(x.shape()));
    return {y};
  }
 private:
  bool per_channel_;
};

class ThresholdedRelu : public OpRun {
 public:
  using Types = Floats;
  explicit ThresholdedRelu(const NodeContext& ctx) : alpha_(ctx.attr<float>("alpha", 1.0f)) {}
  Values run(const Values& in, RunContext&) override {
    return {map_unary_of<Types>(input_tensor(in, 0), [alpha = alpha_](auto v) { return v > decltype(v)(alpha) ? v : decltype(v)(0); })};
  }
 private:
  float alpha_;
};

class HardSigmoid : public OpRun {
 public:
  using Types = Floats;
  explicit HardSigmoid(const NodeContext& ctx) : alpha_(ctx.attr<float>("alpha", 0.2f)), beta_(ctx.attr<float>("beta", 0.5f)) {
    ignore_consumed_inputs(ctx);
  }
  Values run(const Values& in, RunContext&) override {
    return {map_unary_of<Types>(input_tensor(in, 0), [&](auto v) {
      using C = decltype(v);
      if (std::isnan(v)) return v;  // std::min / std::max would clamp a NaN to a bound
      return std::max(C(0), std::min(C(1), C(alpha_) * v + C(beta_)));
    })};
  }
 private:
  float alpha_, beta_;
};

class HardSwish : public OpRun {
 public:
  using Types = Floats;
  explicit HardSwish(const NodeContext&) {}
  Values run(const Values& in, RunContext&) override {
    return {map_unary_of<Types>(input_tensor(in, 0), [](auto v) {
      using C = decltype(v);
      return v * std::max(C(0), std::min(C(1), v / C(6) + C(0.5)));
    })};
  }
};

class Shrink : public OpRun {
 public:
  using Types = Numeric;
  explicit Shrink(const NodeContext& ctx) : bias_(ctx.attr<float>("bias", 0.0f)), lambd_(ctx.attr<float>("lambd", 0.5f)) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    return {visit<Types>(x.dtype(), [&]<class T>() {
      // Integers compare and shift in double, then convert back (values stay in range).
      return map_unary<T>(x, [&](auto v) {
        using C = decltype(v);
        const double d = double(v);
        const double r = d < -double(lambd_) ? d + double(bias_) : d > double(lambd_) ? d - double(bias_) : 0.0;
        if constexpr (std::is_integral_v<C>) return float_to_int<C>(r);
        else return C(r);
      });
    })};
  }
 private:
  float bias_, lambd_;
};

}  // namespace

void register_linear_activations(Registry& reg) {
  reg.add("", "Relu", {1, 6, 13, 14}, make<Relu>);
  reg.add("", "LeakyRelu", {1, 6, 16}, make<LeakyRelu>);
  reg.add("", "PRelu", {1, 6, 7, 9, 16}, make<PRelu>);
  reg.add("", "ThresholdedRelu", {10, 22}, make<ThresholdedRelu>);
  reg.add("", "HardSigmoid", {1, 6, 22}, make<HardSigmoid>);
  reg.add("", "HardSwish", {14, 22}, make<HardSwish>);
  reg.add("", "Shrink", {9}, make<Shrink>);
}

}  // namespace refeval::ops
