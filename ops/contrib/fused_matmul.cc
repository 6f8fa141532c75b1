// com.microsoft FusedMatMul (v1), also registered under its deprecated name TransposeMatMul:
//   Y = alpha * op(A) * op(B) with numpy matmul broadcasting over the batch dimensions.
// op() first applies transBatch (dim 0 moves just before the last dim: perm [1, ..., r-2, 0, r-1],
// what a fused Transpose of the batch into the rows looked like), then trans (swap the last two
// dims). Both flags are ignored on a 1-D operand, as numpy's transpose of a vector is itself.
#include "contrib_common.h"
#include "refeval/registry.h"

namespace refeval::ops::contrib {
namespace {

// An operand after op(): its values and shape (1-D operands stay 1-D here).
struct Operand {
  std::vector<double> values;
  Shape shape;
};

Operand transformed(const Tensor& t, bool trans_batch, bool trans) {
  Operand o{to_doubles(t), t.shape()};
  const size_t r = o.shape.size();
  if (r < 2) return o;
  std::vector<size_t> perm(r);
  for (size_t d = 0; d < r; ++d) perm[d] = d;
  if (trans_batch && r > 2) {
    for (size_t d = 0; d + 2 < r; ++d) perm[d] = d + 1;
    perm[r - 2] = 0;
  }
  if (trans) std::swap(perm[r - 2], perm[r - 1]);
  Shape shape(r);
  for (size_t d = 0; d < r; ++d) shape[d] = o.shape[perm[d]];
  o.values = permute(o.values, o.shape, perm);
  o.shape = shape;
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
        trans_batch_b_(ctx.attr<int64_t>("transBatchB", 0) != 0) {}

  Values run(const Values& in, RunContext&) override {
    const Tensor& ta = input_tensor(in, 0);
    const Tensor& tb = input_tensor(in, 1);
    require_dtype(tb, ta.dtype(), "B");
    if (ta.rank() == 0 || tb.rank() == 0) fail_runtime("A and B must have at least one dimension");
    Operand a = transformed(ta, trans_batch_a_, trans_a_), b = transformed(tb, trans_batch_b_, trans_b_);
    const bool a_vec = a.shape.size() == 1, b_vec = b.shape.size() == 1;
    if (a_vec) a.shape.insert(a.shape.begin(), 1);  // (K) -> (1, K)
    if (b_vec) b.shape.push_back(1);                // (K) -> (K, 1)
    const int64_t M = a.shape[a.shape.size() - 2], K = a.shape.back(), N = b.shape.back();
    if (b.shape[b.shape.size() - 2] != K)
      fail_runtime(fmt::format("op(A) of shape {} and op(B) of shape {} do not multiply: {} columns vs {} rows",
                               shape_to_string(a.shape), shape_to_string(b.shape), K, b.shape[b.shape.size() - 2]));

    // Broadcast the batch dimensions (all but the last two), numpy style.
    const Shape a_batch(a.shape.begin(), a.shape.end() - 2), b_batch(b.shape.begin(), b.shape.end() - 2);
    const size_t rank = std::max(a_batch.size(), b_batch.size());
    Shape batch(rank);
    for (size_t k = 0; k < rank; ++k) {
      const int64_t da = k < a_batch.size() ? a_batch[a_batch.size() - 1 - k] : 1;
      const int64_t db = k < b_batch.size() ? b_batch[b_batch.size() - 1 - k] : 1;
      if (da != db && da != 1 && db != 1)
        fail_runtime(fmt::format("batch dimensions of op(A) {} and op(B) {} do not broadcast", shape_to_string(a.shape),
                                 shape_to_string(b.shape)));
      batch[rank - 1 - k] = da == 1 ? db : da;  // 1 broadcasts to the other, even to 0 (not max: found by fuzzing)
    }
    const int64_t count = shape_size(batch);
    std::vector<double> y(size_t(count * M * N));
    std::vector<int64_t> idx(rank, 0);
    for (int64_t i = 0; i < count; ++i) {
      gemm(false, false, M, N, K, a.values.data() + batch_offset(idx, a_batch) * M * K,
           b.values.data() + batch_offset(idx, b_batch) * K * N, y.data() + i * M * N);
      for (size_t d = rank; d-- > 0;) {
        if (++idx[d] < batch[d]) break;
        idx[d] = 0;
      }
    }
    for (double& v : y) v *= double(alpha_);

    Shape out = batch;
    if (!a_vec) out.push_back(M);
    if (!b_vec) out.push_back(N);
    return {from_doubles(ta.dtype(), out, y)};
  }

 private:
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
};

}  // namespace

void register_fused_matmul(Registry& reg) {
  reg.add("com.microsoft", "FusedMatMul", {1}, make<FusedMatMul>);
  reg.add("com.microsoft", "TransposeMatMul", {1}, make<FusedMatMul>);
}

}  // namespace refeval::ops::contrib
