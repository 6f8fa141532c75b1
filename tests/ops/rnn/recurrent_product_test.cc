// The packed recurrent product (ops/rnn/recurrent_product.cc): out = h R^T to within rounding of
// a double dot product, and every element summed in one order whatever its place: equal rows of
// h give equal rows of out, a row's result does not depend on the batch size, and equal rows of
// R (in full and partial panels) give equal columns; the same bits on 1 and 2 threads.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "../../../ops/rnn/rnn_common.h"
#include "refeval/threads.h"

using namespace refeval;

namespace {

template <class C>
std::vector<C> ramp(int64_t n, int seed) {
  std::vector<C> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = C(int((i + seed) * 7919 % 1009) - 504) * C(1.7e-3);
  return v;
}

template <class C>
void check_product() {
  // 1, 3, 4 and 9 rows: partial and full tiles of 4 rows; N = 101 and K = 257: a partial last panel
  // and K of no vector multiple.
  const int64_t N = 101, K = 257;
  std::vector<C> R = ramp<C>(N * K, 2);
  for (int64_t k = 0; k < K; ++k) R[size_t(100 * K + k)] = R[size_t(k)];  // R's last row (a partial panel) = row 0
  const ops::PackedRecurrent<C> packed(R.data(), N, K);
  const double tol = sizeof(C) == 4 ? 1e-5 : 1e-13;
  std::vector<C> single;  // out of the first row of h computed alone
  for (int64_t rows : {1, 3, 4, 9}) {
    CAPTURE(rows);
    std::vector<C> h = ramp<C>(rows * K, 1);
    if (rows == 9)
      for (int64_t k = 0; k < K; ++k) h[size_t(8 * K + k)] = h[size_t(k)];  // row 8 (a tile of one) = row 0
    std::vector<C> out(size_t(rows * N), C(-1));
    packed.multiply(rows, h.data(), out.data());
    for (int64_t b = 0; b < rows; ++b)
      for (int64_t n = 0; n < N; ++n) {
        double want = 0;
        for (int64_t k = 0; k < K; ++k) want += double(h[size_t(b * K + k)]) * double(R[size_t(n * K + k)]);
        REQUIRE(std::abs(double(out[size_t(b * N + n)]) - want) <= tol * (1 + std::abs(want)));
      }
    if (rows == 1) single = out;
    CHECK(std::memcmp(out.data(), single.data(), size_t(N) * sizeof(C)) == 0);  // row 0 as when alone
    if (rows == 9) CHECK(std::memcmp(&out[size_t(8 * N)], out.data(), size_t(N) * sizeof(C)) == 0);
    for (int64_t b = 0; b < rows; ++b) CHECK(out[size_t(b * N + 100)] == out[size_t(b * N)]);
  }
}

}  // namespace

TEST_CASE("packed recurrent product: h R^T, each element summed the same way wherever it sits") {
  check_product<float>();
  check_product<double>();
}

TEST_CASE("packed recurrent product: the same bits on 1 and 2 threads") {
  const int64_t rows = 4, N = 1024, K = 256;  // enough panels for the product to split
  const std::vector<float> R = ramp<float>(N * K, 3), h = ramp<float>(rows * K, 4);
  const ops::PackedRecurrent<float> packed(R.data(), N, K);
  std::vector<float> one(size_t(rows * N)), two(size_t(rows * N));
  set_thread_count(1);
  packed.multiply(rows, h.data(), one.data());
  set_thread_count(2);
  packed.multiply(rows, h.data(), two.data());
  set_thread_count(1);
  CHECK(std::memcmp(one.data(), two.data(), one.size() * sizeof(float)) == 0);
}
