// The attention core of attention_core.h.
#include "attention_core.h"

#include "../linalg/linalg_common.h"
#include "../math/vector_math.h"
#include "refeval/threads.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace refeval::ops::contrib {

AttentionAttrs::AttentionAttrs(const NodeContext& ctx)
    : heads(ctx.required<int64_t>("num_heads")),
      unidirectional(ctx.attr<int64_t>("unidirectional", 0) != 0),
      mask_filter_value(ctx.attr<float>("mask_filter_value", -10000.0f)),
      scale(ctx.attr<float>("scale", 0.0f)) {
  if (heads <= 0) ctx.fail(fmt::format("num_heads must be positive, got {}", heads));
}

template <class T>
void finish_problem(AttentionProblemOf<T>& p, int64_t kv_length, const AttentionAttrs& a, const Values& in,
                    const AttentionMaskInputs& inputs, DType dtype) {
  p.total = p.past + kv_length;
  p.causal = a.unidirectional, p.mask_filter_value = a.mask_filter_value;
  p.scale = attention_scale(a.scale, p.head_size);
  if (has_value(in, inputs.key_padding_mask))
    p.hidden = key_padding_mask(input_tensor(in, inputs.key_padding_mask), p, inputs.key_padding_mask_name);
  if (has_value(in, inputs.attention_bias)) set_attention_bias(p, input_tensor(in, inputs.attention_bias), dtype);
}

template <class T>
void prepend_past(AttentionProblemOf<T>& p, const std::vector<T>& past_k, const std::vector<T>& past_v, int64_t P, int64_t L) {
  p.past = P;
  p.k = concat_sequence(past_k, p.k, p.batch, p.heads, P, L, p.head_size);
  p.v = concat_sequence(past_v, p.v, p.batch, p.heads, P, L, p.v_head_size);
}

template <class T>
std::vector<std::vector<T>> unpack_interleaved(const std::vector<T>& packed, int64_t rows, int64_t N, int64_t parts,
                                               int64_t h) {
  std::vector<std::vector<T>> out(size_t(parts), std::vector<T>(size_t(rows * N * h)));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t part = 0; part < parts; ++part)
        std::copy_n(packed.begin() + ((r * N + n) * parts + part) * h, h, out[size_t(part)].begin() + (r * N + n) * h);
  return out;
}

void product(bool trans_b, int64_t M, int64_t N, int64_t K, const float* a, const float* b, float* c) {
  refeval::ops::gemm(false, trans_b, M, N, K, a, b, c, false);
}
void product(bool trans_b, int64_t M, int64_t N, int64_t K, const double* a, const double* b, double* c) {
  gemm(trans_b, M, N, K, a, b, c);
}

template <class T>
void weighted_rows(const T* w, const T* values, int64_t n, int64_t hv, T* out) {
  std::fill(out, out + hv, T(0));
  for (int64_t j = 0; j < n; ++j) {
    const T wj = w[j], *row = values + j * hv;
    for (int64_t d = 0; d < hv; ++d) out[d] += wj * row[d];
  }
}

double attention_scale(float scale, int64_t head_size) {
  return scale != 0 ? double(scale) : 1.0 / std::sqrt(double(head_size));
}

double row_max(const double* x, int64_t n) {
  constexpr int64_t kLanes = 4;
  double top[kLanes] = {x[0], x[0], x[0], x[0]};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int64_t l = 0; l < kLanes; ++l) top[l] = x[j + l] > top[l] ? x[j + l] : top[l];
  for (; j < n; ++j) top[0] = x[j] > top[0] ? x[j] : top[0];
  return std::max(std::max(top[0], top[1]), std::max(top[2], top[3]));
}

double exp_shifted(double* x, int64_t n, double top) {
  constexpr double kFloor = -700.0;
  static const double floor_value = [] {
    double v = kFloor;
    exp_doubles(&v, &v, 1);
    return v;
  }();
  for (int64_t j = 0; j < n; ++j) x[j] = std::max(x[j] - top, kFloor);
  exp_doubles(x, x, n);
  // Four running sums (one vector register), added pairwise: one chain of dependent additions
  // took as long as the exponentials.
  constexpr int64_t kLanes = 4;
  double acc[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int64_t l = 0; l < kLanes; ++l) acc[l] += x[j + l] = x[j + l] <= floor_value ? 0.0 : x[j + l];
  double sum = (acc[0] + acc[2]) + (acc[1] + acc[3]);
  for (; j < n; ++j) sum += x[j] = x[j] <= floor_value ? 0.0 : x[j];
  return sum;
}

