// com.microsoft DecoderMaskedMultiHeadAttention (v1): attention of one new token (S = 1), the
// decoder step of ORT's beam search (GPT-2, Whisper). B rows are batch x beam.
//   inputs: query (B, 1, D), or packed QKV (B, 1, 3D) when key and value are absent;
//           key (B, 1, D) and value (B, 1, Dv) (self attention), or (B, N, L, h) and
//           (B, N, L, hv) (cross attention: the encoder's keys and values, used as given);
//           mask_index? int32 (B, T); attention_bias? (B or 1, N or 1, 1, T);
//           past_key? (B, N, P or M, h); past_value? (B, N, P or M, hv);
//           past_sequence_length? int32 (1) = P; beam_width? int32 (1); cache_indirection? int32
//           (B / beam_width, beam_width, M); bias? (D + D + Dv), added to Q, K, V (Q only in
//           cross attention)
//   outputs: output (B, 1, N hv); present_key (B, N, P + 1 or M, h); present_value (same, hv);
//            qk (B, N, 1, T) when output_qk = 1
//   attributes: num_heads (required), past_present_share_buffer (0), scale (0 = 1/sqrt(h)),
//               mask_filter_value (-10000), output_qk (0)
// Self attention attends T = P + 1 keys: the past ones, then the new one. Without a shared buffer
// the past holds P rows and present = concat(past, new). With past_present_share_buffer = 1 the
// past and present are buffers of M rows: P comes from past_sequence_length (0 <= P < M), the new
// key and value are written at row P and the rows after it are kept as they are. Cross attention
// (4-D key) attends the L given keys, T = L, and has no past, present nor attention_bias.
//   score_j = scale * q . k_j + attention_bias[b, n, 0, j] (+ mask_filter_value where mask = 0)
//   output  = softmax_j(score) . v;  qk = score (before the softmax)
// Beam search: with cache_indirection, past row j of beam row b is read from row
// (b / beam_width) * beam_width + cache_indirection[b / beam_width, b % beam_width, j] of the
// past buffers; the new token always comes from row b itself. It needs the shared buffer (M
// rows) and is ignored by cross attention.
// K cache layout: ORT documents the shared key buffer as reordered to (B, N, h/x, M, x) with
// x = 16 / sizeof(T); only the CUDA kernel uses that layout. ORT's CPU kernel reads and writes
// the plain (B, N, M, h) layout (checked against ORT 1.30), and refeval follows the CPU kernel.
// Where this differs from ORT 1.30's CPU kernel: ORT refuses packed QKV (a reshape error), an
// unshared past (it requires past_present_share_buffer = 1) and hv != h; with
// past_sequence_length 0 ORT takes the whole buffer as the past and writes the new row out of
// place; refeval attends the new token alone there, as the spec says. qk has the type T (the spec
// allows a float qk for float16 T; ORT's CPU kernel writes T).
#include <cmath>

#include "attention_core.h"
#include "refeval/registry.h"

namespace refeval::ops::contrib {
namespace {

// A one-element int32 input (past_sequence_length, beam_width).
int64_t scalar_input(const Tensor& t, const char* name) {
  require_dtype(t, DType::Int32, name);
  if (t.size() != 1) fail_runtime(fmt::format("{} must have one element, got shape {}", name, shape_to_string(t.shape())));
  return t.data<int32_t>()[0];
}

class DecoderMaskedMultiHeadAttention : public OpRun {
 public:
  using Types = TypeList<float, float16>;
  explicit DecoderMaskedMultiHeadAttention(const NodeContext& ctx)
      : heads_(ctx.required<int64_t>("num_heads")),
        share_buffer_(ctx.attr<int64_t>("past_present_share_buffer", 0) != 0),
        scale_(ctx.attr<float>("scale", 0.0f)),
        mask_filter_value_(ctx.attr<float>("mask_filter_value", -10000.0f)),
        output_qk_(ctx.attr<int64_t>("output_qk", 0) != 0) {
    if (heads_ <= 0) ctx.fail(fmt::format("num_heads must be positive, got {}", heads_));
    if (ctx.has_output(3) && !output_qk_) ctx.fail("output qk needs output_qk=1");
  }

