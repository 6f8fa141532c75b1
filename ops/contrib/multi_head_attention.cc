// com.microsoft MultiHeadAttention (v1): self or cross attention on already projected Q, K, V.
//   inputs: query (B,S,D) or packed QKV (B,S,N,3,h); key (B,L,D), packed KV (B,L,N,2,h) or
//           BNSH (B,N,L,h); value (B,L,Dv) or BNSH (B,N,L,hv); bias (D+D+Dv)?; key_padding_mask?;
//           attention_bias?; past_key? (B,N,P,h); past_value? (B,N,P,hv)
//   outputs: output (B,S,Dv), present_key? (B,N,P+L,h), present_value? (B,N,P+L,hv)
// bias adds to Q, K and V in their (B, S|L, hidden) forms; keys and values given in BNSH form are
// used as they are. Keys and values follow the past ones. Masks, unidirectional and softmax are
// the core of attention_core.h. Output 3 (qk) is the pre-softmax scores (B, N, S, T): scale * q . k
// plus attention_bias and the masks, as ORT's CPU kernel writes them. Not implemented: buffer
// sharing (past_sequence_length) and beam search (cache_indirection).
#include "attention_core.h"
#include "refeval/registry.h"

namespace refeval::ops::contrib {
namespace {

class MultiHeadAttention : public OpRun {
 public:
  using Types = AttentionTypes;
  explicit MultiHeadAttention(const NodeContext& ctx)
      : attrs_(ctx), heads_(attrs_.heads), wants_present_key_(ctx.has_output(1)), wants_present_value_(ctx.has_output(2)),
        wants_qk_(ctx.has_output(3)) {
    if (ctx.has_input(8) || ctx.has_input(9)) ctx.fail("inputs past_sequence_length and cache_indirection are not supported");
  }

  Values run(const Values& in, RunContext&) override {
    const DType dtype = input_tensor(in, 0).dtype();
    require_types<Types>(dtype);
    return with_attention_type(dtype, [&]<class T>() { return run_as<T>(in, dtype); });
  }

