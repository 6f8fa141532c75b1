// com.microsoft GroupQueryAttention (v1): self-attention (causal unless causal=0) with N query
// heads sharing Nkv <= N key/value heads, a BNSH key/value cache and optional RoPE. The behaviour
// where ContribOperators.md is silent follows ORT 1.30's CPU kernel (checked by tests/data/ort/gqa).
//   inputs:  query (B, S, N*H), or packed QKV (B, S, (N + 2 Nkv) H) with key and value absent;
//            key, value (B, L, Nkv*H) with L = S, or L = 0 when past_key holds every key (a
//            KV-shared layer); past_key, past_value (B, Nkv, P, H); seqlens_k int32 (B) (trailing
//            size-1 dims allowed); total_sequence_length int32 scalar; cos_cache, sin_cache
//            (R, rot/2); position_ids int64 (B, >= S); attention_bias (B|1, N|1, S, total);
//            head_sink (N); k_scale, v_scale (quantized caches only); q_norm_weight, k_norm_weight (H)
//   outputs: output (B, S, N*H); present_key, present_value (B, Nkv, Tp, H);
//            output_qk (B, N, S, total) when qk_output is 1 or 2
// Per batch row b, T_b = seqlens_k[b] + 1 is the valid total length (T_b <= total). The phase
// comes from the shapes: first prompt when S == total (queries at positions 0..S-1, so rows
// shorter than S are right padding), otherwise queries at T_b - S .. T_b - 1 (token generation,
// S = 1, or a subsequent prompt, which needs B = 1).
//   present: Tp = max(total, P). Rows [0, T_b - L) are copied from past (none on a first prompt
//            with L = S), the L new keys follow, the rest is zero. P >= total is genai's shared
//            buffer; ORT writes into it in place, so rows past T_b keep stale keys there, and
//            their value is unspecified. They are zero here, as ORT's separate present buffer is.
//   q/k:     q_norm_weight / k_norm_weight scale each head by w / sqrt(mean(x^2) + qk_norm_epsilon)
//            (before RoPE, do_rotary=1 required). With do_rotary the first rot values of each
//            query and new key head rotate as com.microsoft RotaryEmbedding does (halves, or
//            adjacent pairs when rotary_interleaved), at position p = first position + s:
//            position_ids[b, s] when given (on a first prompt only position_ids[0] + s, as
//            ORT reads it), else the query position above.
//   scores:  query head n uses key head n / (N / Nkv); query s at position p sees keys j < T_b
//            with j <= p (causal=1) and j > p - local_window_size (when >= 0).
//            x = scale (0: 1/sqrt(H)) * q.k; x = softcap * tanh(x / softcap) when softcap > 0;
//            x += attention_bias. softmax over the visible keys, with one more logit head_sink[n]
//            (or 0 when smooth_softmax=1) in the denominator; no visible key gives zeros.
//            output_qk holds x (qk_output=1) or the probabilities (2), zero where not visible.
//   sliding_window_cache=1: past/present are window-sized (capacity C >= local_window_size W).
//            After T tokens the cache holds the last L(T) of them at rows [0, L(T)), with
//            L(T) = T if T <= C, else T - G * ceil((T - C) / G), G = C - W + 1; the rest is zero.
//            Attention sees exactly the window, so it equals the full-cache result.
// Refused: quantized caches (k_quant_type, v_quant_type, kv_cache_bit_width), and with
// sliding_window_cache attention_bias and output_qk (ORT's CPU kernel refuses the latter too).
// ORT's CPU kernel also insists on H % 8 == 0 and rot/2 % 8 == 0; any size is computed here.
#include <algorithm>
#include <cmath>

#include "attention_core.h"
#include "refeval/registry.h"
#include "refeval/threads.h"

