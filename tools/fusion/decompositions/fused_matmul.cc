// com.microsoft FusedMatMul (v1): Y = alpha * op(A) * op(B), op transposing the last two
// dimensions when transA / transB is set (numpy matmul broadcasting otherwise). The rare
// transBatchA / transBatchB forms are not decomposed.
#include <numeric>

#include "decompositions/decompositions.h"

namespace refeval::fusion {
namespace {

std::string maybe_transpose(GraphWriter& w, size_t input, const char* flag) {
  const size_t rank = w.sample(input).rank();
  if (!w.attr_int(flag, 0) || rank < 2) return w.in(input);
  std::vector<int64_t> perm(rank);
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[rank - 1], perm[rank - 2]);
  return w.op("Transpose", {w.in(input)}, {build::attr("perm", perm)});
}

}  // namespace

void decompose_fused_matmul(GraphWriter& w, int64_t) {
  if (w.attr_int("transBatchA", 0) || w.attr_int("transBatchB", 0)) w.unsupported("transBatchA/transBatchB are not decomposed");
  const std::string product = w.op("MatMul", {maybe_transpose(w, 0, "transA"), maybe_transpose(w, 1, "transB")});
  w.output(0, w.op("Mul", {product, w.scalar(w.attr_float("alpha", 1.0f), w.dtype(0))}));
}

}  // namespace refeval::fusion