  Values run(const Values& in, RunContext& ctx) override {
    const Tensor& query = input_tensor(in, 0);
    const DType dtype = query.dtype();
    require_types<Types>(dtype);
    require_rank(query, 3, 3, "query");
    if (query.dim(1) != 1)
      fail_runtime(fmt::format("query has shape {}; the sequence length must be 1", shape_to_string(query.shape())));
    const int64_t B = query.dim(0), N = heads_;
    AttentionProblem p;
    p.batch = B, p.heads = N, p.seq = 1;
    const bool cross = has_value(in, 1) && input_tensor(in, 1).rank() == 4;
    const std::vector<std::string>& outs = ctx.node().outputs;
    if (cross && ((outs.size() > 1 && !outs[1].empty()) || (outs.size() > 2 && !outs[2].empty())))
      fail_runtime("cross attention (4-D key) has no present_key or present_value outputs");
    Values out = cross ? cross_attention(in, p, dtype) : self_attention(in, p, dtype);

    p.scale = attention_scale(scale_, p.head_size);
    p.mask_filter_value = mask_filter_value_;
    if (has_value(in, 3)) {
      const Tensor& mask = input_tensor(in, 3);
      require_dtype(mask, DType::Int32, "mask_index");
      require_shape(mask, {B, p.total}, "mask_index");
      const std::vector<int64_t> m = to_int64s(mask, "mask_index");
      p.hidden.resize(m.size());
      for (size_t i = 0; i < m.size(); ++i) p.hidden[i] = m[i] == 0;
    }
    if (has_value(in, 4)) set_attention_bias(p, input_tensor(in, 4), dtype);
    out[0] = from_doubles(dtype, {B, 1, N * p.v_head_size}, attend(p));
    if (output_qk_) out.push_back(from_doubles(dtype, {B, N, 1, p.total}, attention_scores(p)));
    return out;
  }

 private:
  // The query (and self attention's key and value) rows plus their bias slices, as (B, N, 1, size).
  std::vector<double> heads_of(std::vector<double> rows, int64_t width, const std::vector<double>& bias, int64_t offset) const {
    if (!bias.empty())
      for (size_t i = 0; i < rows.size(); ++i) rows[i] += bias[size_t(offset) + i % size_t(width)];
    return split_heads(rows, width, 0, int64_t(rows.size()) / width, 1, heads_, width / heads_);
  }

  Values cross_attention(const Values& in, AttentionProblem& p, DType dtype) const {
    const Tensor& query = input_tensor(in, 0);
    const Tensor& key = input_tensor(in, 1);
    const Tensor& value = input_tensor(in, 2);
    const int64_t B = p.batch, N = p.heads, D = query.dim(2);
    if (D % N != 0) fail_runtime(fmt::format("query's hidden size {} is not a multiple of num_heads {}", D, N));
    p.head_size = D / N;
    require_dtype(key, dtype, "key");
    require_dtype(value, dtype, "value");
    if (key.dim(0) != B || key.dim(1) != N || key.dim(3) != p.head_size)
      fail_runtime(fmt::format("key has shape {}, expected ({}, {}, L, {})", shape_to_string(key.shape()), B, N, p.head_size));
    require_rank(value, 4, 4, "value");
    const int64_t L = key.dim(2);
    if (value.dim(0) != B || value.dim(1) != N || value.dim(2) != L)
      fail_runtime(fmt::format("value has shape {}, expected ({}, {}, {}, hv)", shape_to_string(value.shape()), B, N, L));
    p.v_head_size = value.dim(3);
    if (has_value(in, 5) || has_value(in, 6)) fail_runtime("cross attention (4-D key) takes no past_key or past_value");
    if (has_value(in, 4)) fail_runtime("cross attention (4-D key) takes no attention_bias");
    const std::vector<double> bias = vector_input(in, 10, 2 * D + N * p.v_head_size, dtype, "bias");
    p.q = heads_of(to_doubles(query), D, bias, 0);
    p.k = to_doubles(key), p.v = to_doubles(value);
    p.total = L;
    return {Value(), Value(), Value()};
  }

