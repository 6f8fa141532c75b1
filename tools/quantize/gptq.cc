#include "gptq.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <Eigen/Cholesky>
#include <Eigen/Core>

#include "refeval/compute_vector.h"

namespace refeval::quantize {

HessianCollector::HessianCollector(const Graph& graph) {
  for (const Node& n : graph.nodes)
    if (n.op_type == "MatMul" && n.domain.empty() && n.inputs.size() == 2 && graph.find_initializer(n.inputs[1]))
      inputs_.insert(n.inputs[0]);
}

void HessianCollector::before_node(const NodeEvent& e) {
  if (e.depth || e.node.op_type != "MatMul" || !inputs_.count(e.node.inputs[0]) || !e.inputs[0].is_tensor()) return;
  const Tensor& t = e.inputs[0].tensor();
  if (t.dtype() != DType::Float || t.rank() == 0) return;
  const int64_t K = t.dim(t.rank() - 1), rows = K ? t.size() / K : 0;
  const std::vector<double> x = to_compute<double>(t);
  std::vector<double>& h = hessians[e.node.inputs[0]];
  h.resize(size_t(K * K), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < K; ++i)
      if (const double xi = x[size_t(r * K + i)]; xi != 0)
        for (int64_t j = 0; j < K; ++j) h[size_t(i * K + j)] += xi * x[size_t(r * K + j)];
}


std::vector<float> gptq_dequantized(const float* w, int64_t K, int64_t N, std::vector<double> hessian, int64_t block_size) {
  using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<Matrix> H(hessian.data(), K, K);
  // An input that never varied carries no information: its row is quantized alone (H's 1 on the
  // diagonal). Then the usual damping, 1% of the mean diagonal.
  for (int64_t k = 0; k < K; ++k)
    if (H(k, k) == 0) H(k, k) = 1;
  H.diagonal().array() += 0.01 * H.diagonal().mean();
  // The upper Cholesky factor of H^-1: row k holds how row k's error moves the rows after it.
  const Matrix inverse = H.llt().solve(Matrix::Identity(K, K));
  const Matrix U = inverse.llt().matrixU();
  std::vector<double> W(w, w + K * N);
  std::vector<float> out(size_t(K * N));
  std::vector<float> scale(static_cast<size_t>(N)), zero(static_cast<size_t>(N));
  std::vector<double> error(static_cast<size_t>(N));
  for (int64_t k = 0; k < K; ++k) {
    if (k % block_size == 0)  // the block's asymmetric RTN grid, from the weight as updated so far
      for (int64_t n = 0; n < N; ++n) {
        float lo = 0, hi = 0;
        for (int64_t j = k; j < std::min(K, k + block_size); ++j) lo = std::min(lo, float(W[j * N + n])), hi = std::max(hi, float(W[j * N + n]));
        scale[size_t(n)] = (hi - lo) / 15.0f;
        zero[size_t(n)] = scale[size_t(n)] != 0 ? std::clamp(std::round(-lo / scale[size_t(n)]), 0.0f, 15.0f) : 0.0f;
      }
    const double d = U(k, k);
    for (int64_t n = 0; n < N; ++n) {
      const float s = scale[size_t(n)], v = float(W[k * N + n]);
      const float q = s != 0 ? (std::clamp(std::round(v / s + zero[size_t(n)]), 0.0f, 15.0f) - zero[size_t(n)]) * s : 0.0f;
      out[size_t(k * N + n)] = q;
      error[size_t(n)] = (double(v) - double(q)) / d;
    }
    for (int64_t j = k + 1; j < K; ++j) {
      const double u = U(k, j);
      for (int64_t n = 0; n < N; ++n) W[j * N + n] -= u * error[size_t(n)];
    }
  }
  return out;
}

}  // namespace refeval::quantize
