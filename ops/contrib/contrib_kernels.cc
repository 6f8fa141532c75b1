// The numeric kernels shared by the contrib family: row normalisation (LayerNormalization and
// its skip/simplified/embedding variants) and a double-precision GEMM on Eigen.
#include <cmath>

// GCC 12 reports false -Wmaybe-uninitialized warnings inside Eigen's AVX-512 double kernels.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Core>
#pragma GCC diagnostic pop

#include "contrib_common.h"

namespace refeval::ops::contrib {

namespace {
// The sum of n values in eight interleaved partial sums: vectorised (a single running sum is a
// chain of dependent adds, 4 cycles each), and as accurate.
template <class F> double sum8(int64_t n, const F& term) {
  // In two registers of 4 (as an array GCC kept 8 scalars; as one 8-lane vector, on AVX2, it
  // went through memory: SimplifiedLayerNormalization 4x ORT's time).
  typedef double Double4 __attribute__((vector_size(32)));
  Double4 low = {}, high = {};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    low += Double4{term(j), term(j + 1), term(j + 2), term(j + 3)};
    high += Double4{term(j + 4), term(j + 5), term(j + 6), term(j + 7)};
  }
  const double acc[8] = {low[0], low[1], low[2], low[3], high[0], high[1], high[2], high[3]};
  double s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  for (; j < n; ++j) s += term(j);
  return s;
}
}  // namespace

template <class Out>
RowStats normalize_row(const double* row, int64_t n, double epsilon, bool rms, const double* gamma, const double* beta, Out* y) {
  const double m = rms ? 0.0 : sum8(n, [&](int64_t j) { return row[j]; }) / double(n);
  // two passes: the variance of the centred values, not E[x^2] - E[x]^2
  const double sq = sum8(n, [&](int64_t j) { return (row[j] - m) * (row[j] - m); });
  const double inv = 1.0 / std::sqrt(sq / double(n) + epsilon);
  if (beta)
    for (int64_t j = 0; j < n; ++j) y[j] = Out((row[j] - m) * inv * gamma[j] + beta[j]);
  else
    for (int64_t j = 0; j < n; ++j) y[j] = Out((row[j] - m) * inv * gamma[j]);
  return {m, inv};
}
template RowStats normalize_row<float>(const double*, int64_t, double, bool, const double*, const double*, float*);
template RowStats normalize_row<double>(const double*, int64_t, double, bool, const double*, const double*, double*);

void normalize_rows(const std::vector<double>& x, int64_t n, double epsilon, bool rms, const std::vector<double>& gamma,
                    const std::vector<double>& beta, std::vector<double>& y, std::vector<double>* mean,
                    std::vector<double>* inv_std) {
  const int64_t rows = n == 0 ? 0 : int64_t(x.size()) / n;
  y.assign(x.size(), 0.0);
  if (mean) mean->assign(size_t(rows), 0.0);
  if (inv_std) inv_std->assign(size_t(rows), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const RowStats st = normalize_row(x.data() + r * n, n, epsilon, rms, gamma.data(), beta.empty() ? nullptr : beta.data(),
                                      y.data() + r * n);
    if (mean) (*mean)[size_t(r)] = st.mean;
    if (inv_std) (*inv_std)[size_t(r)] = st.inv_std;
  }
}

void gemm(bool trans_b, int64_t M, int64_t N, int64_t K, const double* a, const double* b, double* c) {
  using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<Mat> C(c, M, N);
  Eigen::Map<const Mat> A(a, M, K);
  Eigen::Map<const Mat> B(b, trans_b ? N : K, trans_b ? K : N);
  if (trans_b) C.noalias() = A * B.transpose();
  else C.noalias() = A * B;
}

}  // namespace refeval::ops::contrib