  Values self_attention(const Values& in, AttentionProblem& p, DType dtype) const {
    const Tensor& query = input_tensor(in, 0);
    const int64_t B = p.batch, N = p.heads;
    std::vector<double> q_rows, k_rows, v_rows;
    int64_t D = 0, Dv = 0;
    if (!has_value(in, 1) && !has_value(in, 2)) {  // packed QKV: per token q | k | v
      const int64_t W = query.dim(2);
      if (W % (3 * N) != 0)
        fail_runtime(fmt::format("packed QKV query has width {}, expected 3 * num_heads * head_size", W));
      D = Dv = W / 3;
      const std::vector<double> qkv = to_doubles(query);
      for (int64_t b = 0; b < B; ++b) {
        auto row = qkv.begin() + b * W;
        q_rows.insert(q_rows.end(), row, row + D);
        k_rows.insert(k_rows.end(), row + D, row + 2 * D);
        v_rows.insert(v_rows.end(), row + 2 * D, row + W);
      }
    } else {
      if (!has_value(in, 1) || !has_value(in, 2)) fail_runtime("key and value must be given together");
      const Tensor& key = input_tensor(in, 1);
      const Tensor& value = input_tensor(in, 2);
      D = query.dim(2);
      require_dtype(key, dtype, "key");
      require_dtype(value, dtype, "value");
      require_shape(key, {B, 1, D}, "key");
      require_rank(value, 3, 3, "value");
      Dv = value.dim(2);
      if (value.dim(0) != B || value.dim(1) != 1 || Dv % N != 0)
        fail_runtime(fmt::format("value has shape {}, expected ({}, 1, a multiple of {})", shape_to_string(value.shape()), B, N));
      q_rows = to_doubles(query), k_rows = to_doubles(key), v_rows = to_doubles(value);
    }
    if (D % N != 0) fail_runtime(fmt::format("query's hidden size {} is not a multiple of num_heads {}", D, N));
    const int64_t h = D / N, hv = Dv / N;
    p.head_size = h, p.v_head_size = hv;
    const std::vector<double> bias = vector_input(in, 10, 2 * D + Dv, dtype, "bias");
    p.q = heads_of(q_rows, D, bias, 0);
    const std::vector<double> k_new = heads_of(k_rows, D, bias, D), v_new = heads_of(v_rows, Dv, bias, 2 * D);

    // Past rows: P attended, M in the buffers (M = P without buffer sharing).
    int64_t P = 0, M = 0;
    std::vector<double> past_k, past_v;
    if (has_value(in, 5) != has_value(in, 6)) fail_runtime("past_key and past_value must be given together");
    if (has_value(in, 5)) {
      const Tensor& pk = input_tensor(in, 5);
      const Tensor& pv = input_tensor(in, 6);
      require_dtype(pk, dtype, "past_key");
      require_dtype(pv, dtype, "past_value");
      require_rank(pk, 4, 4, "past_key");
      M = pk.dim(2);
      require_shape(pk, {B, N, M, h}, "past_key");
      require_shape(pv, {B, N, M, hv}, "past_value");
      past_k = to_doubles(pk), past_v = to_doubles(pv);
      P = M;
      if (share_buffer_) {
        if (!has_value(in, 7)) fail_runtime("past_present_share_buffer=1 needs past_sequence_length");
        P = scalar_input(input_tensor(in, 7), "past_sequence_length");
        if (P < 0 || P >= M)
          fail_runtime(fmt::format("past_sequence_length {} is outside [0, {}) (the rows of past_key)", P, M));
      }
    } else if (share_buffer_) {
      fail_runtime("past_present_share_buffer=1 needs past_key and past_value");
    }

    // Beam search: the source row of every past position.
    int64_t beams = has_value(in, 8) ? scalar_input(input_tensor(in, 8), "beam_width") : 1;
    if (beams < 1 || B % beams != 0) fail_runtime(fmt::format("beam_width {} does not divide the batch {}", beams, B));
    std::vector<int64_t> indirection;
    if (has_value(in, 9)) {
      const Tensor& ci = input_tensor(in, 9);
      if (!share_buffer_) fail_runtime("cache_indirection needs past_present_share_buffer=1");
      require_dtype(ci, DType::Int32, "cache_indirection");
      require_shape(ci, {B / beams, beams, M}, "cache_indirection");
      indirection = to_int64s(ci, "cache_indirection");
      for (int64_t b = 0; b < B; ++b)
        for (int64_t j = 0; j < P; ++j)
          if (const int64_t beam = indirection[size_t(b * M + j)]; beam < 0 || beam >= beams)
            fail_runtime(fmt::format("cache_indirection holds beam {} at ({}, {}, {}); beam_width is {}", beam, b / beams,
                                     b % beams, j, beams));
    } else if (beams > 1) {
      fail_runtime("beam_width > 1 needs cache_indirection");
    }

    // Keys and values attended: P past rows (through the beams), then the new one.
    const int64_t T = P + 1;
    p.past = P, p.total = T;
    p.k.assign(size_t(B * N * T * h), 0.0), p.v.assign(size_t(B * N * T * hv), 0.0);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t n = 0; n < N; ++n)
        for (int64_t j = 0; j <= P; ++j) {
          const int64_t src = indirection.empty() ? b : b / beams * beams + indirection[size_t(b * M + j)];
          const bool now = j == P;
          const double* ks = now ? &k_new[size_t((b * N + n) * h)] : &past_k[size_t(((src * N + n) * M + j) * h)];
          const double* vs = now ? &v_new[size_t((b * N + n) * hv)] : &past_v[size_t(((src * N + n) * M + j) * hv)];
          std::copy_n(ks, h, p.k.begin() + ((b * N + n) * T + j) * h);
          std::copy_n(vs, hv, p.v.begin() + ((b * N + n) * T + j) * hv);
        }

    if (!share_buffer_)
      return {Value(), from_doubles(dtype, {B, N, T, h}, p.k), from_doubles(dtype, {B, N, T, hv}, p.v)};
    for (int64_t bn = 0; bn < B * N; ++bn) {  // the new row goes to row P of each buffer
      std::copy_n(k_new.begin() + bn * h, h, past_k.begin() + (bn * M + P) * h);
      std::copy_n(v_new.begin() + bn * hv, hv, past_v.begin() + (bn * M + P) * hv);
    }
    return {Value(), from_doubles(dtype, {B, N, M, h}, past_k), from_doubles(dtype, {B, N, M, hv}, past_v)};
  }

  int64_t heads_;
  bool share_buffer_;
  float scale_, mask_filter_value_;
  bool output_qk_;
};

}  // namespace

void register_decoder_masked_multi_head_attention(Registry& reg) {
  reg.add("com.microsoft", "DecoderMaskedMultiHeadAttention", {1}, make<DecoderMaskedMultiHeadAttention>);
}

}  // namespace refeval::ops::contrib
