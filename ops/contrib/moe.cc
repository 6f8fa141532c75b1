// com.microsoft MoE (v1): mixture of experts with float expert weights.
//   inputs: input (rows, hidden) or (B, S, hidden); router_probs (rows, E) (logits);
//           fc1_experts_weights (E, fusion * inter, hidden); fc1_experts_bias? (E, fusion * inter);
//           fc2_experts_weights (E, hidden, inter); fc2_experts_bias? (E, hidden);
//           fc3_experts_weights? (E, inter, hidden); fc3_experts_bias? (E, inter)
//   output: input's shape and type (float, float16 or bfloat16)
//   attributes: k (required), activation_type (relu), normalize_routing_weights (0),
//     use_sparse_mixer (0), swiglu_fusion (0), swiglu_limit (inf), activation_alpha (1),
//     activation_beta (0)
// Routing, activations and the expert FFN: moe_common.h. ORT 1.30's CPU kernel runs float only,
// without fc3, swiglu only with swiglu_fusion = 1, and ignores use_sparse_mixer (its CUDA
// kernel applies it); this implementation covers all of them.
#include "moe_common.h"
#include "refeval/registry.h"

namespace refeval::ops::contrib {
namespace {

class MoE : public OpRun {
 public:
  explicit MoE(const NodeContext& ctx) : attrs_(ctx) {}

  Values run(const Values& in, RunContext&) override {
    const Tensor& input = input_tensor(in, 0);
    const DType dtype = input.dtype();
    require_types<TypeList<float, float16, bfloat16>>(dtype);
    const Tensor& w1 = input_tensor(in, 2);
    const Tensor& w2 = input_tensor(in, 4);
    const Tensor* w3 = has_value(in, 6) ? &input_tensor(in, 6) : nullptr;
    require_dtype(w1, dtype, "fc1_experts_weights");
    require_dtype(w2, dtype, "fc2_experts_weights");
    if (w3) require_dtype(*w3, dtype, "fc3_experts_weights");
    if (!w3 && has_value(in, 7)) fail_runtime("fc3_experts_bias is given without fc3_experts_weights");
    const MoESizes s = moe_sizes(input, input_tensor(in, 1), w1.shape(), w2.shape(), w3 ? &w3->shape() : nullptr, 1, attrs_);

    const int64_t E = s.experts, H = s.hidden, I = s.inter;
    auto layer = [&](const Tensor& w, int64_t n, int64_t k, size_t bias_index, const char* bias_name) {
      ExpertLayer l;
      l.n = n, l.k = k;
      // One expert at a time: a whole layer in double can be gigabytes (128 experts of 5760 x 2880).
      l.weights = [w, n, k](int64_t e) {
        return visit<TypeList<float, float16, bfloat16>>(w.dtype(), [&]<class T>() {
          const T* p = w.data<T>() + e * n * k;
          std::vector<double> out(size_t(n * k));
          for (size_t i = 0; i < out.size(); ++i) out[i] = double(compute_t<T>(p[i]));
          return out;
        });
      };
      l.bias = expert_bias(in, bias_index, E, n, dtype, bias_name);
      return l;
    };
    const ExpertLayer fc1 = layer(w1, attrs_.fused() ? 2 * I : I, H, 3, "fc1_experts_bias");
    const ExpertLayer fc2 = layer(w2, H, I, 5, "fc2_experts_bias");
    const ExpertLayer fc3 = w3 ? layer(*w3, I, H, 7, "fc3_experts_bias") : ExpertLayer{};

    const auto routes = route_rows(to_doubles(input_tensor(in, 1)), nullptr, s, attrs_);
    return {from_doubles(dtype, input.shape(), run_experts(to_doubles(input), routes, fc1, fc2, w3 ? &fc3 : nullptr, s, attrs_))};
  }

 private:
  MoEAttributes attrs_;
};

}  // namespace

void register_moe(Registry& reg) { reg.add("com.microsoft", "MoE", {1}, make<MoE>); }

}  // namespace refeval::ops::contrib
