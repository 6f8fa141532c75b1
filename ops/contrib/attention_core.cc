// The attention core of attention_core.h.
#include "attention_core.h"

#include "../linalg/linalg_common.h"
#include "../math/vector_math.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace refeval::ops::contrib {

AttentionAttrs::AttentionAttrs(const NodeContext& ctx)
    : heads(ctx.required<int64_t>("num_heads")),
      unidirectional(ctx.attr<int64_t>("unidirectional", 0) != 0),
      mask_filter_value(ctx.attr<float>("mask_filter_value", -10000.0f)),
      scale(ctx.optional_attr<float>("scale")) {
  if (heads <= 0) ctx.fail(fmt::format("num_heads must be positive, got {}", heads));
}

void finish_problem(AttentionProblem& p, int64_t kv_length, const AttentionAttrs& a, const Values& in,
                    const AttentionMaskInputs& inputs, DType dtype) {
  p.total = p.past + kv_length;
  p.causal = a.unidirectional, p.mask_filter_value = a.mask_filter_value;
  p.scale = a.scale ? double(*a.scale) : 1.0 / std::sqrt(double(p.head_size));
  p.float_products = dtype == DType::Float;
  if (has_value(in, inputs.key_padding_mask))
    p.hidden = key_padding_mask(input_tensor(in, inputs.key_padding_mask), p, inputs.key_padding_mask_name);
  if (has_value(in, inputs.attention_bias)) set_attention_bias(p, input_tensor(in, inputs.attention_bias), dtype);
}

void prepend_past(AttentionProblem& p, const std::vector<double>& past_k, const std::vector<double>& past_v, int64_t P,
                  int64_t L) {
  p.past = P;
  p.k = concat_sequence(past_k, p.k, p.batch, p.heads, P, L, p.head_size);
  p.v = concat_sequence(past_v, p.v, p.batch, p.heads, P, L, p.v_head_size);
}

std::vector<std::vector<double>> unpack_interleaved(const std::vector<double>& packed, int64_t rows, int64_t N,
                                                    int64_t parts, int64_t h) {
  std::vector<std::vector<double>> out(size_t(parts), std::vector<double>(size_t(rows * N * h)));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t part = 0; part < parts; ++part)
        std::copy_n(packed.begin() + ((r * N + n) * parts + part) * h, h, out[size_t(part)].begin() + (r * N + n) * h);
  return out;
}

void float_product(bool trans_b, int64_t M, int64_t N, int64_t K, const double* a, const double* b, double* c) {
  const std::vector<float> fa(a, a + M * K), fb(b, b + K * N);
  std::vector<float> fc(size_t(M * N));
  refeval::ops::gemm(false, trans_b, M, N, K, fa.data(), fb.data(), fc.data(), false);
  std::copy(fc.begin(), fc.end(), c);
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
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) sum += x[j] = x[j] <= floor_value ? 0.0 : x[j];
  return sum;
}

namespace {
// Fills score (S x T) with the pre-softmax scores of batch b, head n: the scaled dot products
// plus the key padding or causal mask and attention_bias.
void head_scores(const AttentionProblem& p, int64_t b, int64_t n, double* score) {
  const int64_t N = p.heads, S = p.seq, T = p.total, h = p.head_size, bn = b * N + n;
  if (p.float_products) float_product(true, S, T, h, p.q.data() + bn * S * h, p.k.data() + bn * T * h, score);
  else gemm(false, true, S, T, h, p.q.data() + bn * S * h, p.k.data() + bn * T * h, score);
  for (int64_t i = 0; i < S; ++i) {
    double* row = score + i * T;
    for (int64_t j = 0; j < T; ++j) {
      double s = row[j] * p.scale;
      const bool padded = !p.hidden.empty() && p.hidden[size_t((b * S + i) * T + j)];
      if (padded || (p.causal && j > p.past + i)) s += p.mask_filter_value;
      if (!p.bias.empty()) {
        const int64_t bb = p.bias_shape[0] == 1 ? 0 : b, bh = p.bias_shape[1] == 1 ? 0 : n;
        s += p.bias[size_t(((bb * p.bias_shape[1] + bh) * S + i) * T + j)];
      }
      row[j] = s;
    }
  }
}
}  // namespace

std::vector<double> attention_scores(const AttentionProblem& p) {
  std::vector<double> scores(size_t(p.batch * p.heads * p.seq * p.total));
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t n = 0; n < p.heads; ++n) head_scores(p, b, n, scores.data() + (b * p.heads + n) * p.seq * p.total);
  return scores;
}

std::vector<double> attend(const AttentionProblem& p) {
  const int64_t B = p.batch, N = p.heads, S = p.seq, T = p.total, hv = p.v_head_size;
  std::vector<double> out(size_t(B * S * N * hv), 0.0), score(size_t(S * T)), head(size_t(S * hv));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t n = 0; n < N; ++n) {
      const int64_t bn = b * N + n;
      head_scores(p, b, n, score.data());
      for (int64_t i = 0; i < S; ++i) {
        double* row = score.data() + i * T;
        const double top = T == 0 ? 0.0 : *std::max_element(row, row + T);
        const double sum = exp_shifted(row, T, top);
        for (int64_t j = 0; j < T; ++j) row[j] /= sum;
      }
      // out[b, i, n, :] = sum_j score[i, j] * v[b, n, j, :], the head's rows in one product
      if (T == 0) continue;
      if (p.float_products) float_product(false, S, hv, T, score.data(), p.v.data() + bn * T * hv, head.data());
      else gemm(false, false, S, hv, T, score.data(), p.v.data() + bn * T * hv, head.data());
      for (int64_t i = 0; i < S; ++i) std::copy_n(head.data() + i * hv, hv, out.data() + ((b * S + i) * N + n) * hv);
    }
  return out;
}

void set_attention_bias(AttentionProblem& p, const Tensor& bias, DType dtype) {
  require_dtype(bias, dtype, "attention_bias");
  const Shape& s = bias.shape();
  if (s.size() != 4 || (s[0] != 1 && s[0] != p.batch) || (s[1] != 1 && s[1] != p.heads) || s[2] != p.seq || s[3] != p.total)
    fail_runtime(fmt::format("attention_bias has shape {}, expected ({} or 1, {} or 1, {}, {})", shape_to_string(s), p.batch,
                             p.heads, p.seq, p.total));
  p.bias = to_doubles(bias);
  p.bias_shape = s;
}

std::vector<char> key_padding_mask(const Tensor& mask, const AttentionProblem& p, const std::string& name) {
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

std::vector<double> split_heads(const std::vector<double>& rows, int64_t row_width, int64_t offset, int64_t B, int64_t L,
                                int64_t N, int64_t size) {
  std::vector<double> out(size_t(B * N * L * size));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t l = 0; l < L; ++l)
      for (int64_t n = 0; n < N; ++n)
        for (int64_t d = 0; d < size; ++d)
          out[size_t(((b * N + n) * L + l) * size + d)] = rows[size_t((b * L + l) * row_width + offset + n * size + d)];
  return out;
}

std::vector<double> concat_sequence(const std::vector<double>& past, const std::vector<double>& now, int64_t B, int64_t N,
                                    int64_t P, int64_t L, int64_t h) {
  std::vector<double> out;
  out.reserve(size_t(B * N * (P + L) * h));
  for (int64_t bn = 0; bn < B * N; ++bn) {
    out.insert(out.end(), past.begin() + bn * P * h, past.begin() + (bn + 1) * P * h);
    out.insert(out.end(), now.begin() + bn * L * h, now.begin() + (bn + 1) * L * h);
  }
  return out;
}

}  // namespace refeval::ops::contrib