 private:
  template <class T>
  Values run_as(const Values& in, DType dtype) const {
    const Tensor& query = input_tensor(in, 0);
    require_rank(query, 3, 5, "query");
    AttentionProblemOf<T> p;
    p.batch = query.dim(0), p.heads = heads_, p.seq = query.dim(1);
    const int64_t B = p.batch, S = p.seq, N = heads_;
    std::vector<double> bias;
    auto take_bias = [&](int64_t width) { bias = vector_input(in, 3, width, dtype, "bias"); };
    auto bias_at = [&](int64_t offset, int64_t width) {  // the bias slice of one projection, or none
      return bias.empty() ? std::vector<double>{} : std::vector<double>(bias.begin() + offset, bias.begin() + offset + width);
    };
    // (B, L, width) rows (a tensor or values) split into (B, N, L, width / N), plus a bias slice (if any)
    auto heads_of = [&](const auto& rows, int64_t L, int64_t width, const std::vector<double>& b) {
      std::vector<T> heads = split_heads<T>(rows, width, 0, B, L, N, width / N);
      add_head_bias(heads, b, N, L, width / N);
      return heads;
    };

    int64_t L = 0;
    if (query.rank() == 5) {  // packed QKV (B, S, N, 3, h)
      if (has_value(in, 1) || has_value(in, 2)) fail_runtime("packed QKV query (rank 5) takes no key or value");
      if (query.dim(2) != N || query.dim(3) != 3) fail_runtime(fmt::format("query has shape {}, expected (B, S, {}, 3, h)", shape_to_string(query.shape()), N));
      const int64_t h = query.dim(4), D = N * h;
      take_bias(3 * D);
      const auto qkv = unpack_interleaved(to_compute<T>(query), B * S, N, 3, h);
      L = S, p.head_size = p.v_head_size = h;
      p.q = heads_of(qkv[0], S, D, bias_at(0, D)), p.k = heads_of(qkv[1], S, D, bias_at(D, D));
      p.v = heads_of(qkv[2], S, D, bias_at(2 * D, D));
    } else {
      require_rank(query, 3, 3, "query");
      const int64_t D = query.dim(2);
      if (D % N != 0) fail_runtime(fmt::format("query's hidden size {} is not a multiple of num_heads {}", D, N));
      p.head_size = D / N;
      const Tensor& key = input_tensor(in, 1);
      require_dtype(key, dtype, "key");
      if (key.rank() == 5) {  // packed KV (B, L, N, 2, h)
        if (has_value(in, 2)) fail_runtime("packed KV key (rank 5) takes no value");
        if (key.dim(0) != B || key.dim(2) != N || key.dim(3) != 2 || key.dim(4) != p.head_size)
          fail_runtime(fmt::format("key has shape {}, expected ({}, L, {}, 2, {})", shape_to_string(key.shape()), B, N, p.head_size));
        L = key.dim(1), p.v_head_size = p.head_size;
        take_bias(3 * D);
        const auto kv = unpack_interleaved(to_compute<T>(key), B * L, N, 2, p.head_size);
        p.k = heads_of(kv[0], L, D, bias_at(D, D)), p.v = heads_of(kv[1], L, D, bias_at(2 * D, D));
      } else {
        const Tensor& value = input_tensor(in, 2);
        require_dtype(value, dtype, "value");
        if (key.rank() == 4) {  // BNSH key and value: used as given
          if (key.dim(0) != B || key.dim(1) != N || key.dim(3) != p.head_size)
            fail_runtime(fmt::format("key has shape {}, expected ({}, {}, L, {})", shape_to_string(key.shape()), B, N, p.head_size));
          L = key.dim(2);
          require_rank(value, 4, 4, "value");
          if (value.dim(0) != B || value.dim(1) != N || value.dim(2) != L)
            fail_runtime(fmt::format("value has shape {}, expected ({}, {}, {}, hv)", shape_to_string(value.shape()), B, N, L));
          p.v_head_size = value.dim(3);
          take_bias(2 * D + N * p.v_head_size);
          p.k = to_compute<T>(key), p.v = to_compute<T>(value);
          if (has_value(in, 6)) fail_runtime("past_key cannot be combined with key and value in (B, N, L, h) form");
        } else {
          require_rank(key, 3, 3, "key");
          require_rank(value, 3, 3, "value");
          L = key.dim(1);
          if (key.dim(0) != B || key.dim(2) != D) fail_runtime(fmt::format("key has shape {}, expected ({}, L, {})", shape_to_string(key.shape()), B, D));
          if (value.dim(0) != B || value.dim(1) != L || value.dim(2) % N != 0)
            fail_runtime(fmt::format("value has shape {}, expected ({}, {}, a multiple of {})", shape_to_string(value.shape()), B, L, N));
          const int64_t dv = value.dim(2);
          p.v_head_size = dv / N;
          take_bias(2 * D + dv);
          p.k = heads_of(key, L, D, bias_at(D, D)), p.v = heads_of(value, L, dv, bias_at(2 * D, dv));
        }
      }
      p.q = heads_of(query, S, D, bias_at(0, D));
    }

    if (has_value(in, 6) != has_value(in, 7)) fail_runtime("past_key and past_value must be given together");
    if (has_value(in, 6)) {
      const Tensor& pk = input_tensor(in, 6);
      const Tensor& pv = input_tensor(in, 7);
      require_dtype(pk, dtype, "past_key");
      require_dtype(pv, dtype, "past_value");
      require_rank(pk, 4, 4, "past_key");
      const int64_t P = pk.dim(2);
      require_shape(pk, {B, N, P, p.head_size}, "past_key");
      require_shape(pv, {B, N, P, p.v_head_size}, "past_value");
      prepend_past(p, to_compute<T>(pk), to_compute<T>(pv), P, L);
    }
    finish_problem(p, L, attrs_, in,
                   {.key_padding_mask = 4, .key_padding_mask_name = "key_padding_mask", .attention_bias = 5}, dtype);

    // present_key / present_value only when the node asks for them (decoders' prefill graphs often do not)
    Values out = {tensor_from_compute(dtype, {B, S, N * p.v_head_size}, attend(p)),
                  wants_present_key_ ? Value(tensor_from_compute(dtype, {B, N, p.total, p.head_size}, p.k)) : Value(),
                  wants_present_value_ ? Value(tensor_from_compute(dtype, {B, N, p.total, p.v_head_size}, p.v)) : Value()};
    if (wants_qk_) out.push_back(from_doubles(dtype, {B, N, S, p.total}, attention_scores(p)));
    return out;
  }

  AttentionAttrs attrs_;
  int64_t heads_;
  bool wants_present_key_, wants_present_value_, wants_qk_;
};

}  // namespace

void register_multi_head_attention(Registry& reg) {
  reg.add("com.microsoft", "MultiHeadAttention", {1}, make<MultiHeadAttention>);
}

}  // namespace refeval::ops::contrib
