// Helpers of the contrib family (ONNX Runtime's com.microsoft operators). The kernels compute in
// double: values are widened on the way in and rounded once to the output type on the way out,
// so a fused operator is at least as accurate as the unfused graph it replaces. The exceptions
// are products, which float tensors take in float as the unfused MatMuls do: Attention's input
// projection (exactly the unfused MatMul + Add), FusedMatMul, and the attention cores' q . k and
// probabilities times v (attention_core.h).
// Only the public operator API is used, as a custom-operator author would.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "refeval/compute_vector.h"
#include "refeval/dispatch.h"
#include "refeval/op_run.h"
#include "refeval/tensor.h"

namespace refeval::ops::contrib {

// The floating types ORT registers for most of these operators.
using FloatTypes = Floats;

// Refuses an element type outside List with an error naming it (the engine adds the node).
template <class List> void require_types(DType t) { visit<List>(t, []<class T>() {}); }

// Errors name the input and say what was expected, e.g. "gamma has shape (3,), expected (4,)".
inline void require_shape(const Tensor& t, const Shape& want, const std::string& name) {
  if (t.shape() != want)
    fail_runtime(fmt::format("{} has shape {}, expected {}", name, shape_to_string(t.shape()), shape_to_string(want)));
}
inline void require_rank(const Tensor& t, size_t lo, size_t hi, const std::string& name) {
  if (t.rank() < lo || t.rank() > hi)
    fail_runtime(lo == hi ? fmt::format("{} must have rank {}, got shape {}", name, lo, shape_to_string(t.shape()))
                          : fmt::format("{} must have rank {} to {}, got shape {}", name, lo, hi, shape_to_string(t.shape())));
}
inline void require_dtype(const Tensor& t, DType want, const std::string& name) {
  if (t.dtype() != want)
    fail_runtime(fmt::format("{} has element type {}, expected {}", name, dtype_short_name(t.dtype()), dtype_short_name(want)));
}
// An optional 1-D parameter of length n (gamma, beta, bias), or an empty vector when absent.
inline std::vector<double> vector_input(const Values& in, size_t i, int64_t n, DType dtype, const std::string& name) {
  if (!has_value(in, i)) return {};
  const Tensor& t = input_tensor(in, i);
  require_dtype(t, dtype, name);
  require_shape(t, {n}, name);
  return to_doubles(t);
}
// Integer tensor values (int32 or int64) widened to int64.
inline std::vector<int64_t> to_int64s(const Tensor& t, const std::string& name) {
  if (t.dtype() != DType::Int32 && t.dtype() != DType::Int64)
    fail_runtime(fmt::format("{} has element type {}, expected int32 or int64", name, dtype_short_name(t.dtype())));
  return visit<TypeList<int32_t, int64_t>>(t.dtype(), [&]<class T>() {
    std::vector<int64_t> v(size_t(t.size()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = int64_t(t.data<T>()[i]);
    return v;
  });
}

// One row of normalize_rows: the n values of `row` normalised into y, each computed in double and
// rounded once to Out (float or double); beta may be null. Returns the row's mean (0 when rms)
// and inv_std. The float32 kernels call it row by row from a small double buffer instead of
// widening whole tensors.
struct RowStats {
  double mean, inv_std;
};
template <class Out>
RowStats normalize_row(const double* row, int64_t n, double epsilon, bool rms, const double* gamma, const double* beta, Out* y);

// Normalises `rows` rows of n values each: y = (x - mean) * inv_std * gamma + beta with
// inv_std = 1 / sqrt(var + epsilon), or without the mean when `rms` (RMS normalisation:
// inv_std = 1 / sqrt(mean(x^2) + epsilon)). beta may be empty; mean/inv_std receive one value
// per row when not null.
void normalize_rows(const std::vector<double>& x, int64_t n, double epsilon, bool rms, const std::vector<double>& gamma,
                    const std::vector<double>& beta, std::vector<double>& y, std::vector<double>* mean,
                    std::vector<double>* inv_std);

// c (M x N, row-major) = a * op(b), a M x K and op(b) K x N; a transposed b is stored N x K.
// Eigen's GEMM in double.
void gemm(bool trans_b, int64_t M, int64_t N, int64_t K, const double* a, const double* b, double* c);

}  // namespace refeval::ops::contrib