namespace {
// Fills score (S x T) with the pre-softmax scores of batch b, head n: the scaled dot products
// plus the key padding or causal mask and attention_bias. `raw` is scratch of T values (the
// product's own output before it is widened, and the transposed keys).
template <class T>
void head_scores(const AttentionProblemOf<T>& p, int64_t b, int64_t n, double* score, std::vector<T>& raw) {
  const int64_t N = p.heads, S = p.seq, T_ = p.total, h = p.head_size, bn = b * N + n;
  const T* q = p.q.data() + bn * S * h;
  const T* k = p.k.data() + bn * T_ * h;
  if (S == 1) {
    dot_rows(q, k, T_, h, score);
  } else if constexpr (std::is_same_v<T, double>) {
    product(true, S, T_, h, q, k, score);
  } else {
    // the keys transposed here, into raw's tail (the product would transpose a zeroed copy)
    raw.resize(size_t((S + h) * T_));
    T* kt = raw.data() + S * T_;
    for (int64_t j = 0; j < T_; ++j)
      for (int64_t d = 0; d < h; ++d) kt[d * T_ + j] = k[j * h + d];
    product(false, S, T_, h, q, kt, raw.data());
    std::copy(raw.begin(), raw.begin() + S * T_, score);
  }
  // p's numbers as locals: a store to a row could otherwise change them (both doubles), which
  // kept the loops scalar
  const double scale = p.scale, filter = p.mask_filter_value;
  // A future key (causal) is out of reach whatever mask_filter_value is: float's lowest, as ONNX
  // Runtime 1.30 sets it; a padded key gets mask_filter_value added. They differ where every past
  // key of a query is padded (a left-padded row's first queries) and the filter is finite
  // (-10000): the query then attends to its padded past keys, never to the future.
  const double future = -double(std::numeric_limits<float>::max());
  for (int64_t i = 0; i < S; ++i) {
    double* row = score + i * T_;
    for (int64_t j = 0; j < T_; ++j) row[j] *= scale;
    if (!p.hidden.empty()) {
      const char* hidden = p.hidden.data() + (b * S + i) * T_;
      for (int64_t j = 0; j < T_; ++j)
        if (hidden[j]) row[j] += filter;
    }
    if (p.causal)
      for (int64_t j = p.past + i + 1; j < T_; ++j) row[j] = future;
    if (!p.bias.empty()) {
      const int64_t bb = p.bias_shape[0] == 1 ? 0 : b, bh = p.bias_shape[1] == 1 ? 0 : n;
      const double* bias = p.bias.data() + ((bb * p.bias_shape[1] + bh) * S + i) * T_;
      for (int64_t j = 0; j < T_; ++j) row[j] += bias[j];
    }
    // A float score with its mask is a float, as in ONNX Runtime's kernel and the unfused graph:
    // a large finite mask (-1e9, -10000 on big scores) absorbs the score there, so a row whose
    // every key is masked comes out uniform as the export computes it, where double would still
    // rank the keys by score; and beyond float's range it is -inf, as a key hidden by two masks
    // of float's lowest is in the export (CLIP's causal and padding masks added in turn).
    if constexpr (std::is_same_v<T, float>)
      for (int64_t j = 0; j < T_; ++j) row[j] = double(float(row[j]));
  }
}
}  // namespace

template <class T>
std::vector<double> attention_scores(const AttentionProblemOf<T>& p) {
  std::vector<double> scores(size_t(p.batch * p.heads * p.seq * p.total));
  std::vector<T> raw;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t n = 0; n < p.heads; ++n)
      head_scores(p, b, n, scores.data() + (b * p.heads + n) * p.seq * p.total, raw);
  return scores;
}

