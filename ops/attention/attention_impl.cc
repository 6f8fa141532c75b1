// Attention: 3-D inputs are split into heads, past keys and values are concatenated in front
// of the new ones (present_key / present_value), and each query head attends with its key/value
// head (grouped-query attention: head h uses kv head h / (q_heads / kv_heads), repeat-interleave).
// Pipeline: scores = (Q*sqrt(scale)) (K*sqrt(scale))^T -> softcap -> + bias -> softmax -> * V.
// The bias is attn_mask (bool: 0 / -inf; float: added; a last axis shorter than the keys is
// padded with -inf) plus -inf at every key hidden by is_causal, the sliding window or
// nonpad_kv_seqlen. Causality and the window are bottom-right aligned: query i sits at absolute
// position p = offset + i, offset = past length (internal cache), nonpad_kv_seqlen[b] - S_q
// (external cache) or 0; causal hides j > p, the window hides j < p - left and j > p + right.
// A row whose bias is -inf everywhere gets zero probabilities and a zero output. Causality, the
// window and nonpad_kv_seqlen leave each query row a range of visible keys, over which alone the
// softmax runs; float's row maximum and exponentials are vector code (ops/math/vector_math.h);
// qk_matmul_output, present_key and present_value are only made when the node names them. One
// query row (decoding) takes its scores as dot products and its output as a sum of value rows.
#include "attention_impl.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "../linalg/linalg_common.h"
#include "../math/dot_rows.h"
#include "../math/vector_math.h"
#include "refeval/op_run.h"
#include "attention_common.h"

