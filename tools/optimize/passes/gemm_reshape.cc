// A Gemm between a flattening Reshape and its inverse back to MatMul + Add (ORT's GPT-2
// postprocess): Hugging Face's Conv1D computes `addmm(bias, x.view(-1, K), W).view(*x.shape[:-1], N)`,
// which exports as
//   Reshape(x, [-1, K]) -> Gemm(., W, b) -> Reshape(., [x.shape[:-1]..., N])
// and hides the projection from every fusion that expects MatMul + Add on the 3-D activations.
// Checked: Gemm with alpha = beta = 1, no transposed A, a constant 2-D W (a transposed W is
// transposed once here) and 1-D bias of N; the first Reshape keeps x's last dim K as the second
// of two; the second restores x's leading dims exactly (same symbols or sizes) and ends in N.
#include <fmt/format.h>

#include "../pass.h"

namespace refeval::optimize {
namespace {

Tensor transposed(const Tensor& w) {
  const int64_t rows = w.dim(0), cols = w.dim(1);
  std::vector<float> t(size_t(rows * cols));
  const float* v = w.data<float>();
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) t[size_t(j * rows + i)] = v[i * cols + j];
  return Tensor::from_vector<float>({cols, rows}, t);
}

}  // namespace

Pass gemm_reshape_pass() {
  auto plain_gemm = [](const Node& n) {
    return float_attr(n, "alpha", 1.0f) == 1.0f && float_attr(n, "beta", 1.0f) == 1.0f && int_attr(n, "transA", 0) == 0;
  };
  Pattern p{{{"flat", "Reshape", {cap("x"), cap("flat_shape")}},
             {"gemm", "Gemm", {node("flat"), konst("w"), konst("bias")}, plain_gemm, "", "Gemm with alpha 1, beta 1 and A not transposed"},
             {"y", "Reshape", {node("gemm"), cap("out_shape")}}}};
  p.anchor = "gemm";
  Rewrite r{"MatMul+Add (Gemm between Reshapes)", {p}, [](const Match& m, RewriteContext& ctx) -> std::optional<Replacement> {
              const GraphIndex& g = ctx.index;
              const Tensor* w = g.constant(m.value("w"));
              const Tensor* bias = g.constant(m.value("bias"));
              const bool trans_b = int_attr(m.node(g, "gemm"), "transB", 0) != 0;
              if (w->rank() != 2) return ctx.refuse("the Gemm's B is not a 2-D constant");
              if (trans_b && w->dtype() != DType::Float) return ctx.refuse("a transposed B that is not float32");
              const int64_t K = w->dim(trans_b ? 1 : 0), N = w->dim(trans_b ? 0 : 1);
              if (bias->rank() != 1 || bias->dim(0) != N) return ctx.refuse(fmt::format("the Gemm's C is not a 1-D bias of {}", N));
              const std::vector<Dim>* x = g.dims(m.value("x"));
              if (!x || x->size() < 2) return ctx.refuse("the flattened input's shape is unknown");
              if (!x->back().fixed() || x->back().value != K) return ctx.refuse(fmt::format("the input's last dim is not {}", K));
              const auto flat = g.shape_values(m.value("flat_shape"));
              if (!flat || flat->size() != 2 || !(*flat)[1].fixed() || (*flat)[1].value != K)
                return ctx.refuse(fmt::format("the first Reshape is not to (-1, {})", K));
              const auto out = g.shape_values(m.value("out_shape"));
              if (!out || out->size() != x->size() || !out->back().fixed() || out->back().value != N)
                return ctx.refuse("the second Reshape does not restore the input's leading dims");
              // Each leading dim the input's (the same size or symbol, or a 0 copying it); one -1
              // among them is then the input's too, every other dim and N being equal. A 0 copies
              // the dim of the Reshape's own input, the Gemm's (M, N) with M the product of x's
              // leading dims: x's first dim when the others are 1, or N in place of x's second.
              const auto out_ints = g.ints(m.value("out_shape"));
              const bool zero_copies = int_attr(m.node(g, "y"), "allowzero", 0) == 0;
              auto ones_after_first = [&] {
                for (size_t i = 1; i + 1 < x->size(); ++i)
                  if (!(*x)[i].fixed() || (*x)[i].value != 1) return false;
                return true;
              };
              int inferred = 0;
              for (size_t i = 0; i + 1 < x->size(); ++i) {
                if (out_ints && (*out_ints)[i] == -1 && ++inferred == 1) continue;
                const bool zero = zero_copies && (*out)[i].fixed() && (*out)[i].value == 0;
                const bool same = zero ? (i == 0 && ones_after_first()) || (i == 1 && (*x)[1].fixed() && (*x)[1].value == N)
                                       : same_dim((*out)[i], (*x)[i]);
                if (!same) return ctx.refuse(fmt::format("the second Reshape's dim {} is not the input's", i));
              }
              Replacement rep;
              std::string weight = m.value("w");
              if (trans_b) {
                weight = ctx.names.value(weight + "_t");
                rep.initializers.push_back({weight, transposed(*w)});
              }
              const std::string product = ctx.names.value(m.node(g, "gemm").outputs[0] + "_matmul");
              rep.nodes.push_back(make_node("MatMul", "", {m.value("x"), weight}, {product}, {}, ctx.fused_name(m, "MatMul")));
              rep.nodes.push_back(make_node("Add", "", {product, m.value("bias")}, {m.node(g, "y").outputs[0]}, {}, ctx.fused_name(m, "Add")));
              return rep;
            }};
  return rewrite_pass("gemm-reshape", Level::Extended, std::move(r));
}

}  // namespace refeval::optimize
