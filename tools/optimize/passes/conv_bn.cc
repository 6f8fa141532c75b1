// Conv followed by inference BatchNormalization (ORT's ConvBNFusion): with constant weights and
// statistics, y = (conv(x, W) + B - mean) * s + bias, s = scale / sqrt(var + epsilon), is
// conv(x, W * s) + (B - mean) * s + bias: one Conv with folded weights, computed in double and
// rounded once to the weights' type.
#include <cmath>

#include "../pass.h"
#include "refeval/compute_vector.h"

namespace refeval::optimize {

Pass conv_bn_pass() {
  auto bn_inference = [](const Node& n) {
    return int_attr(n, "training_mode", 0) == 0 && (n.outputs.size() == 1 || n.outputs[1].empty());
  };
  Rewrite r{
      "Conv+BatchNormalization",
      {Pattern{{{"conv", "Conv", {cap("x"), konst("w"), opt()}},
                {"bn", "BatchNormalization", {node("conv"), konst("scale"), konst("bias"), konst("mean"), konst("var")}, bn_inference}}}},
      [](const Match& m, RewriteContext& ctx) -> std::optional<Replacement> {
        const GraphIndex& g = ctx.index;
        const Node& conv = m.node(g, "conv");
        const Node& bn = m.node(g, "bn");
        const Tensor& w = *g.constant(m.value("w"));
        const Tensor* b = conv.inputs.size() > 2 && !conv.inputs[2].empty() ? g.constant(conv.inputs[2]) : nullptr;
        if (conv.inputs.size() > 2 && !conv.inputs[2].empty() && !b) return std::nullopt;
        if (!is_float_dtype(w.dtype()) || w.rank() < 3) return std::nullopt;
        const int64_t M = w.dim(0), per = w.size() / M;
        const std::vector<double> scale = to_doubles(*g.constant(m.value("scale"))), bias = to_doubles(*g.constant(m.value("bias")));
        const std::vector<double> mean = to_doubles(*g.constant(m.value("mean"))), var = to_doubles(*g.constant(m.value("var")));
        if (int64_t(scale.size()) != M || int64_t(bias.size()) != M || int64_t(mean.size()) != M || int64_t(var.size()) != M)
          return std::nullopt;
        const double eps = float_attr(bn, "epsilon", 1e-5f);
        std::vector<double> wv = to_doubles(w), bv = b ? to_doubles(*b) : std::vector<double>(size_t(M), 0.0);
        for (int64_t o = 0; o < M; ++o) {
          const double s = scale[size_t(o)] / std::sqrt(var[size_t(o)] + eps);
          for (int64_t k = 0; k < per; ++k) wv[size_t(o * per + k)] *= s;
          bv[size_t(o)] = (bv[size_t(o)] - mean[size_t(o)]) * s + bias[size_t(o)];
        }
        const std::string wn = ctx.names.value(m.value("w") + "_bn"), bn_name = ctx.names.value(bn.outputs[0] + "_bias");
        Node fused = conv;
        fused.inputs = {m.value("x"), wn, bn_name};
        fused.outputs = bn.outputs;
        fused.name = ctx.fused_name(m, "Conv");
        return Replacement{{fused},
                           {{wn, tensor_from_compute(w.dtype(), w.shape(), wv)}, {bn_name, tensor_from_compute(w.dtype(), {M}, bv)}}};
      }};
  return rewrite_pass("conv-bn", Level::Basic, std::move(r));
}

Pass matmul_add_gemm_pass() {
  // MatMul(A, B) + C with A of rank 2 and B a 2-D constant is Gemm(A, B, C) when C broadcasts
  // to (M, N) unidirectionally: (N), (1, N) or (M, N).
  Rewrite r{"Gemm",
            {Pattern{{{"mm", "MatMul", {cap("a"), konst("b")}}, {"add", "Add", {node("mm"), konst("c")}}}}},
            [](const Match& m, RewriteContext& ctx) -> std::optional<Replacement> {
              const GraphIndex& g = ctx.index;
              const std::vector<Dim>* a = g.dims(m.value("a"));
              const Tensor& b = *g.constant(m.value("b"));
              const Tensor& c = *g.constant(m.value("c"));
              if (!a || a->size() != 2 || b.rank() != 2) return std::nullopt;
              const int64_t N = b.dim(1);
              const bool c_ok = (c.rank() == 1 && c.dim(0) == N) || (c.rank() == 2 && c.dim(1) == N &&
                                                                      (c.dim(0) == 1 || ((*a)[0].fixed() && c.dim(0) == (*a)[0].value)));
              if (!c_ok) return std::nullopt;
              const Node& add = m.node(g, "add");
              return Replacement{{make_node("Gemm", "", {m.value("a"), m.value("b"), m.value("c")}, add.outputs, {},
                                            ctx.fused_name(m, "Gemm"))},
                                 {}};
            }};
  return rewrite_pass("matmul-add-gemm", Level::Basic, std::move(r));
}

}  // namespace refeval::optimize
