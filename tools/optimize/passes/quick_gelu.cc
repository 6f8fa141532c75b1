// SiLU (swish) into com.microsoft QuickGelu, as ORT's QuickGeluFusion does for Llama's SwiGLU:
//   x * Sigmoid(x)         -> QuickGelu(x, alpha = 1)
//   x * Sigmoid(alpha * x) -> QuickGelu(x, alpha)        (a scalar constant alpha)
// in either operand order. QuickGelu(x) = x * sigmoid(alpha x); ORT's CPU kernel takes float and
// float16. A Sigmoid of another value than the one multiplied (a gate: a * Sigmoid(b)) is a
// look-alike and stays as it is.
#include <fmt/format.h>

#include "../pass.h"
#include "refeval/builder.h"

namespace refeval::optimize {

Pass quick_gelu_pass() {
  // The general form first: its refusal (a gate) is the reason --explain gives when the scaled
  // form does not match either.
  const std::vector<Pattern> patterns = {
      Pattern{{{"sig", "Sigmoid", {cap("z")}}, {"y", "Mul", {cap("x"), node("sig")}}}, {}, "sig"},
      Pattern{{{"ax", "Mul", {cap("x"), konst("alpha")}}, {"sig", "Sigmoid", {node("ax")}}, {"y", "Mul", {cap("x"), node("sig")}}}, {}, "sig"},
  };
  Rewrite r{"QuickGelu", patterns, [](const Match& m, RewriteContext& ctx) -> std::optional<Replacement> {
              const GraphIndex& g = ctx.index;
              const std::string& x = m.value("x");
              float alpha = 1.0f;
              if (m.captures.count("alpha")) {
                const auto a = g.scalar(m.value("alpha"));
                if (!a) return ctx.refuse(fmt::format("alpha '{}' is not a scalar", m.value("alpha")));
                const std::vector<Dim>* dx = g.dims(x);
                if (!dx || g.constant(m.value("alpha"))->rank() > dx->size())
                  return ctx.refuse(fmt::format("alpha '{}' may broadcast '{}' to a higher rank", m.value("alpha"), x));
                alpha = float(*a);
              } else if (m.value("z") != x) {  // x * Sigmoid(alpha x) is the second pattern
                return ctx.refuse(fmt::format("the Sigmoid reads '{}', not the multiplied '{}': a gate, not a SiLU", m.value("z"), x));
              }
              const ValueType* t = g.type(x);
              if (!t || (t->dtype != DType::Float && t->dtype != DType::Float16))
                return ctx.refuse(fmt::format("'{}' is {}, not float or float16 (ORT's QuickGelu kernels)", x,
                                              t ? dtype_short_name(t->dtype) : "of unknown type"));
              const Node& y = m.node(g, "y");
              return Replacement{{make_node("QuickGelu", "com.microsoft", {x}, {y.outputs[0]}, {build::attr("alpha", alpha)},
                                            ctx.fused_name(m, "QuickGelu"))},
                                 {}};
            }};
  return rewrite_pass("quick-gelu", Level::Extended, std::move(r));
}

}  // namespace refeval::optimize
