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

std::vector<double> permute(const std::vector<double>& v, const Shape& shape, const std::vector<size_t>& perm) {
  const size_t r = shape.size();
  std::vector<int64_t> in_strides(r, 1);
  for (size_t d = r; d-- > 1;) in_strides[d - 1] = in_strides[d] * shape[d];
  Shape out_shape(r);
  std::vector<int64_t> strides(r);  // input stride of each output dimension
  for (size_t d = 0; d < r; ++d) {
    out_shape[d] = shape[perm[d]];
    strides[d] = in_strides[perm[d]];
  }
  std::vector<double> out(v.size());
  std::vector<int64_t> idx(r, 0);
  int64_t off = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = v[size_t(off)];
    for (size_t d = r; d-- > 0;) {
      off += strides[d];
      if (++idx[d] < out_shape[d]) break;
      off -= strides[d] * out_shape[d];
      idx[d] = 0;
    }
  }
  return out;
}

void normalize_rows(const std::vector<double>& x, int64_t n, double epsilon, bool rms, const std::vector<double>& gamma,
                    const std::vector<double>& beta, std::vector<double>& y, std::vector<double>* mean,
                    std::vector<double>* inv_std) {
  const int64_t rows = n == 0 ? 0 : int64_t(x.size()) / n;
  y.assign(x.size(), 0.0);
  if (mean) mean->assign(size_t(rows), 0.0);
  if (inv_std) inv_std->assign(size_t(rows), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = x.data() + r * n;
    double m = 0;
    if (!rms) {
      for (int64_t j = 0; j < n; ++j) m += row[j];
      m /= double(n);
    }
    double sq = 0;  // two passes: the variance of the centred values, not E[x^2] - E[x]^2
    for (int64_t j = 0; j < n; ++j) sq += (row[j] - m) * (row[j] - m);
    const double inv = 1.0 / std::sqrt(sq / double(n) + epsilon);
    for (int64_t j = 0; j < n; ++j)
      y[size_t(r * n + j)] = (row[j] - m) * inv * gamma[size_t(j)] + (beta.empty() ? 0.0 : beta[size_t(j)]);
    if (mean) (*mean)[size_t(r)] = m;
    if (inv_std) (*inv_std)[size_t(r)] = inv;
  }
}

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const double* a, const double* b, double* c) {
  using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<Mat> C(c, M, N);
  Eigen::Map<const Mat> A(a, trans_a ? K : M, trans_a ? M : K);
  Eigen::Map<const Mat> B(b, trans_b ? N : K, trans_b ? K : N);
  if (trans_a && trans_b) C.noalias() = A.transpose() * B.transpose();
  else if (trans_a) C.noalias() = A.transpose() * B;
  else if (trans_b) C.noalias() = A * B.transpose();
  else C.noalias() = A * B;
}

}  // namespace refeval::ops::contrib
