// com.microsoft Attention (v1): multi-head self-attention with the Q/K/V input projection merged
// into one weight, as ORT's GPT-2 and BERT fusions emit it (the output projection stays outside).
//   Attention(input (B,S,Hin), weights (Hin, Dq+Dk+Dv), bias?, mask_index?, past?, attention_bias?,
//             past_sequence_length?) -> output (B,S,Dv), present?
//   QKV = input . weights + bias, split into Q|K|V and into N heads; with past (2,B,N,P,h) the keys
//   and values are past followed by the new ones and present = stack(K, V) (2,B,N,P+S,h). The core
//   (masks, unidirectional, softmax) is attention_core.h. qkv_hidden_sizes gives Dq, Dk, Dv when
//   they differ (Dq must equal Dk); by default each is a third of the weight's columns.
#include "../linalg/linalg_common.h"
#include "attention_core.h"
#include "refeval/registry.h"

namespace refeval::ops::contrib {
namespace {

class Attention : public OpRun {
 public:
  using Types = AttentionTypes;
  explicit Attention(const NodeContext& ctx)
      : attrs_(ctx), heads_(attrs_.heads), sizes_(ctx.attr<std::vector<int64_t>>("qkv_hidden_sizes", {})),
        wants_present_(ctx.has_output(1)), weights_(ctx, 1, false) {
    if (!sizes_.empty() && (sizes_.size() != 3 || sizes_[0] != sizes_[1] || sizes_[0] <= 0 || sizes_[2] <= 0))
      ctx.fail("qkv_hidden_sizes must be three positive sizes with Q's equal to K's");
    for (int64_t s : sizes_)
      if (s % heads_ != 0) ctx.fail(fmt::format("qkv_hidden_sizes {} is not a multiple of num_heads {}", s, heads_));
    // Buffer sharing (a preallocated past of max_sequence_length) and fused rotary embedding are
    // GPU-side optimisations of ORT that this reference does not implement.
    if (ctx.attr<int64_t>("past_present_share_buffer", 0) != 0) ctx.fail("past_present_share_buffer=1 is not supported");
    if (ctx.attr<int64_t>("do_rotary", 0) != 0) ctx.fail("do_rotary=1 is not supported");
    ctx.ignore("rotary_embedding_dim");
    if (ctx.has_input(6)) ctx.fail("input past_sequence_length (buffer sharing) is not supported");
  }

  Values run(const Values& in, RunContext&) override {
    require_types<Types>(input_tensor(in, 0).dtype());
    return with_attention_type(input_tensor(in, 0).dtype(), [&]<class T>() { return run_as<T>(in); });
  }

 private:
  template <class T>
  Values run_as(const Values& in) {
    const Tensor& x = input_tensor(in, 0);
    const Tensor& w = input_tensor(in, 1);
    require_rank(x, 3, 3, "input");
    require_dtype(w, x.dtype(), "weights");
    require_rank(w, 2, 2, "weights");
    const int64_t B = x.dim(0), S = x.dim(1), hin = x.dim(2), width = w.dim(1);
    if (w.dim(0) != hin) fail_runtime(fmt::format("weights has shape {}, expected {} rows (input's hidden size)", shape_to_string(w.shape()), hin));
    std::vector<int64_t> sizes = sizes_;
    if (sizes.empty()) {
      if (width % (3 * heads_) != 0)
        fail_runtime(fmt::format("weights has {} columns, not 3 equal parts divisible by num_heads {}", width, heads_));
      sizes = {width / 3, width / 3, width / 3};
    }
    const int64_t dq = sizes[0], dv = sizes[2], total_width = dq * 2 + dv;
    if (width != total_width) fail_runtime(fmt::format("weights has {} columns, expected {} (qkv_hidden_sizes)", width, total_width));

    // QKV = input . weights + bias: (B * S, Dq + Dk + Dv). For float, the projection is computed
    // as the unfused graph computes it (MatMul's float GEMM, then the bias added in float), so the
    // fused node is exactly as accurate there.
    std::vector<T> qkv(size_t(B * S * width));
    const std::vector<double> bias = vector_input(in, 2, width, x.dtype(), "bias");
    if constexpr (std::is_same_v<T, float>) {
      if (auto packed = weights_.get(w, false)) ops::gemm(false, B * S, x.data<float>(), *packed, qkv.data(), false);
      else ops::gemm(false, false, B * S, width, hin, x.data<float>(), w.data<float>(), qkv.data(), false);
      for (size_t r = 0; r < qkv.size() && !bias.empty(); r += size_t(width))
        for (size_t j = 0; j < size_t(width); ++j) qkv[r + j] += float(bias[j]);
    } else {
      contrib::gemm(false, B * S, width, hin, to_doubles(x).data(), to_doubles(w).data(), qkv.data());
      for (size_t r = 0; r < qkv.size() && !bias.empty(); r += size_t(width))
        for (size_t j = 0; j < size_t(width); ++j) qkv[r + j] += bias[j];
    }

    AttentionProblemOf<T> p;
    p.batch = B, p.heads = heads_, p.seq = S, p.head_size = dq / heads_, p.v_head_size = dv / heads_;
    p.q = split_heads(qkv, width, 0, B, S, heads_, p.head_size);
    p.k = split_heads(qkv, width, dq, B, S, heads_, p.head_size);
    p.v = split_heads(qkv, width, 2 * dq, B, S, heads_, p.v_head_size);
    if (has_value(in, 4)) {
      const Tensor& past = input_tensor(in, 4);
      require_dtype(past, x.dtype(), "past");
      if (dq != dv) fail_runtime("past needs equal hidden sizes for Q, K and V");
      if (past.rank() != 5 || past.dim(0) != 2 || past.dim(1) != B || past.dim(2) != heads_ || past.dim(4) != p.head_size)
        fail_runtime(fmt::format("past has shape {}, expected (2, {}, {}, past_sequence_length, {})", shape_to_string(past.shape()),
                                 B, heads_, p.head_size));
      const std::vector<T> pv = to_compute<T>(past);
      const auto half = pv.begin() + long(pv.size() / 2);
      prepend_past(p, {pv.begin(), half}, {half, pv.end()}, past.dim(3), S);
    }
    finish_problem(p, S, attrs_, in, {.key_padding_mask = 3, .key_padding_mask_name = "mask_index", .attention_bias = 5},
                   x.dtype());

    Tensor out = tensor_from_compute(x.dtype(), {B, S, dv}, attend(p));
    if (!wants_present_) return {out};
    if (dq != dv) fail_runtime("output present needs equal hidden sizes for K and V");
    std::vector<T> present = std::move(p.k);
    present.insert(present.end(), p.v.begin(), p.v.end());
    return {out, tensor_from_compute(x.dtype(), {2, B, heads_, p.total, p.head_size}, present)};
  }

  AttentionAttrs attrs_;
  int64_t heads_;
  std::vector<int64_t> sizes_;
  bool wants_present_;
  // A constant float weight laid out once for the GEMM kernel, as ORT prepacks it: a decoding
  // step's projection (a few rows against 768 x 2304) otherwise spent most of its time copying it.
  ConstantRhsCache weights_;
};

}  // namespace

void register_attention(Registry& reg) { reg.add("com.microsoft", "Attention", {1}, make<Attention>); }

}  // namespace refeval::ops::contrib