template <class T>
std::vector<T> attend(const AttentionProblemOf<T>& p) {
  const int64_t B = p.batch, N = p.heads, S = p.seq, T_ = p.total, hv = p.v_head_size;
  std::vector<T> out(size_t(B * S * N * hv), T(0));
  if (T_ == 0) return out;
  // One query row: heads in parallel, at least ~64k multiply-adds a thread. Longer queries: one
  // head after another, their products split across the threads (which must not nest).
  const int64_t head_work = T_ * (p.head_size + hv);
  const int64_t grain = S == 1 ? std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(head_work, 1)) : B * N;
  parallel_for(B * N, grain, [&](int64_t first, int64_t last) {
    std::vector<double> score(size_t(S * T_));
    std::vector<T> raw, weights(size_t(S * T_)), head(size_t(S * hv));
    for (int64_t bn = first; bn < last; ++bn) {
      const int64_t b = bn / N, n = bn % N;
      head_scores(p, b, n, score.data(), raw);
      for (int64_t i = 0; i < S; ++i) {
        double* row = score.data() + i * T_;
        const double top = row_max(row, T_);
        const double sum = exp_shifted(row, T_, top);
        // times the reciprocal (a division per key cost as much as the exponentials): 1 ulp in
        // double at most, below the rounding to T that follows
        const double inv = 1.0 / sum;
        for (int64_t j = 0; j < T_; ++j) weights[size_t(i * T_ + j)] = T(row[j] * inv);
      }
      // out[b, i, n, :] = sum_j weights[i, j] * v[b, n, j, :]
      const T* v = p.v.data() + bn * T_ * hv;
      if (S == 1) weighted_rows(weights.data(), v, T_, hv, head.data());
      else product(false, S, hv, T_, weights.data(), v, head.data());
      for (int64_t i = 0; i < S; ++i) std::copy_n(head.data() + i * hv, hv, out.data() + ((b * S + i) * N + n) * hv);
    }
  });
  return out;
}

template <class T>
void set_attention_bias(AttentionProblemOf<T>& p, const Tensor& bias, DType dtype) {
  require_dtype(bias, dtype, "attention_bias");
  const Shape& s = bias.shape();
  if (s.size() != 4 || (s[0] != 1 && s[0] != p.batch) || (s[1] != 1 && s[1] != p.heads) || s[2] != p.seq || s[3] != p.total)
    fail_runtime(fmt::format("attention_bias has shape {}, expected ({} or 1, {} or 1, {}, {})", shape_to_string(s), p.batch,
                             p.heads, p.seq, p.total));
  p.bias = to_doubles(bias);
  p.bias_shape = s;
}

template <class C>
std::vector<char> key_padding_mask(const Tensor& mask, const AttentionProblemOf<C>& p, const std::string& name) {
  const int64_t B = p.batch, S = p.seq, T = p.total;
  const std::vector<int64_t> m = to_int64s(mask, name);
  const Shape& s = mask.shape();
  std::vector<char> hidden(size_t(B * S * T), 0);
  auto hide_if = [&](auto&& is_hidden) {
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < S; ++i)
        for (int64_t j = 0; j < T; ++j) hidden[size_t((b * S + i) * T + j)] = is_hidden(b, i, j) ? 1 : 0;
    return hidden;
  };
  if (s == Shape{B}) return hide_if([&](int64_t b, int64_t, int64_t j) { return j >= m[size_t(b)]; });
  if (s == Shape{2 * B})
    return hide_if([&](int64_t b, int64_t, int64_t j) { return j >= m[size_t(b)] || j < m[size_t(B + b)]; });
  if (s.size() == 2 && s[1] == 1 && T != 1 && (s[0] == 1 || s[0] == B)) return {};  // dummy mask
  if (s == Shape{B, T}) return hide_if([&](int64_t b, int64_t, int64_t j) { return m[size_t(b * T + j)] == 0; });
  if (s == Shape{B, S, T}) return hide_if([&](int64_t b, int64_t i, int64_t j) { return m[size_t((b * S + i) * T + j)] == 0; });
  if (s.size() == 4 && s[0] == B && s[1] == 1 && s[2] == s[3] && s[2] >= p.past + S && s[3] >= T) {
    const int64_t M = s[2];
    return hide_if([&](int64_t b, int64_t i, int64_t j) { return m[size_t((b * M + p.past + i) * M + j)] == 0; });
  }
  fail_runtime(fmt::format("{} has shape {}; expected ({}), ({}), ({}, {}), ({}, {}, {}) or ({}, 1, M, M) with M >= {}", name,
                           shape_to_string(s), B, 2 * B, B, T, B, S, T, B, p.past + S));
}

