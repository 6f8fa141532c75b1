// com.microsoft QMoE (v1): mixture of experts with integer-quantized expert weights.
//   inputs: 0 input (rows, hidden) or (B, S, hidden); 1 router_probs (rows, E) (logits);
//           2 fc1_experts_weights uint8 (E, fusion * inter, hidden / pack); 3 fc1_scales;
//           4 fc1_experts_bias? (E, fusion * inter); 5 fc2_experts_weights (E, hidden, inter / pack);
//           6 fc2_scales; 7 fc2_experts_bias? (E, hidden); 8 fc3_experts_weights?
//           (E, inter, hidden / pack); 9 fc3_scales?; 10 fc3_experts_bias? (E, inter);
//           11-13 fc1/fc2/fc3_zero_points? uint8; 14 router_weights? (rows, E)
//   output: input's shape and type (float, float16 or bfloat16)
//   attributes: those of MoE (moe_common.h) plus expert_weight_bits (4), block_size (absent),
//     quant_type ("int"), weights_prepacked (-1)
// A weight matrix (N, K) packs pack = 8 / bits values per byte along K, low-order bits first,
// and dequantizes as w = (q - zero_point) * scale. Without block_size each row has one scale,
// scales (E, N), zero points (E, ceil(N / pack)) packed along N; with block_size (a power of 2,
// >= 16) each row has ceil(K / block_size) blocks, scales (E, N, blocks), zero points
// (E, N, ceil(blocks / pack)) packed along the blocks. The default zero point is 2^(bits-1).
// Scales are float, float16 or bfloat16. router_weights, when given, supplies the mixing weights
// of the experts router_probs selects (moe_common.h).
// ORT 1.30's CPU kernel always renormalises the k weights (it applies softmax to the top-k
// logits only), whatever normalize_routing_weights says; its CUDA kernel and MoE honour the
// attribute, and so does this one. Not implemented: quant_type fp4 (MXFP4), nvfp4, fp8 and
// wfp4afp8, their inputs 15-20, and weights_prepacked = 1 (execution-provider layouts).
#include "moe_common.h"
#include "refeval/registry.h"

namespace refeval::ops::contrib {
namespace {

const char* const kFpModeInputs[] = {"fc1_global_scale", "fc2_global_scale", "fc1_act_scale",
                                     "fc2_act_scale",    "fc1_act_block_scale", "fc2_act_block_scale"};

class QMoE : public OpRun {
 public:
  explicit QMoE(const NodeContext& ctx)
      : attrs_(ctx), bits_(ctx.attr<int64_t>("expert_weight_bits", 4)), block_(ctx.attr<int64_t>("block_size", 0)) {
    const std::string quant = ctx.attr<std::string>("quant_type", "int");
    if (quant != "int")
      ctx.fail(fmt::format("quant_type '{}' is not supported (only 'int'; fp4 = MXFP4, nvfp4, fp8 and wfp4afp8 are not implemented)", quant));
    const int64_t prepacked = ctx.attr<int64_t>("weights_prepacked", -1);
    if (prepacked == 1) ctx.fail("weights_prepacked = 1 (an execution provider's own layout) is not supported");
    if (prepacked != 0 && prepacked != -1) ctx.fail(fmt::format("weights_prepacked must be -1, 0 or 1, got {}", prepacked));
    if (bits_ != 2 && bits_ != 4 && bits_ != 8) ctx.fail(fmt::format("expert_weight_bits must be 2, 4 or 8, got {}", bits_));
    if (ctx.has_attr("block_size") && (block_ < 16 || (block_ & (block_ - 1)) != 0))
      ctx.fail(fmt::format("block_size must be a power of 2 and at least 16, got {}", block_));
    for (size_t i = 0; i < std::size(kFpModeInputs); ++i)
      if (ctx.has_input(15 + i)) ctx.fail(fmt::format("input {} belongs to the FP4/FP8 quant_type modes, which are not supported", kFpModeInputs[i]));
    if (attrs_.sparse_mixer && ctx.has_input(14)) ctx.fail("use_sparse_mixer cannot be combined with router_weights");
  }