namespace refeval::ops::contrib {
namespace {

enum Input : size_t {
  kQuery, kKey, kValue, kPastKey, kPastValue, kSeqlensK, kTotalLength, kCos, kSin, kPositionIds, kAttentionBias,
  kHeadSink, kKScale, kVScale, kQNorm, kKNorm
};

// Keys and values of one batch row as attention reads them: per key head g, `rows` rows of H
// values holding the absolute positions [base, base + rows), `stride` values apart from head to
// head: the rows of present itself (a full cache), or rows of their own (a window-sized one).
template <class T>
struct RowCache {
  int64_t base = 0, rows = 0, stride = 0;
  const T *k = nullptr, *v = nullptr;
  std::vector<T> own_k, own_v;
  const T* keys(int64_t g) const { return (own_k.empty() ? k : own_k.data()) + g * stride; }
  const T* values(int64_t g) const { return (own_v.empty() ? v : own_v.data()) + g * stride; }
};

// Rows a window-sized cache of capacity C keeps after T tokens (see the header).
int64_t window_cache_length(int64_t T, int64_t C, int64_t W) {
  if (T <= C) return T;
  const int64_t G = C - W + 1;
  return T - G * ((T - C + G - 1) / G);
}

// x (H values) -> x / sqrt(mean(x^2) + eps) * w
void rms_norm_head(double* x, int64_t H, const std::vector<double>& w, double eps) {
  double sum = 0;
  for (int64_t d = 0; d < H; ++d) sum += x[d] * x[d];
  const double r = 1.0 / std::sqrt(sum / double(H) + eps);
  for (int64_t d = 0; d < H; ++d) x[d] *= r * w[size_t(d)];
}

class GroupQueryAttention : public OpRun {
 public:
  using Types = AttentionTypes;
  explicit GroupQueryAttention(const NodeContext& ctx)
      : N_(ctx.required<int64_t>("num_heads")),
        Nkv_(ctx.required<int64_t>("kv_num_heads")),
        scale_(ctx.attr<float>("scale", 0.0f)),
        softcap_(ctx.attr<float>("softcap", 0.0f)),
        window_(ctx.attr<int64_t>("local_window_size", -1)),
        causal_(ctx.attr<int64_t>("causal", 1) != 0),
        rotary_(ctx.attr<int64_t>("do_rotary", 0) != 0),
        interleaved_(ctx.attr<int64_t>("rotary_interleaved", 0) != 0),
        smooth_(ctx.attr<int64_t>("smooth_softmax", 0) != 0),
        windowed_cache_(ctx.attr<int64_t>("sliding_window_cache", 0) != 0),
        qk_output_(ctx.attr<int64_t>("qk_output", 0)),
        qk_norm_epsilon_(ctx.attr<float>("qk_norm_epsilon", 1e-6f)) {
    if (N_ <= 0 || Nkv_ <= 0) ctx.fail(fmt::format("num_heads {} and kv_num_heads {} must be positive", N_, Nkv_));
    if (N_ % Nkv_ != 0) ctx.fail(fmt::format("num_heads {} is not a multiple of kv_num_heads {}", N_, Nkv_));
    if (softcap_ < 0) ctx.fail(fmt::format("softcap {} is negative", softcap_));
    if (window_ < -1) ctx.fail(fmt::format("local_window_size {} must be -1 (off) or >= 0", window_));
    if (!causal_ && window_ != -1) ctx.fail("local_window_size must be -1 when causal is 0");
    if (qk_output_ < 0 || qk_output_ > 2) ctx.fail(fmt::format("qk_output {} is not 0, 1 (before softmax) or 2 (after)", qk_output_));
    if ((qk_output_ != 0) != ctx.has_output(3))
      ctx.fail(qk_output_ != 0 ? "qk_output is set but output 3 (output_qk) is not requested"
                               : "output 3 (output_qk) needs qk_output 1 (before softmax) or 2 (after)");
    if (!(qk_norm_epsilon_ > 0)) ctx.fail(fmt::format("qk_norm_epsilon {} must be positive", qk_norm_epsilon_));
    for (const char* name : {"k_quant_type", "v_quant_type"})
      if (const std::string q = ctx.attr<std::string>(name, "NONE"); q != "NONE")
        ctx.fail(fmt::format("{} {}: a quantized KV cache is not supported", name, q));
    if (const int64_t bits = ctx.attr<int64_t>("kv_cache_bit_width", 0); bits != 0)
      ctx.fail(fmt::format("kv_cache_bit_width {}: a quantized KV cache is not supported", bits));
    if (windowed_cache_ && window_ <= 0) ctx.fail("sliding_window_cache=1 requires local_window_size > 0");
    if (windowed_cache_ && qk_output_ != 0) ctx.fail("qk_output is not supported with sliding_window_cache=1");
  }

