// com.microsoft FusedMatMul (v1), also registered under its deprecated name TransposeMatMul:
//   Y = alpha * op(A) * op(B) with numpy matmul broadcasting over the batch dimensions.
// op() first applies transBatch (dim 0 moves just before the last dim: perm [1, ..., r-2, 0, r-1],
// what a fused Transpose of the batch into the rows looked like), then trans (swap the last two
// dims). Both flags are ignored on a 1-D operand, as numpy's transpose of a vector is itself.
//
// As ONNX Runtime's kernel (and the standard MatMul) does, float computes in float: every product
// is ops/linalg's float gemm (trans passed to it, never a transposed copy made here), a 2-D float
// initializer B through its panels packed once (ConstantRhsCache), then alpha scales the sums;
// float16 and bfloat16 compute in float, double in double.
#include "../linalg/linalg_common.h"
#include "contrib_common.h"
#include "refeval/registry.h"

namespace refeval::ops::contrib {
namespace {

// An operand as the products read it: its values in compute type C (the tensor's own storage
// unless they had to be converted or transBatch moved them), its stored matrices' shape after
// transBatch (1-D operands promoted to a row or a column), and `trans`, which the gemm applies.
template <class C>
struct Operand {
  std::vector<C> store;
  const C* data = nullptr;
  Shape shape;
  bool trans = false;
  int64_t rows() const { return shape[shape.size() - (trans ? 1 : 2)]; }  // of op(): M for A, K for B
  int64_t cols() const { return shape[shape.size() - (trans ? 2 : 1)]; }
  Shape batch() const { return Shape(shape.begin(), shape.end() - 2); }
};

template <class C>
Operand<C> operand(const Tensor& t, bool trans_batch, bool trans, bool is_a) {
  Operand<C> o;
  o.shape = t.shape();
  if (t.dtype() == dtype_of<C>) o.data = t.data<C>();
  else o.store = to_compute<C>(t), o.data = o.store.data();
  const size_t r = o.shape.size();
  if (r == 1) {  // (K) -> (1, K) for A, (K, 1) for B
    o.shape.insert(is_a ? o.shape.begin() : o.shape.end(), 1);
    return o;
  }
  o.trans = trans;
  if (trans_batch && r > 2) {  // (d0, P, last) -> (P, d0, last), P the product of dims 1 .. r-2
    const int64_t d0 = o.shape[0], last = o.shape[r - 1], P = t.size() / std::max<int64_t>(d0 * last, 1);
    std::vector<C> moved(size_t(t.size()));
    for (int64_t i = 0; i < d0; ++i)
      for (int64_t p = 0; p < P; ++p) std::copy_n(o.data + (i * P + p) * last, last, moved.data() + (p * d0 + i) * last);
    o.store = std::move(moved);
    o.data = o.store.data();
    o.shape.erase(o.shape.begin());
    o.shape.insert(o.shape.end() - 1, d0);
  }
  return o;
}

class FusedMatMul : public OpRun {
 public:
  using Types = FloatTypes;
  explicit FusedMatMul(const NodeContext& ctx)
      : alpha_(ctx.attr<float>("alpha", 1.0f)),
        trans_a_(ctx.attr<int64_t>("transA", 0) != 0),
        trans_b_(ctx.attr<int64_t>("transB", 0) != 0),
        trans_batch_a_(ctx.attr<int64_t>("transBatchA", 0) != 0),
        trans_batch_b_(ctx.attr<int64_t>("transBatchB", 0) != 0),
        weight_(ctx, 1, trans_b_) {}

  Values run(const Values& in, RunContext&) override {
    const Tensor& ta = input_tensor(in, 0);
    const Tensor& tb = input_tensor(in, 1);
    require_dtype(tb, ta.dtype(), "B");
    if (ta.rank() == 0 || tb.rank() == 0) fail_runtime("A and B must have at least one dimension");
    if (ta.dtype() == DType::Double) return {multiply<double>(ta, tb)};
    return {multiply<float>(ta, tb)};
  }