namespace refeval::ops {
namespace {

// [B, S, H*E] -> [B, H, S, E]
template <class C>
std::vector<C> split_heads(const std::vector<C>& v, int64_t B, int64_t S, int64_t H, int64_t E) {
  std::vector<C> out(v.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t e = 0; e < E; ++e) out[size_t(((b * H + h) * S + s) * E + e)] = v[size_t(((b * S + s) * H + h) * E + e)];
  return out;
}

// Concatenates [B, H, P, E] and [B, H, S, E] along the sequence axis.
template <class C>
std::vector<C> concat_seq(const std::vector<C>& past, const std::vector<C>& cur, int64_t BH, int64_t P, int64_t S, int64_t E) {
  std::vector<C> out(size_t(BH * (P + S) * E));
  for (int64_t i = 0; i < BH; ++i) {
    std::copy_n(past.begin() + i * P * E, P * E, out.begin() + i * (P + S) * E);
    std::copy_n(cur.begin() + i * S * E, S * E, out.begin() + i * (P + S) * E + P * E);
  }
  return out;
}

// p[i] *= s, and out (e x t) = s * kv^T for kv (t x e). Not inlined: inlined, s was the
// caller's scale, which its lambdas take by reference, so every store through p or out could
// change it and the loops reloaded it element by element instead of being vectorised.
template <class C>
[[gnu::noinline]] void scale_values(C* p, int64_t n, C s) {
  for (int64_t i = 0; i < n; ++i) p[i] *= s;
}
template <class C>
[[gnu::noinline]] void scale_transposed(const C* kv, int64_t t, int64_t e, C s, C* out) {
  for (int64_t d = 0; d < e; ++d)
    for (int64_t j = 0; j < t; ++j) out[d * t + j] = kv[j * e + d] * s;
}

template <class C>
void gemm_c(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const C* a, const C* b, C* c) {
  gemm(ta, tb, M, N, K, a, b, c, false);
}

template <class C>
Values compute(const AttentionAttrs& at, const Values& in) {
  const Tensor &q = input_tensor(in, 0), &k = input_tensor(in, 1), &v = input_tensor(in, 2);
  const size_t r = q.rank();
  if ((r != 3 && r != 4) || k.rank() != r || v.rank() != r)
    fail_runtime(fmt::format("Q, K and V must all be 3-D or all 4-D, got {}, {}, {}", shape_to_string(q.shape()),
                             shape_to_string(k.shape()), shape_to_string(v.shape())));
  if (k.dtype() != q.dtype()) fail_runtime("Q and K must have the same element type");
  const int64_t B = q.dim(0);
  int64_t Hq, Hkv, Sq, Skv, E, Ev;
  // 4-D keys and values of C's own type, with no past to put before them nor present to return,
  // are read where they are (Kp, Vp); otherwise K and V hold them.
  constexpr DType kComputeType = std::is_same_v<C, float> ? DType::Float : DType::Double;
  const bool in_place = r == 4 && !has_value(in, 4) && !at.wants_present && k.dtype() == kComputeType &&
                        v.dtype() == kComputeType;
  std::vector<C> Q = to_compute<C>(q), K, V;
  if (!in_place) K = to_compute<C>(k), V = to_compute<C>(v);
  if (r == 3) {
    if (at.q_num_heads <= 0 || at.kv_num_heads <= 0) fail_runtime("3-D inputs need the q_num_heads and kv_num_heads attributes");
    Hq = at.q_num_heads, Hkv = at.kv_num_heads, Sq = q.dim(1), Skv = k.dim(1);
    if (q.dim(2) % Hq || k.dim(2) % Hkv || v.dim(2) % Hkv) fail_runtime("hidden sizes must be multiples of the head counts");
    E = q.dim(2) / Hq, Ev = v.dim(2) / Hkv;
    if (k.dim(2) / Hkv != E) fail_runtime("Q and K head sizes differ");
    if (k.dim(0) != B || v.dim(0) != B || v.dim(1) != Skv) fail_runtime("Q, K and V shapes do not agree");
    Q = split_heads(Q, B, Sq, Hq, E), K = split_heads(K, B, Skv, Hkv, E), V = split_heads(V, B, Skv, Hkv, Ev);
  } else {
    if (at.heads_forbidden_for_4d) fail_runtime("q_num_heads and kv_num_heads must not be given with 4-D inputs");
    Hq = q.dim(1), Hkv = k.dim(1), Sq = q.dim(2), Skv = k.dim(2), E = q.dim(3), Ev = v.dim(3);
    if (k.dim(0) != B || v.dim(0) != B || v.dim(1) != Hkv || v.dim(2) != Skv || k.dim(3) != E)
      fail_runtime(fmt::format("Q, K and V shapes do not agree: {}, {}, {}", shape_to_string(q.shape()),
                               shape_to_string(k.shape()), shape_to_string(v.shape())));
  }
  if (Hkv <= 0 || Hq % Hkv != 0) fail_runtime(fmt::format("q_num_heads {} is not a multiple of kv_num_heads {}", Hq, Hkv));
  // KV cache.
  int64_t P = 0;
  const bool has_past = has_value(in, 4);
  if (has_past != has_value(in, 5)) fail_runtime("past_key and past_value must be given together");
  if (has_past) {
    const Tensor &pk = input_tensor(in, 4), &pv = input_tensor(in, 5);
    if (pk.shape().size() != 4 || pk.dim(0) != B || pk.dim(1) != Hkv || pk.dim(3) != E)
      fail_runtime(fmt::format("past_key has shape {}, expected ({}, {}, past, {})", shape_to_string(pk.shape()), B, Hkv, E));
    P = pk.dim(2);
    if (pv.shape() != Shape{B, Hkv, P, Ev}) fail_runtime(fmt::format("past_value has shape {}", shape_to_string(pv.shape())));
    K = concat_seq(to_compute<C>(pk), K, B * Hkv, P, Skv, E);
    V = concat_seq(to_compute<C>(pv), V, B * Hkv, P, Skv, Ev);
  }
  const int64_t T = P + Skv;
  const C* Kp = in_place ? k.data<C>() : K.data();
  const C* Vp = in_place ? v.data<C>() : V.data();
  std::vector<int64_t> nonpad;
  if (has_value(in, 6)) {
    if (has_past) fail_runtime("nonpad_kv_seqlen (external cache) cannot be combined with past_key / past_value");
    const Tensor& n = input_tensor(in, 6);
    if (n.dtype() != DType::Int64 || n.shape() != Shape{B}) fail_runtime("nonpad_kv_seqlen must be int64 of shape (batch_size)");
    nonpad = n.to_vector<int64_t>();
    for (int64_t x : nonpad)
      if (x < 0 || x > T) fail_runtime(fmt::format("nonpad_kv_seqlen value {} is outside [0, {}]", x, T));
  }
  // attn_mask as a bias, read in place: row (b, h, s) of mask values (mv, broadcast by the
  // strides st) holds the bias of keys [0, ml); the keys after are padded with -inf. Causality,
  // the window and nonpad_kv_seqlen hide all but a range of keys of each query row (below).
  const C ninf = -std::numeric_limits<C>::infinity();
  const Shape full{B, Hq, Sq, T};
  std::vector<C> mv;
  std::vector<int64_t> st;
  int64_t ml = 0;
  if (has_value(in, 3)) {
    const Tensor& m = input_tensor(in, 3);
    if (m.rank() == 0) fail_runtime("attn_mask must have rank >= 1");
    ml = m.shape().back();
    if (ml > T) fail_runtime(fmt::format("attn_mask's last dimension {} exceeds the total sequence length {}", ml, T));
    // The last axis is padded to T (never broadcast); the others broadcast to (B, Hq, Sq).
    const Shape lead(m.shape().begin(), m.shape().end() - 1);
    st = broadcast_strides(lead, {B, Hq, Sq}, "attn_mask");
    if (m.dtype() == DType::Bool) {
      const bool* p = m.data<bool>();
      mv.resize(size_t(m.size()));
      for (size_t i = 0; i < mv.size(); ++i) mv[i] = p[i] ? C(0) : ninf;
    } else {
      if (m.dtype() != q.dtype())
        fail_runtime(fmt::format("attn_mask must be bool or have Q's element type {}, got {}", dtype_short_name(q.dtype()), dtype_short_name(m.dtype())));
      mv = to_compute<C>(m);
    }
  }
  const bool has_mask = !st.empty();
  // The keys [lo, hi) query row s of batch b sees: causal hides j > p, the window j < p - left and
  // j > p + right, nonpad_kv_seqlen j >= its length; the spec adds -inf for each, so every other
  // key's bias is -inf.
  auto visible = [&](int64_t b, int64_t s) {
    const int64_t offset = has_past ? P : !nonpad.empty() ? nonpad[size_t(b)] - Sq : 0;
    const int64_t p = offset + s;  // absolute position of the query
    int64_t lo = 0, hi = nonpad.empty() ? T : nonpad[size_t(b)];
    if (at.is_causal) hi = std::min(hi, p + 1);
    if (at.left_window >= 0) lo = std::max(lo, p - at.left_window);
    if (at.right_window >= 0) hi = std::min(hi, p + at.right_window + 1);
    return std::pair<int64_t, int64_t>{lo, std::max(lo, hi)};
  };
  // Scores, softmax, output. The keys are scaled one kv head at a time (into Ks), for the query
  // heads that share it; one query row takes its scores as dot products over the keys.
  const C scale = C(std::sqrt(at.scale ? *at.scale : 1.0 / std::sqrt(double(E))));
  scale_values(Q.data(), int64_t(Q.size()), scale);
  std::vector<C> qk_out(at.wants_qk ? size_t(shape_size(full)) : 0), Y(size_t(B * Hq * Sq * Ev));
  std::vector<C> scores(size_t(Sq * T)), Ks(size_t(T * E));
  const int64_t group = Hq / Hkv;
  // expf below -87 is a denormal or zero, and the vector expf takes a scalar path for such lanes
  // (a causal row's -inf keys): they are clamped there and their exponential taken as zero.
  constexpr float kExpFloor = -87.0f;
  float exp_floor_value = kExpFloor;
  exp_floats(&exp_floor_value, &exp_floor_value, 1);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t kh = b * Hkv + h / group;
      // the kv head's keys scaled: (T, E) for dot products, transposed (E, T) for a product
      if (h % group == 0) {
        const C* kv = Kp + kh * T * E;
        if (Sq == 1) {
          std::copy_n(kv, T * E, Ks.begin());
          scale_values(Ks.data(), T * E, scale);
        } else {
          scale_transposed(kv, T, E, scale, Ks.data());
        }
      }
      const C* qh = Q.data() + (b * Hq + h) * Sq * E;
      if (Sq == 1) dot_rows(qh, Ks.data(), T, E, scores.data());
      else gemm_c<C>(false, false, Sq, T, E, qh, Ks.data(), scores.data());
      C* qo = at.wants_qk ? qk_out.data() + (b * Hq + h) * Sq * T : nullptr;
      for (int64_t s = 0; s < Sq; ++s) {
        C* row = scores.data() + s * T;
        const auto [lo, hi] = visible(b, s);
        const C* bi = has_mask ? mv.data() + (b * st[0] + h * st[1] + s * st[2]) * ml : nullptr;
        if (qo) {
          C* qrow = qo + s * T;
          for (int64_t j = 0; j < T; ++j) {
            const C raw = row[j];
            const C capped = at.softcap > 0 ? C(at.softcap) * std::tanh(raw / C(at.softcap)) : raw;
            const C with_bias = (bi ? capped + (j < ml ? bi[j] : ninf) : capped) + (j < lo || j >= hi ? ninf : C(0));
            qrow[j] = at.qk_matmul_output_mode == 0 ? raw : at.qk_matmul_output_mode == 1 ? capped : with_bias;
          }
        }
        if (at.softcap > 0)
          for (int64_t j = lo; j < hi; ++j) row[j] = C(at.softcap) * std::tanh(row[j] / C(at.softcap));
        if (bi)
          for (int64_t j = lo; j < hi; ++j) row[j] += j < ml ? bi[j] : ninf;
        // std::max skips NaN, so a row whose bias is -inf everywhere has m = -inf even where a
        // +inf score made a NaN: such a row is zeroed as the spec's bias-based guard says.
        C m = ninf;
        bool nan = true;
        if constexpr (std::is_same_v<C, float>)
          if (hi > lo) m = extreme_floats<true>(row + lo, hi - lo, nan);
        if (nan)
          for (int64_t j = lo; j < hi; ++j) m = std::max(m, row[j]);
        std::fill(row, row + lo, C(0));
        std::fill(row + hi, row + T, C(0));
        if (m == ninf) {  // nothing to attend to: zero probabilities
          std::fill(row + lo, row + hi, C(0));
          continue;
        }
        C sum = 0;
        if constexpr (std::is_same_v<C, float>) {
          for (int64_t j = lo; j < hi; ++j) row[j] = std::max(row[j] - m, kExpFloor);
          exp_floats(row + lo, row + lo, hi - lo);
          // eight running sums (one vector register), added pairwise: a fixed order, without one
          // chain of dependent additions
          typedef float Float8 __attribute__((vector_size(32)));
          Float8 acc = {}, v;
          int64_t j = lo;
          for (; j + 8 <= hi; j += 8) {
            __builtin_memcpy(&v, row + j, sizeof v);
            v = v <= exp_floor_value ? 0.0f : v;
            __builtin_memcpy(row + j, &v, sizeof v);
            acc += v;
          }
          sum = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
          for (; j < hi; ++j) sum += row[j] = row[j] <= exp_floor_value ? 0.0f : row[j];
        } else {
          for (int64_t j = lo; j < hi; ++j) sum += (row[j] = std::exp(row[j] - m));
        }
        for (int64_t j = lo; j < hi; ++j) row[j] /= sum;
      }
      if (qo && at.qk_matmul_output_mode == 3) std::copy(scores.begin(), scores.end(), qo);
      C* y = Y.data() + (b * Hq + h) * Sq * Ev;
      if (Sq == 1) {  // one query row: the sum of the value rows it weighs, in order
        for (int64_t j = 0; j < T; ++j)
          for (int64_t e = 0; e < Ev; ++e) y[e] += scores[size_t(j)] * Vp[(kh * T + j) * Ev + e];
      } else {
        gemm_c<C>(false, false, Sq, Ev, T, scores.data(), Vp + kh * T * Ev, y);
      }
    }
  Values out;
  if (r == 3) {  // [B, Hq, Sq, Ev] -> [B, Sq, Hq*Ev]
    std::vector<C> y3(Y.size());
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < Hq; ++h)
        for (int64_t s = 0; s < Sq; ++s)
          std::copy_n(Y.begin() + ((b * Hq + h) * Sq + s) * Ev, Ev, y3.begin() + ((b * Sq + s) * Hq + h) * Ev);
    out.push_back(tensor_from_compute<C>(q.dtype(), {B, Sq, Hq * Ev}, y3));
  } else {
    out.push_back(tensor_from_compute<C>(q.dtype(), {B, Hq, Sq, Ev}, Y));
  }
  out.push_back(at.wants_present ? Value(tensor_from_compute<C>(k.dtype(), {B, Hkv, T, E}, K)) : Value());
  out.push_back(at.wants_present ? Value(tensor_from_compute<C>(v.dtype(), {B, Hkv, T, Ev}, V)) : Value());
  out.push_back(at.wants_qk ? Value(tensor_from_compute<C>(q.dtype(), full, qk_out)) : Value());
  return out;
}

}  // namespace

Values attention_compute(const AttentionAttrs& a, const Values& in) {
  if (a.softmax_in_double && Floats::contains(input_tensor(in, 0).dtype())) return compute<double>(a, in);
  return with_compute_type(input_tensor(in, 0).dtype(), [&]<class C>() { return compute<C>(a, in); });
}

}  // namespace refeval::ops