  Values run(const Values& in, RunContext&) override;

 private:
  template <class T>
  struct Call;
  int64_t N_, Nkv_;
  float scale_, softcap_;
  int64_t window_;
  bool causal_, rotary_, interleaved_, smooth_, windowed_cache_;
  int64_t qk_output_;
  double qk_norm_epsilon_;
};

// One run: the sizes and phase read from the inputs, each row's total length and the heads.
template <class T>
struct GroupQueryAttention::Call {
  const GroupQueryAttention& op;
  const Values& in;
  const int64_t N, Nkv;
  DType dtype;
  int64_t B = 0, S = 0, L = 0, H = 0, P = 0, total = 0, Tp = 0;
  bool first = false;
  std::vector<int64_t> total_rows;  // T_b
  std::vector<T> q, k, v;           // (B, N, S, H) and the new (B, Nkv, L, H)
  const T *past_k = nullptr, *past_v = nullptr;  // (B, Nkv, P, H)
  std::vector<T> past_k_values, past_v_values;   // past converted to T, unless its tensors hold T
  std::vector<double> qk;

  Call(const GroupQueryAttention& o, const Values& inputs, DType type) : op(o), in(inputs), N(o.N_), Nkv(o.Nkv_), dtype(type) {
    const Tensor& query = input_tensor(in, kQuery);
    require_rank(query, 3, 3, "query");
    B = query.dim(0), S = query.dim(1);
    read_qkv(query);
    read_past();
    read_lengths();
    if (op.rotary_ || has_value(in, kQNorm) || has_value(in, kKNorm)) prepare_q_k();
  }

  Values outputs() {
    // present_key / present_value: written in place for float tensors, else through T values
    const Shape kv_shape{B, Nkv, Tp, H};
    Tensor present_k_t = Tensor::uninitialized(dtype, kv_shape), present_v_t = Tensor::uninitialized(dtype, kv_shape);
    std::vector<T> present_k_values, present_v_values;
    T *present_k, *present_v;
    if constexpr (std::is_same_v<T, float>) {
      present_k = present_k_t.data<float>(), present_v = present_v_t.data<float>();
    } else {
      present_k_values.assign(size_t(B * Nkv * Tp * H), T(0)), present_v_values.assign(present_k_values.size(), T(0));
      present_k = present_k_values.data(), present_v = present_v_values.data();
    }
    std::vector<RowCache<T>> caches;
    for (int64_t b = 0; b < B; ++b) caches.push_back(row_cache(b, present_k, present_v));
    Values out{tensor_from_compute(dtype, {B, S, N * H}, attend(caches))};
    if constexpr (!std::is_same_v<T, float>) write_compute(present_k_t, present_k_values), write_compute(present_v_t, present_v_values);
    out.push_back(std::move(present_k_t));
    out.push_back(std::move(present_v_t));
    if (op.qk_output_ != 0) out.push_back(from_doubles(dtype, {B, N, S, total}, qk));
    return out;
  }

