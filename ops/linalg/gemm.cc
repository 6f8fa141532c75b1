// Gemm: Y = alpha * op(A) * op(B) + beta * C, with op = transpose when transA / transB is set and
// C broadcast unidirectionally to (M, N) (optional from version 11). float and double run on
// gemm() (an initializer B through its packed form, ConstantRhsCache); float16 and bfloat16
// compute in float (a constant B read from its packed float16 strips); integers use a wrapping loop.
#include "linalg_common.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "refeval/compute_vector.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

// A double converted to an integer type: rounds toward zero, clamps to the range, NaN gives 0.
template <class T>
T to_int(double v) {
  if (std::isnan(v)) return T(0);
  if (v <= double(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
  if (v >= double(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return T(v);
}

class Gemm : public OpRun {
 public:
  using Types = TypeList<float, double, float16, bfloat16, int32_t, int64_t, uint32_t, uint64_t>;
  explicit Gemm(const NodeContext& ctx)
      : alpha_(ctx.attr<float>("alpha", 1.0f)),
        beta_(ctx.attr<float>("beta", 1.0f)),
        trans_a_(ctx.attr<int64_t>("transA", 0) != 0),
        trans_b_(ctx.attr<int64_t>("transB", 0) != 0),
        weight_(ctx, 1, trans_b_) {
    if (ctx.since_version() < 7) ctx.attr<int64_t>("broadcast", 0);  // C broadcasts either way
  }

  Values run(const Values& in, RunContext& ctx) override {
    const Tensor& a = input_tensor(in, 0);
    const Tensor& b = input_tensor(in, 1);
    if (a.rank() != 2 || b.rank() != 2)
      ctx.fail(fmt::format("A and B must be 2-D, got {} and {}", shape_to_string(a.shape()), shape_to_string(b.shape())));
    if (a.dtype() != b.dtype()) ctx.fail("inputs A and B must have one element type");
    const int64_t M = trans_a_ ? a.dim(1) : a.dim(0), K = trans_a_ ? a.dim(0) : a.dim(1);
    const int64_t N = trans_b_ ? b.dim(0) : b.dim(1), Kb = trans_b_ ? b.dim(1) : b.dim(0);
    if (K != Kb)
      ctx.fail(fmt::format("inner dimensions differ: op(A) is {}x{}, op(B) is {}x{}", M, K, Kb, N));
    const Tensor* c = has_value(in, 2) && beta_ != 0.0f ? &input_tensor(in, 2) : nullptr;
    int64_t c_row = 0, c_col = 0;  // strides of C over Y's rows and columns (0: broadcast)
    if (c) {
      if (c->dtype() != a.dtype()) ctx.fail("input C must have the element type of A");
      const Shape& cs = c->shape();
      const int64_t cm = cs.size() == 2 ? cs[0] : 1, cn = cs.empty() ? 1 : cs.back();
      if (cs.size() > 2 || (cm != 1 && cm != M) || (cn != 1 && cn != N))
        ctx.fail(fmt::format("C of shape {} does not broadcast to ({}, {})", shape_to_string(cs), M, N));
      c_row = cm == 1 ? 0 : cn;
      c_col = cn == 1 ? 0 : 1;
    }
    Tensor y(a.dtype(), {M, N});
    visit<Types>(a.dtype(), [&]<class T>() {
      using C = compute_t<T>;
      std::vector<C> prod(size_t(M * N));
      if constexpr (std::is_floating_point_v<C>) {
        // A narrow operand's values widened into `copy`; a float or double one read in place.
        auto values = [](const Tensor& t, std::vector<C>& copy) -> const C* {
          if constexpr (!is_narrow_float_v<T>) return t.data<T>();
          copy = to_compute<C>(t);
          return copy.data();
        };
        std::vector<C> wa, wb;
        const C* pa = values(a, wa);
        bool done = false;
        if constexpr (std::is_same_v<C, float>) {  // float, float16 and bfloat16 weights
          if (auto packed = weight_.get(b, trans_b_)) gemm(trans_a_, M, pa, *packed, prod.data(), false), done = true;
        }
        if (!done) gemm(trans_a_, trans_b_, M, N, K, pa, values(b, wb), prod.data(), false);
      } else {
        gemm_loop(trans_a_, trans_b_, M, N, K, a.data<T>(), b.data<T>(), prod.data(), false);
      }
      const T* pc = c ? c->data<T>() : nullptr;
      T* out = y.data<T>();
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          const C p = prod[size_t(i * N + j)];
          const C cv = pc ? C(pc[i * c_row + j * c_col]) : C(0);
          if constexpr (std::is_floating_point_v<C>) {
            out[i * N + j] = from_compute<T>(C(alpha_) * p + (pc ? C(beta_) * cv : C(0)));
          } else if (alpha_ == 1.0f && (beta_ == 1.0f || !pc)) {
            using U = std::make_unsigned_t<T>;
            out[i * N + j] = T(U(U(p) + U(cv)));
          } else {
            out[i * N + j] = to_int<T>(double(alpha_) * double(p) + (pc ? double(beta_) * double(cv) : 0.0));
          }
        }
    });
    return {y};
  }

 private:
  float alpha_, beta_;
  bool trans_a_, trans_b_;
  ConstantRhsCache weight_;  // a float, float16 or bfloat16 initializer B, packed once
};

}  // namespace

void register_gemm(Registry& reg) { reg.add("", "Gemm", {1, 6, 7, 9, 11, 13}, make<Gemm>); }

}  // namespace refeval::ops