  Values run(const Values& in, RunContext&) override {
    const Tensor& input = input_tensor(in, 0);
    const DType dtype = input.dtype();
    require_types<TypeList<float, float16, bfloat16>>(dtype);
    const Tensor& w1 = input_tensor(in, 2);
    const Tensor& w2 = input_tensor(in, 5);
    const Tensor* w3 = has_value(in, 8) ? &input_tensor(in, 8) : nullptr;
    if (!w3 && (has_value(in, 9) || has_value(in, 10) || has_value(in, 13)))
      fail_runtime("fc3_scales, fc3_experts_bias or fc3_zero_points is given without fc3_experts_weights");
    const int64_t pack = 8 / bits_;
    const MoESizes s = moe_sizes(input, input_tensor(in, 1), w1.shape(), w2.shape(), w3 ? &w3->shape() : nullptr, pack, attrs_);

    const int64_t E = s.experts, H = s.hidden, I = s.inter;
    const ExpertLayer fc1 = layer(in, 2, attrs_.fused() ? 2 * I : I, H, s, "fc1");
    const ExpertLayer fc2 = layer(in, 5, H, I, s, "fc2");
    const ExpertLayer fc3 = w3 ? layer(in, 8, I, H, s, "fc3") : ExpertLayer{};

    std::vector<double> router_weights;
    if (has_value(in, 14)) {
      const Tensor& rw = input_tensor(in, 14);
      require_dtype(rw, dtype, "router_weights");
      require_shape(rw, {s.rows, E}, "router_weights");
      router_weights = to_doubles(rw);
    }
    const auto routes = route_rows(to_doubles(input_tensor(in, 1)), has_value(in, 14) ? &router_weights : nullptr, s, attrs_);
    return {from_doubles(dtype, input.shape(), run_experts(to_doubles(input), routes, fc1, fc2, w3 ? &fc3 : nullptr, s, attrs_))};
  }

 private:
  // FC layer `name` from weights at input w, scales at w + 1, bias at w + 2 and zero points at
  // 11 + layer number: (n, k) matrices dequantized one expert at a time.
  ExpertLayer layer(const Values& in, size_t w, int64_t n, int64_t k, const MoESizes& s, const std::string& name) const {
    const Tensor& weights = input_tensor(in, w);
    require_dtype(weights, DType::UInt8, name + "_experts_weights");
    if (!has_value(in, w + 1)) fail_runtime(fmt::format("{}_scales is required for quant_type 'int'", name));
    const Tensor& scales = input_tensor(in, w + 1);
    require_types<TypeList<float, float16, bfloat16>>(scales.dtype());
    const int64_t E = s.experts, pack = 8 / bits_, blocks = block_ > 0 ? (k + block_ - 1) / block_ : 1;
    require_shape(scales, block_ > 0 ? Shape{E, n, blocks} : Shape{E, n}, name + "_scales");
    const size_t zp_index = 11 + (w - 2) / 3;
    const Tensor* zp = has_value(in, zp_index) ? &input_tensor(in, zp_index) : nullptr;
    if (zp) {
      require_dtype(*zp, DType::UInt8, name + "_zero_points");
      require_shape(*zp, block_ > 0 ? Shape{E, n, (blocks + pack - 1) / pack} : Shape{E, (n + pack - 1) / pack}, name + "_zero_points");
    }
    ExpertLayer l;
    l.n = n, l.k = k;
    l.bias = expert_bias(in, w + 2, E, n, input_tensor(in, 0).dtype(), name + "_experts_bias");
    auto scale = std::make_shared<const std::vector<double>>(to_doubles(scales));
    const int64_t bits = bits_, block = block_, mask = (1 << bits_) - 1;
    const int64_t row_bytes = k / pack, zp_row = zp ? zp->dim(zp->rank() - 1) : 0;
    const uint8_t* q = weights.data<uint8_t>();
    const uint8_t* z = zp ? zp->data<uint8_t>() : nullptr;
    // The copies of the tensor handles keep q and z alive as long as the layer.
    l.weights = [=, keep_q = weights, keep_z = zp ? *zp : Tensor()](int64_t e) {
      std::vector<double> out(size_t(n * k));
      for (int64_t r = 0; r < n; ++r)
        for (int64_t c = 0; c < k; ++c) {
          const int64_t b = block > 0 ? c / block : 0, srow = e * n + r;
          const int64_t value = (q[srow * row_bytes + c / pack] >> ((c % pack) * bits)) & mask;
          int64_t zero = int64_t(1) << (bits - 1);
          if (z) {
            const int64_t j = block > 0 ? b : r;  // the packed axis: blocks, or rows without blocks
            const int64_t byte = block > 0 ? srow * zp_row + j / pack : e * zp_row + j / pack;
            zero = (z[byte] >> ((j % pack) * bits)) & mask;
          }
          out[size_t(r * k + c)] = double(value - zero) * (*scale)[size_t(srow * blocks + b)];
        }
      return out;
    };
    return l;
  }

  MoEAttributes attrs_;
  int64_t bits_, block_;
};

}  // namespace

void register_qmoe(Registry& reg) { reg.add("com.microsoft", "QMoE", {1}, make<QMoE>); }

}  // namespace refeval::ops::contrib