  // q and the new keys and values k, v from the packed or separate inputs.
  void read_qkv(const Tensor& query) {
    const int64_t D = query.dim(2);
    if (has_value(in, kKey) != has_value(in, kValue)) fail_runtime("key and value must be given together (or both absent for packed QKV)");
    if (!has_value(in, kKey)) {
      if (D % (N + 2 * Nkv) != 0)
        fail_runtime(fmt::format("packed query has width {}, not a multiple of num_heads + 2 * kv_num_heads = {}", D, N + 2 * Nkv));
      H = D / (N + 2 * Nkv), L = S;
      q = split_heads<T>(query, D, 0, B, S, N, H);
      k = split_heads<T>(query, D, N * H, B, S, Nkv, H);
      v = split_heads<T>(query, D, (N + Nkv) * H, B, S, Nkv, H);
      return;
    }
    if (D % N != 0) fail_runtime(fmt::format("query has width {}, not a multiple of num_heads {}", D, N));
    H = D / N;
    const Tensor& key = input_tensor(in, kKey);
    const Tensor& value = input_tensor(in, kValue);
    require_dtype(key, dtype, "key");
    require_dtype(value, dtype, "value");
    require_rank(key, 3, 3, "key");
    L = key.dim(1);
    if (key.dim(0) != B || (L != S && L != 0) || key.dim(2) != Nkv * H)
      fail_runtime(fmt::format("key has shape {}, expected ({}, {} or 0, {})", shape_to_string(key.shape()), B, S, Nkv * H));
    require_shape(value, key.shape(), "value");
    q = split_heads<T>(query, D, 0, B, S, N, H);
    k = split_heads<T>(key, Nkv * H, 0, B, L, Nkv, H);
    v = split_heads<T>(value, Nkv * H, 0, B, L, Nkv, H);
  }

  void read_past() {
    if (has_value(in, kPastKey) != has_value(in, kPastValue)) fail_runtime("past_key and past_value must be given together");
    if (has_value(in, kPastKey)) {
      const Tensor& pk = input_tensor(in, kPastKey);
      const Tensor& pv = input_tensor(in, kPastValue);
      require_dtype(pk, dtype, "past_key");
      require_dtype(pv, dtype, "past_value");
      require_rank(pk, 4, 4, "past_key");
      P = pk.dim(2);
      require_shape(pk, {B, Nkv, P, H}, "past_key");
      require_shape(pv, {B, Nkv, P, H}, "past_value");
      if constexpr (std::is_same_v<T, float>) {
        past_k = pk.data<float>(), past_v = pv.data<float>();
      } else {
        past_k_values = to_compute<T>(pk), past_v_values = to_compute<T>(pv);
        past_k = past_k_values.data(), past_v = past_v_values.data();
      }
    }
    if (L == 0 && P == 0) fail_runtime("key and value of length 0 need past_key and past_value to hold the keys");
    if (op.windowed_cache_) {
      if (P == 0) fail_runtime("sliding_window_cache=1 needs past_key and past_value (the window-sized cache)");
      if (L == 0) fail_runtime("sliding_window_cache=1 needs new keys (key of length 0 is a KV-shared layer)");
      if (P < op.window_) fail_runtime(fmt::format("past_key holds {} rows, fewer than local_window_size {}", P, op.window_));
      if (has_value(in, kAttentionBias)) fail_runtime("attention_bias is not supported with sliding_window_cache=1");
    }
  }