namespace {
template <class T>
std::vector<T> split_rows(const T* rows, int64_t row_width, int64_t offset, int64_t B, int64_t L, int64_t N, int64_t size) {
  std::vector<T> out(size_t(B * N * L * size));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t l = 0; l < L; ++l)
      for (int64_t n = 0; n < N; ++n)
        std::copy_n(rows + (b * L + l) * row_width + offset + n * size, size, out.begin() + ((b * N + n) * L + l) * size);
  return out;
}
}  // namespace

template <class T>
std::vector<T> split_heads(const std::vector<T>& rows, int64_t row_width, int64_t offset, int64_t B, int64_t L, int64_t N,
                           int64_t size) {
  return split_rows(rows.data(), row_width, offset, B, L, N, size);
}

template <class T>
std::vector<T> split_heads(const Tensor& rows, int64_t row_width, int64_t offset, int64_t B, int64_t L, int64_t N,
                           int64_t size) {
  if constexpr (std::is_same_v<T, float>)
    if (rows.dtype() == DType::Float) return split_rows(rows.data<float>(), row_width, offset, B, L, N, size);
  return split_rows(to_compute<T>(rows).data(), row_width, offset, B, L, N, size);
}

template <class T>
void add_head_bias(std::vector<T>& heads, const std::vector<double>& bias, int64_t N, int64_t L, int64_t size) {
  if (bias.empty() || size == 0 || L == 0) return;
  for (int64_t r = 0; r < int64_t(heads.size()) / size; ++r) {  // row r of head (r / L) % N
    T* x = heads.data() + r * size;
    const double* b = bias.data() + (r / L) % N * size;
    for (int64_t d = 0; d < size; ++d) x[d] = T(double(x[d]) + b[d]);
  }
}

template <class T>
std::vector<T> concat_sequence(const std::vector<T>& past, const std::vector<T>& now, int64_t B, int64_t N, int64_t P,
                               int64_t L, int64_t h) {
  std::vector<T> out;
  out.reserve(size_t(B * N * (P + L) * h));
  for (int64_t bn = 0; bn < B * N; ++bn) {
    out.insert(out.end(), past.begin() + bn * P * h, past.begin() + (bn + 1) * P * h);
    out.insert(out.end(), now.begin() + bn * L * h, now.begin() + (bn + 1) * L * h);
  }
  return out;
}

#define REFEVAL_ATTENTION_CORE(T)                                                                                    \
  template void weighted_rows(const T*, const T*, int64_t, int64_t, T*);                                            \
  template void finish_problem(AttentionProblemOf<T>&, int64_t, const AttentionAttrs&, const Values&,             \
                               const AttentionMaskInputs&, DType);                                                  \
  template void prepend_past(AttentionProblemOf<T>&, const std::vector<T>&, const std::vector<T>&, int64_t, int64_t);           \
  template std::vector<std::vector<T>> unpack_interleaved(const std::vector<T>&, int64_t, int64_t, int64_t, int64_t); \
  template std::vector<T> attend(const AttentionProblemOf<T>&);                                                     \
  template std::vector<double> attention_scores(const AttentionProblemOf<T>&);                                      \
  template void set_attention_bias(AttentionProblemOf<T>&, const Tensor&, DType);                                   \
  template std::vector<char> key_padding_mask(const Tensor&, const AttentionProblemOf<T>&, const std::string&);     \
  template std::vector<T> split_heads(const std::vector<T>&, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t); \
  template std::vector<T> split_heads(const Tensor&, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t);         \
  template void add_head_bias(std::vector<T>&, const std::vector<double>&, int64_t, int64_t, int64_t);             \
  template std::vector<T> concat_sequence(const std::vector<T>&, const std::vector<T>&, int64_t, int64_t, int64_t,  \
                                          int64_t, int64_t);
REFEVAL_ATTENTION_CORE(float)
REFEVAL_ATTENTION_CORE(double)
#undef REFEVAL_ATTENTION_CORE

}  // namespace refeval::ops::contrib
