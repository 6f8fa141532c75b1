// MatMul: numpy matmul (1-D promotion, batch broadcasting). float and double run on gemm()
// (linalg_common.h) over the tensor data, a 2-D initializer B through its packed form
// (ConstantRhsCache); float16 and bfloat16 compute in float (a constant B read from its float16
// strips, not widened on every call); integers use a plain loop.
#include "linalg_common.h"

#include <mutex>

#include "refeval/compute_vector.h"
#include "refeval/file_backed.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

template <class C>
void batched(const MatMulShape& s, const C* a, const C* b, C* c) {
  const int64_t batches = int64_t(s.a_batch.size());
  auto run = [&](int64_t M, const C* pa, const C* pb, C* pc) {
    if constexpr (std::is_same_v<C, float> || std::is_same_v<C, double>) gemm(false, false, M, s.N, s.K, pa, pb, pc, false);
    else gemm_loop(false, false, M, s.N, s.K, pa, pb, pc, false);
  };
  bool a_contiguous = true;
  for (int64_t i = 0; i < batches; ++i) a_contiguous = a_contiguous && s.a_batch[size_t(i)] == i;
  if (s.b_shared && a_contiguous) {  // one GEMM with every batch stacked into the rows of a
    run(batches * s.M, a, b, c);
    return;
  }
  for (int64_t i = 0; i < batches; ++i)
    run(s.M, a + s.a_batch[size_t(i)] * s.M * s.K, b + s.b_batch[size_t(i)] * s.K * s.N, c + i * s.M * s.N);
}

class MatMul : public OpRun {
 public:
  using Types = TypeList<float, double, float16, bfloat16, int32_t, int64_t, uint32_t, uint64_t>;
  explicit MatMul(const NodeContext& ctx) : weight_(ctx, 1, false, true) {
    // A weight whose strips serve every product: B itself is not needed again (a session that
    // releases absorbed weights frees it, ReferenceEvaluator's release_packed_weights).
    if (weight_.self_sufficient()) ctx.absorb_input(1);
    // B = Transpose(W) of a constant W (a tied LM head reading the embedding table): packed from W
    // itself, whose rows are B's columns, so W^T is never made beside the strips.
    if (const Initializer* w = ctx.transposed_constant_input(1);
        w && w->value.dtype() == DType::Float && ConstantRhsCache::suits(w->value, true)) {
      transposed_ = w->value;
      ctx.absorb_input(1);
    }
  }
  Values run(const Values& in, RunContext& ctx) override {
    const Tensor& a = input_tensor(in, 0);
    if (!has_value(in, 1)) {  // B absorbed: read from what was made of it
      if (transposed_) return {from_transposed(a, ctx)};
      if (auto packed = weight_.self_sufficient()) return {from_packed(a, *packed, ctx)};
    }
    const Tensor& b = input_tensor(in, 1);
    if (a.dtype() != b.dtype()) ctx.fail("inputs A and B must have one element type");
    const MatMulShape s = matmul_shape(a.shape(), b.shape());
    Tensor y = Tensor::uninitialized(a.dtype(), s.out);  // every path below writes all of it (K = 0 writes zeros)
    if (a.size() > 0) {
      if (auto packed = weight_.get(b, false)) {  // a 2-D weight: every row of A in one product
        const int64_t rows = a.size() / s.K;
        if (a.dtype() == DType::Float) {
          gemm(false, rows, a.data<float>(), *packed, y.data<float>(), false);
        } else {  // float16 or bfloat16: A widened, Y rounded once
          std::vector<float> wy(size_t(y.size()));
          gemm(false, rows, to_compute<float>(a).data(), *packed, wy.data(), false);
          write_compute(y, wy);
        }
        return {y};
      }
    }
    visit<Types>(a.dtype(), [&]<class T>() {
      if constexpr (is_narrow_float_v<T>) {
        std::vector<float> wy(size_t(y.size()));
        batched<float>(s, to_compute<float>(a).data(), to_compute<float>(b).data(), wy.data());
        write_compute(y, wy);
      } else {
        batched<T>(s, a.data<T>(), b.data<T>(), y.data<T>());
      }
    });
    return {y};
  }

 private:
  // A times the absorbed weight (B released after packing): the kernels and sums of B given.
  Tensor from_packed(const Tensor& a, const ConstantRhs& b, RunContext& ctx) {
    if (a.dtype() != DType::Float) ctx.fail("inputs A and B must have one element type");
    const MatMulShape s = matmul_shape(a.shape(), Shape{b.K(), b.N()});
    Tensor y = Tensor::uninitialized(a.dtype(), s.out);
    if (a.size() > 0) gemm(false, a.size() / s.K, a.data<float>(), b, y.data<float>(), false);
    return y;
  }
  // A times W^T when the Transpose was skipped: the same kernels and sums as with W^T given.
  Tensor from_transposed(const Tensor& a, RunContext& ctx) {
    const Tensor& w = *transposed_;
    if (a.dtype() != DType::Float) ctx.fail("inputs A and B must have one element type");
    const MatMulShape s = matmul_shape(a.shape(), Shape{w.dim(1), w.dim(0)});
    Tensor y = Tensor::uninitialized(a.dtype(), s.out);
    if (a.size() == 0) return y;
    const int64_t rows = a.size() / s.K;
    // Eigen takes small products, and sums A W^T in another order when told W is transposed.
    const bool small = !gemm_panels_suits(rows, s.N, s.K);
    if (auto packed = small ? nullptr : weight_.get(w, true, false)) {
      gemm(false, rows, a.data<float>(), *packed, y.data<float>(), false);
    } else if (small) {  // then W has fewer than 2^18 values: W^T made once, W's pages given back
      std::call_once(small_made_, [&] {
        small_wt_ = untransposed(w.data<float>(), s.K, s.N);
        release_file_pages(w.data<float>(), w.nbytes());
      });
      gemm(false, false, rows, s.N, s.K, a.data<float>(), small_wt_.data(), y.data<float>(), false);
    } else {  // beyond the packing budget: W read where it lies
      gemm(false, true, rows, s.N, s.K, a.data<float>(), w.data<float>(), y.data<float>(), false);
    }
    return y;
  }

  ConstantRhsCache weight_;
  std::optional<Tensor> transposed_;  // W of B = Transpose(W), when the op packs B from it
  std::once_flag small_made_;
  std::vector<float> small_wt_;  // W^T for Eigen's small products
};

}  // namespace

void register_matmul(Registry& reg) { reg.add("", "MatMul", {1, 9, 13}, make<MatMul>); }

}  // namespace refeval::ops