  // seqlens_k and total_sequence_length: the phase, the present length and each row's T_b.
  void read_lengths() {
    const Tensor& sk = input_tensor(in, kSeqlensK);
    require_dtype(sk, DType::Int32, "seqlens_k");
    const Shape& s = sk.shape();
    if (s.empty() || sk.size() != B || std::any_of(s.begin(), s.end(), [&](int64_t d) { return d != 1 && d != B; }))
      fail_runtime(fmt::format("seqlens_k has shape {}, expected ({}) (extra size-1 dims allowed)", shape_to_string(s), B));
    const Tensor& tl = input_tensor(in, kTotalLength);
    require_dtype(tl, DType::Int32, "total_sequence_length");
    if (tl.size() != 1) fail_runtime(fmt::format("total_sequence_length has shape {}, expected a scalar", shape_to_string(tl.shape())));
    total = tl.data<int32_t>()[0];
    if (total <= 0) fail_runtime(fmt::format("total_sequence_length {} must be positive", total));
    if (S > 1 && S != total && B != 1)
      fail_runtime(fmt::format("query has {} tokens of a total {} (a subsequent prompt), which needs batch size 1, got {}", S, total, B));
    first = S == total && !op.windowed_cache_;  // ORT runs a window-sized cache with past lengths throughout
    Tp = op.windowed_cache_ ? P : std::max(total, P);
    for (int64_t b = 0; b < B; ++b) {
      const int64_t len = sk.data<int32_t>()[b], T_b = len + 1;
      if (len < 0 || T_b > total)
        fail_runtime(fmt::format("seqlens_k[{}] = {} is out of range [0, total_sequence_length {})", b, len, total));
      if (!first && T_b < S) fail_runtime(fmt::format("seqlens_k[{}] = {} is too small for {} new tokens", b, len, S));
      const int64_t from_past = L == 0 ? T_b : (first ? 0 : T_b - S);
      if (!op.windowed_cache_ && from_past > P)
        fail_runtime(fmt::format("seqlens_k[{}] = {} needs {} past rows, but past_key holds {}", b, len, from_past, P));
      total_rows.push_back(T_b);
    }
  }

  // Position of row b's first query: 0 on a first prompt, else after its T_b - S earlier tokens.
  int64_t query_start(int64_t b) const { return first ? 0 : total_rows[size_t(b)] - S; }

  // Per-head RMS norm and RoPE of q and the new keys k, each head in double, rounded once to T.
  void prepare_q_k() {
    if (has_value(in, kQNorm) != has_value(in, kKNorm)) fail_runtime("q_norm_weight and k_norm_weight must be given together");
    std::vector<double> wq, wk;
    if (has_value(in, kQNorm)) {
      if (!op.rotary_) fail_runtime("q_norm_weight and k_norm_weight need do_rotary=1");
      wq = vector_input(in, kQNorm, H, dtype, "q_norm_weight");
      wk = vector_input(in, kKNorm, H, dtype, "k_norm_weight");
    }
    if (!op.rotary_) return;
    if (!has_value(in, kCos) || !has_value(in, kSin)) fail_runtime("do_rotary=1 needs cos_cache and sin_cache");
    const Tensor& cos_t = input_tensor(in, kCos);
    const Tensor& sin_t = input_tensor(in, kSin);
    require_dtype(cos_t, dtype, "cos_cache");
    require_dtype(sin_t, dtype, "sin_cache");
    require_rank(cos_t, 2, 2, "cos_cache");
    require_shape(sin_t, cos_t.shape(), "sin_cache");
    const int64_t rows = cos_t.dim(0), half = cos_t.dim(1);
    if (half == 0 || 2 * half > H)
      fail_runtime(fmt::format("cos_cache has shape {}, expected 1 to {} columns (rotary dim / 2)", shape_to_string(cos_t.shape()), H / 2));
    // Only the rows of the positions used are read (the caches hold every position of the
    // model's maximum length, and widening them whole cost more than the attention of a step).
    std::vector<double> cs(static_cast<size_t>(half)), sn(static_cast<size_t>(half));
    int64_t loaded = -1;
    auto load_row = [&](int64_t pos) {
      if (pos == loaded) return;
      visit<Floats>(dtype, [&]<class E>() {
        const E *c = cos_t.data<E>() + pos * half, *s = sin_t.data<E>() + pos * half;
        for (int64_t i = 0; i < half; ++i) cs[size_t(i)] = double(compute_t<E>(c[i])), sn[size_t(i)] = double(compute_t<E>(s[i]));
      });
      loaded = pos;
    };
    std::vector<int64_t> ids;
    if (has_value(in, kPositionIds)) {
      const Tensor& p = input_tensor(in, kPositionIds);
      require_dtype(p, DType::Int64, "position_ids");
      if (p.rank() != 2 || p.dim(0) != B || p.dim(1) < S)
        fail_runtime(fmt::format("position_ids has shape {}, expected ({}, >= {})", shape_to_string(p.shape()), B, S));
      ids = to_int64s(p, "position_ids");
    }
    std::vector<double> x(static_cast<size_t>(H));
    auto prepare = [&](T* head, const std::vector<double>& w, int64_t pos) {
      std::copy_n(head, H, x.begin());
      if (!w.empty()) rms_norm_head(x.data(), H, w, op.qk_norm_epsilon_);
      if (pos < 0 || pos >= rows) fail_runtime(fmt::format("position {} is outside cos_cache's {} rows", pos, rows));
      load_row(pos);
      for (int64_t i = 0; i < half; ++i) {
        double& x1 = x[size_t(op.interleaved_ ? 2 * i : i)];
        double& x2 = x[size_t(op.interleaved_ ? 2 * i + 1 : i + half)];
        const double c = cs[size_t(i)], s = sn[size_t(i)], x1_old = x1;
        x1 = x1_old * c - x2 * s;
        x2 = x2 * c + x1_old * s;
      }
      std::copy(x.begin(), x.end(), head);
    };
    for (int64_t b = 0; b < B; ++b)
      for (int64_t s = 0; s < S; ++s) {
        // ORT reads position_ids flat: the first value on a first prompt, else value b * S + s.
        const int64_t pos = ids.empty() ? query_start(b) + s : (first ? ids[0] + s : ids[size_t(b * S + s)]);
        for (int64_t n = 0; n < N; ++n) prepare(q.data() + ((b * N + n) * S + s) * H, wq, pos);
        if (L != 0)
          for (int64_t n = 0; n < Nkv; ++n) prepare(k.data() + ((b * Nkv + n) * L + s) * H, wk, pos);
      }
  }