 private:
  template <class C>
  Tensor multiply(const Tensor& ta, const Tensor& tb) {
    const Operand<C> a = operand<C>(ta, trans_batch_a_, trans_a_, true), b = operand<C>(tb, trans_batch_b_, trans_b_, false);
    const int64_t M = a.rows(), K = a.cols(), N = b.cols();
    if (b.rows() != K)
      fail_runtime(fmt::format("op(A) of {} x {} and op(B) of {} x {} do not multiply: {} columns vs {} rows", M, K,
                               b.rows(), N, K, b.rows()));

    // Broadcast the batch dimensions (all but the last two), numpy style.
    const Shape a_batch = a.batch(), b_batch = b.batch();
    const size_t rank = std::max(a_batch.size(), b_batch.size());
    Shape batch(rank);
    for (size_t k = 0; k < rank; ++k) {
      const int64_t da = k < a_batch.size() ? a_batch[a_batch.size() - 1 - k] : 1;
      const int64_t db = k < b_batch.size() ? b_batch[b_batch.size() - 1 - k] : 1;
      if (da != db && da != 1 && db != 1)
        fail_runtime(fmt::format("batch dimensions of op(A) {} and op(B) {} do not broadcast", shape_to_string(a_batch),
                                 shape_to_string(b_batch)));
      batch[rank - 1 - k] = da == 1 ? db : da;  // 1 broadcasts to the other, even to 0 (not max: found by fuzzing)
    }
    const int64_t count = shape_size(batch);
    Shape out = batch;
    if (ta.rank() > 1) out.push_back(M);
    if (tb.rank() > 1) out.push_back(N);
    Tensor y(ta.dtype(), out);
    std::vector<C> y_store;
    C* py = y.dtype() == dtype_of<C> ? y.data<C>() : (y_store.resize(size_t(y.size())), y_store.data());

    if (count > 0 && M > 0 && N > 0) {
      // One product with every matrix of A stacked into its rows when B is a single matrix and A
      // is neither transposed nor broadcast (a weight, the usual case): B's panels, if packed, serve it.
      if (shape_size(b_batch) == 1 && !a.trans && shape_size(a_batch) == count) {
        std::shared_ptr<const ConstantRhs> packed;
        if constexpr (std::is_same_v<C, float>)
          if (ta.dtype() == DType::Float && tb.rank() == 2) packed = weight_.get(tb, trans_b_);
        if constexpr (std::is_same_v<C, float>)
          if (packed) ops::gemm(false, count * M, a.data, *packed, py, false);
        if (!packed) ops::gemm(false, b.trans, count * M, N, K, a.data, b.data, py, false);
      } else {
        std::vector<int64_t> idx(rank, 0);
        for (int64_t i = 0; i < count; ++i) {
          ops::gemm(a.trans, b.trans, M, N, K, a.data + batch_offset(idx, a_batch) * M * K,
                    b.data + batch_offset(idx, b_batch) * K * N, py + i * M * N, false);
          for (size_t d = rank; d-- > 0;) {
            if (++idx[d] < batch[d]) break;
            idx[d] = 0;
          }
        }
      }
      if (alpha_ != 1.0f)
        for (int64_t i = 0; i < y.size(); ++i) py[i] *= C(alpha_);
    }
    if (!y_store.empty()) write_compute(y, y_store);
    return y;
  }

  // The matrix index inside an operand with batch dims `dims` for the broadcast batch index `idx`.
  static int64_t batch_offset(const std::vector<int64_t>& idx, const Shape& dims) {
    int64_t off = 0;
    for (size_t k = 0; k < dims.size(); ++k) {
      const int64_t i = idx[idx.size() - dims.size() + k];
      off = off * dims[k] + (dims[k] == 1 ? 0 : i);
    }
    return off;
  }
  float alpha_;
  bool trans_a_, trans_b_, trans_batch_a_, trans_batch_b_;
  ConstantRhsCache weight_;  // B packed when it is a 2-D float initializer
};

}  // namespace

void register_fused_matmul(Registry& reg) {
  reg.add("com.microsoft", "FusedMatMul", {1}, make<FusedMatMul>);
  reg.add("com.microsoft", "TransposeMatMul", {1}, make<FusedMatMul>);
}

}  // namespace refeval::ops::contrib
