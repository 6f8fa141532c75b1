// MatMulInteger against an oracle written here (int64 sums of (a - za)(b - zb), wrapped to int32
// at the end) on shapes that fill the int16-pair kernel's tiles in part (M not a multiple of 4, N
// of 8, K odd), zero points per tensor, per row and per column, int8 and uint8, a batch with B
// broadcast, and sums past the int32 range (wrap-around).
#include <random>

#include "refeval/evaluator.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::node;

namespace {

template <class T>
void check_case(std::mt19937& gen, Shape as, Shape bs, bool per_row, bool per_col, bool extremes) {
  auto r = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen); };
  const int lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
  const int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  std::vector<T> a(size_t(shape_size(as))), b(size_t(shape_size(bs)));
  for (T& v : a) v = T(extremes ? hi : r(lo, hi));
  for (T& v : b) v = T(extremes ? hi : r(lo, hi));
  std::vector<T> za(per_row ? size_t(M) : 1), zb(per_col ? size_t(N) : 1);
  for (T& v : za) v = T(extremes ? lo : r(lo, hi));
  for (T& v : zb) v = T(extremes ? lo : r(lo, hi));
  const Tensor zat = per_row ? tensor<T>({M}, za) : tensor<T>({}, za), zbt = per_col ? tensor<T>({N}, zb) : tensor<T>({}, zb);
  const Tensor y = run_node(node("MatMulInteger", {"a", "b", "za", "zb"}, {"y"}),
                            {tensor<T>(as, a), tensor<T>(bs, b), zat, zbt}, 10)[0].tensor();
  const int64_t batches = shape_size(as) / (M * K), b_batches = shape_size(bs) / (K * N);
  std::vector<int32_t> want(size_t(batches * M * N));
  for (int64_t i = 0; i < batches; ++i)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        int64_t sum = 0;
        for (int64_t k = 0; k < K; ++k)
          sum += (int64_t(a[size_t((i * M + m) * K + k)]) - za[per_row ? size_t(m) : 0]) *
                 (int64_t(b[size_t(((b_batches == 1 ? 0 : i) * K + k) * N + n)]) - zb[per_col ? size_t(n) : 0]);
        want[size_t((i * M + m) * N + n)] = int32_t(uint32_t(uint64_t(sum)));
      }
  Shape ys = as;
  ys.back() = N;
  check_equal(y, tensor<int32_t>(ys, want), Tolerance{0, 0});
  // B and its zero point as initializers: the operator packs (B - zb) once when it is made, and a
  // run reads those panels; the same oracle.
  if (bs.size() == 2) {
    const DType t = std::is_same_v<T, int8_t> ? DType::Int8 : DType::UInt8;
    std::vector<build::DimSpec> a_dims(as.begin(), as.end()), za_dims;
    if (per_row) za_dims.push_back(M);
    const Model m = build::model(build::graph("g", {node("MatMulInteger", {"a", "b", "za", "zb"}, {"y"})},
                                              {build::tensor_info("a", t, a_dims), build::tensor_info("za", t, za_dims)},
                                              {build::tensor_info_unknown_rank("y", DType::Int32)},
                                              {Initializer{"b", tensor<T>(bs, b)}, Initializer{"zb", zbt}}));
    ReferenceEvaluator ev(m);
    const Tensor packed = ev.run({}, {{"a", tensor<T>(as, a)}, {"za", zat}})[0].tensor();
    check_equal(packed, tensor<int32_t>(ys, want), Tolerance{0, 0});
  }
}

}  // namespace

TEST_CASE("MatMulInteger matches an int64 oracle: partial tiles, zero point layouts, broadcast batches, wrap-around") {
  std::mt19937 gen(12);
  check_case<uint8_t>(gen, {5, 7}, {7, 13}, false, false, false);
  check_case<int8_t>(gen, {9, 31}, {31, 17}, true, true, false);
  check_case<uint8_t>(gen, {1, 1}, {1, 1}, true, false, false);
  check_case<int8_t>(gen, {3, 4, 66}, {66, 9}, false, true, false);    // a batch of 3, one B
  check_case<uint8_t>(gen, {2, 3, 8}, {2, 8, 24}, true, false, false);  // a batch of 2, one B each
  check_case<uint8_t>(gen, {2, 40001}, {40001, 3}, false, false, true);  // 40001 * 255^2 wraps past 2^31
}