  // Row b's keys and values, also written into present_k / present_v (B, Nkv, Tp, H), whose rows
  // past them are zeroed.
  RowCache<T> row_cache(int64_t b, T* present_k, T* present_v) const {
    const int64_t T_b = total_rows[size_t(b)], W = op.window_;
    // Rows kept from past, then the L new ones: a full cache holds positions [0, T_b) (a first
    // prompt all S new ones); a window-sized one its last window_cache_length rows before them.
    const int64_t kept = op.windowed_cache_ ? window_cache_length(T_b - L, P, W) : (L == 0 ? T_b : query_start(b));
    RowCache<T> c;
    c.rows = kept + L;
    c.base = op.windowed_cache_ ? T_b - c.rows : 0;
    // present keeps the last `stored` rows: all of them, or what the window-sized cache keeps
    const int64_t stored = op.windowed_cache_ ? window_cache_length(T_b, P, W) : c.rows;
    if (op.windowed_cache_) {
      c.own_k.resize(size_t(Nkv * c.rows * H)), c.own_v.resize(c.own_k.size());
      c.stride = c.rows * H;
    } else {  // attention reads present's rows
      c.k = present_k + b * Nkv * Tp * H, c.v = present_v + b * Nkv * Tp * H;
      c.stride = Tp * H;
    }
    for (int64_t g = 0; g < Nkv; ++g) {
      const int64_t bg = b * Nkv + g;
      auto fill = [&](std::vector<T>& own, const T* past, const std::vector<T>& now, T* present) {
        T* dst = present + bg * Tp * H;
        T* row = own.empty() ? dst : own.data() + g * c.rows * H;
        if (kept > 0) std::copy_n(past + bg * P * H, kept * H, row);
        std::copy_n(now.begin() + bg * L * H, L * H, row + kept * H);
        if (!own.empty()) std::copy_n(row + (c.rows - stored) * H, stored * H, dst);
        std::fill(dst + stored * H, dst + Tp * H, T(0));
      };
      fill(c.own_k, past_k, k, present_k);
      fill(c.own_v, past_v, v, present_v);
    }
    return c;
  }

