// RandomUniform, RandomNormal (shape and dtype from attributes) and RandomUniformLike,
// RandomNormalLike (shape and, by default, dtype from the input). Seeding: random_common.h.
#include <fmt/format.h>

#include "random_common.h"

namespace refeval::ops {
namespace {

enum class Dist { Uniform, Normal };

template <Dist D, bool Like>
class RandomTensor : public OpRun {
 public:
  static constexpr Determinism determinism = Determinism::Random;
  using Types = Floats;
  explicit RandomTensor(const NodeContext& ctx) : rng_(ctx) {
    if constexpr (D == Dist::Uniform) {
      a_ = ctx.attr<float>("low", 0.0f);
      b_ = ctx.attr<float>("high", 1.0f);
    } else {
      a_ = ctx.attr<float>("mean", 0.0f);
      b_ = ctx.attr<float>("scale", 1.0f);
    }
    if constexpr (Like) {
      if (ctx.has_attr("dtype")) dtype_ = dtype_attr<Types>(ctx, std::nullopt);
    } else {
      dtype_ = dtype_attr<Types>(ctx, DType::Float);
      shape_ = ctx.required<std::vector<int64_t>>("shape");
      for (int64_t d : shape_)
        if (d < 0) ctx.fail("shape must not have negative dimensions");
    }
  }

  Values run(const Values& in, RunContext&) override {
    Draw draw = rng_.draw();
    Shape shape = shape_;
    DType dtype = dtype_.value_or(DType::Undefined);
    if constexpr (Like) {
      const Tensor& x = input_tensor(in, 0);
      shape = x.shape();
      if (!dtype_) dtype = x.dtype();
    }
    return {fill_random<Types>(dtype, shape, [&] {
      if constexpr (D == Dist::Uniform) return double(a_) + (double(b_) - double(a_)) * draw.uniform();
      else return double(a_) + double(b_) * draw.normal();
    })};
  }

 private:
  RandomSource rng_;
  float a_ = 0, b_ = 1;
  std::optional<DType> dtype_;
  Shape shape_;
};

}  // namespace

void register_random_tensors(Registry& reg) {
  reg.add("", "RandomUniform", {1, 22}, make<RandomTensor<Dist::Uniform, false>>);
  reg.add("", "RandomNormal", {1, 22}, make<RandomTensor<Dist::Normal, false>>);
  reg.add("", "RandomUniformLike", {1, 22}, make<RandomTensor<Dist::Uniform, true>>);
  reg.add("", "RandomNormalLike", {1, 22}, make<RandomTensor<Dist::Normal, true>>);
}

}  // namespace refeval::ops