  // (B, S, N*H) attention output; fills qk when qk_output is set.
  std::vector<T> attend(const std::vector<RowCache<T>>& caches) {
    std::vector<double> bias;
    Shape bs;
    if (has_value(in, kAttentionBias)) {
      const Tensor& t = input_tensor(in, kAttentionBias);
      require_dtype(t, dtype, "attention_bias");
      bs = t.shape();
      if (bs.size() != 4 || (bs[0] != 1 && bs[0] != B) || (bs[1] != 1 && bs[1] != N) || bs[2] != S || bs[3] != total)
        fail_runtime(fmt::format("attention_bias has shape {}, expected ({} or 1, {} or 1, {}, {})", shape_to_string(bs), B, N, S, total));
      bias = to_doubles(t);
    }
    const std::vector<double> sink = vector_input(in, kHeadSink, N, dtype, "head_sink");
    const bool has_sink = op.smooth_ || !sink.empty();
    const double scale = attention_scale(op.scale_, H), cap = op.softcap_;
    if (op.qk_output_ != 0) qk.assign(size_t(B * N * S * total), 0.0);

    // The keys [lo, hi) query s of row b sees (lo >= hi: none).
    auto visible = [&](int64_t b, int64_t s, const RowCache<T>& c) {
      const int64_t p = query_start(b) + s, T_b = total_rows[size_t(b)];
      return std::pair<int64_t, int64_t>{std::max(c.base, op.window_ >= 0 ? p - op.window_ + 1 : 0),
                                         op.causal_ ? std::min(T_b, p + 1) : T_b};
    };
    // x[j] (the product q . k_j for keys j in [lo, hi)) becomes the softmax weight w[j], in
    // double, rounded once to T; the qk output takes the scores or the weights.
    auto softmax_row = [&](int64_t b, int64_t n, int64_t s, double* x, T* w, int64_t lo, int64_t hi) {
      double* qk_row = qk.empty() ? nullptr : qk.data() + ((b * N + n) * S + s) * total;
      const double sc = scale;  // a local: a store to x could otherwise change the captured one
      for (int64_t j = lo; j < hi; ++j) x[j] *= sc;
      if (cap > 0)
        for (int64_t j = lo; j < hi; ++j) x[j] = cap * std::tanh(x[j] / cap);
      if (!bias.empty()) {
        const double* bias_row = bias.data() + (((bs[0] == 1 ? 0 : b) * bs[1] + (bs[1] == 1 ? 0 : n)) * S + s) * total;
        for (int64_t j = lo; j < hi; ++j) x[j] += bias_row[j];
      }
      if (op.qk_output_ == 1) std::copy(x + lo, x + hi, qk_row + lo);
      double top = row_max(x + lo, hi - lo);
      const double sink_logit = sink.empty() ? 0.0 : sink[size_t(n)];
      if (has_sink) top = std::max(top, sink_logit);
      double sum = exp_shifted(x + lo, hi - lo, top);
      if (has_sink) sum += std::exp(sink_logit - top);
      const double inv = 1.0 / sum;  // times the reciprocal: a division per key cost as much as the exponentials
      for (int64_t j = lo; j < hi; ++j) {
        const double wj = x[j] * inv;
        w[j] = T(wj);
        if (op.qk_output_ == 2) qk_row[j] = wj;
      }
    };
    std::vector<T> out(size_t(B * S * N * H), T(0));
    const int64_t group = N / Nkv;
    if (S == 1) {
      // One query row (decoding): per head, dot products with the visible keys, then the sum of
      // their value rows; heads in parallel, each on its own.
      const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 15) / std::max<int64_t>(total * H, 1));
      parallel_for(B * N, grain, [&](int64_t first_head, int64_t last_head) {
        std::vector<double> x;
        std::vector<T> w;
        for (int64_t bn = first_head; bn < last_head; ++bn) {
          const int64_t b = bn / N, n = bn % N, g = n / group;
          const RowCache<T>& c = caches[size_t(b)];
          const auto [lo, hi] = visible(b, 0, c);
          if (lo >= hi) continue;  // nothing visible: zeros
          x.resize(size_t(hi - lo)), w.resize(size_t(hi - lo));
          dot_rows(q.data() + bn * H, c.keys(g) + (lo - c.base) * H, hi - lo, H, x.data());
          softmax_row(b, n, 0, x.data() - lo, w.data() - lo, lo, hi);
          weighted_rows(w.data(), c.values(g) + (lo - c.base) * H, hi - lo, H, out.data() + bn * H);
        }
      });
      return out;
    }
    // Longer queries: per key head and block of kRows query rows, the rows of the query heads
    // that share the key head, stacked, times the keys any of them sees (one product; causal
    // blocks skip the keys after their last row), the softmax, then the weights times the values
    // (one product). The products split themselves across the threads.
    constexpr int64_t kRows = 32;
    std::vector<double> scores;
    std::vector<T> stacked, raw, weights, head;
    for (int64_t b = 0; b < B; ++b) {
      const RowCache<T>& c = caches[size_t(b)];
      for (int64_t s0 = 0; s0 < S; s0 += kRows) {
        const int64_t rows = std::min(kRows, S - s0), M = group * rows;
        int64_t from = total, to = 0;  // the keys any row of the block sees
        for (int64_t s = s0; s < s0 + rows; ++s)
          if (const auto [lo, hi] = visible(b, s, c); lo < hi) from = std::min(from, lo), to = std::max(to, hi);
        if (from >= to) continue;
        const int64_t W = to - from;
        stacked.resize(size_t(M * H)), scores.resize(size_t(M * W)), weights.resize(size_t(M * W));
        head.resize(size_t(M * H));
        for (int64_t g = 0; g < Nkv; ++g) {
          for (int64_t i = 0; i < group; ++i)
            std::copy_n(q.data() + ((b * N + g * group + i) * S + s0) * H, rows * H, stacked.data() + i * rows * H);
          const T* keys = c.keys(g) + (from - c.base) * H;
          if constexpr (std::is_same_v<T, double>) {
            product(true, M, W, H, stacked.data(), keys, scores.data());
          } else {
            raw.resize(size_t(M * W));
            product(true, M, W, H, stacked.data(), keys, raw.data());
            std::copy(raw.begin(), raw.end(), scores.begin());
          }
          std::fill(weights.begin(), weights.end(), T(0));
          for (int64_t i = 0; i < group; ++i)
            for (int64_t s = s0; s < s0 + rows; ++s) {
              const auto [lo, hi] = visible(b, s, c);
              if (lo >= hi) continue;  // nothing visible: zeros
              const int64_t m = i * rows + s - s0;
              softmax_row(b, g * group + i, s, scores.data() + m * W - from, weights.data() + m * W - from, lo, hi);
            }
          product(false, M, H, W, weights.data(), c.values(g) + (from - c.base) * H, head.data());
          for (int64_t i = 0; i < group; ++i)
            for (int64_t s = s0; s < s0 + rows; ++s)
              std::copy_n(head.data() + (i * rows + s - s0) * H, H, out.data() + ((b * S + s) * N + g * group + i) * H);
        }
      }
    }
    return out;
  }
};

Values GroupQueryAttention::run(const Values& in, RunContext&) {
  const DType dtype = input_tensor(in, kQuery).dtype();
  require_types<Types>(dtype);
  return with_attention_type(dtype, [&]<class T>() { return Call<T>(*this, in, dtype).outputs(); });
}

}  // namespace

void register_group_query_attention(Registry& reg) {
  reg.add("com.microsoft", "GroupQueryAttention", {1}, make<GroupQueryAttention>);
}

}  // namespace refeval::ops::contrib
