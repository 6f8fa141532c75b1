// GELU chains (ORT's GeluFusion and FastGeluFusion) into com.microsoft Gelu / FastGelu:
//   Gelu(x)     = 0.5 x (1 + erf(x / sqrt 2))                      (x / 1.41421 or x * 0.70711)
//   FastGelu(x) = 0.5 x (1 + tanh(0.7978845608 (x + 0.044715 x^3)))
// in every operand order the exporters produce: the 0.5 on x, on the sum, or last; x^3 as Pow or
// x*x*x; the OpenAI form 0.79788 x (1 + 0.044715 x x). The coefficients must match to 1e-4
// (relative), so a GELU with another coefficient is left alone.
#include "../pass.h"

namespace refeval::optimize {
namespace {

constexpr double kSqrt2 = 1.4142135623730951, kInvSqrt2 = 0.7071067811865476;
// Within 1e-5 (absolute below 1, relative above): float32 roundings and 5-6 digit spellings of the
// constants, not a different coefficient (0.0447 is 3e-4 from 0.044715: a look-alike, unfused).
constexpr double kSqrt2OverPi = 0.7978845608028654, kCubic = 0.044715, kTol = 1e-5;

// The product 0.5 * x * s in its three orders, with s = node "s", ending at node "y".
std::vector<std::vector<PatternNode>> half_products() {
  return {
      {{"half", "Mul", {cap("x"), val(0.5)}}, {"y", "Mul", {node("half"), node("s")}}},  // (0.5 x) s
      {{"xs", "Mul", {cap("x"), node("s")}}, {"y", "Mul", {node("xs"), val(0.5)}}},      // (x s) 0.5
      {{"hs", "Mul", {node("s"), val(0.5)}}, {"y", "Mul", {cap("x"), node("hs")}}},      // x (0.5 s)
  };
}

Pattern concat(std::vector<PatternNode> a, const std::vector<PatternNode>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return Pattern{a};
}

std::optional<Replacement> unary(const Match& m, RewriteContext& ctx, const std::string& op) {
  const Node& y = m.node(ctx.index, "y");
  return Replacement{{make_node(op, "com.microsoft", {m.value("x")}, {y.outputs[0]}, {}, ctx.fused_name(m, op))}, {}};
}

}  // namespace

Pass gelu_pass() {
  std::vector<Pattern> patterns;
  for (const PatternNode& scaled : {PatternNode{"scaled", "Div", {cap("x"), val(kSqrt2, kTol)}},
                                    PatternNode{"scaled", "Mul", {cap("x"), val(kInvSqrt2, kTol)}}})
    for (const auto& product : half_products())
      patterns.push_back(concat({scaled, {"erf", "Erf", {node("scaled")}}, {"s", "Add", {node("erf"), val(1.0)}}}, product));
  for (Pattern& p : patterns) p.anchor = "erf";
  Rewrite r{"Gelu", patterns, [](const Match& m, RewriteContext& ctx) { return unary(m, ctx, "Gelu"); }};
  return rewrite_pass("gelu", Level::Extended, std::move(r));
}

Pass fast_gelu_pass() {
  std::vector<Pattern> patterns;
  const std::vector<std::vector<PatternNode>> cubes = {
      {{"cube", "Pow", {cap("x"), val(3.0)}}},
      {{"sq", "Mul", {cap("x"), cap("x")}}, {"cube", "Mul", {node("sq"), cap("x")}}},
  };
  for (const auto& cube : cubes)
    for (const auto& product : half_products()) {
      std::vector<PatternNode> body = cube;
      body.push_back({"c", "Mul", {node("cube"), val(kCubic, kTol)}});
      body.push_back({"inner", "Add", {cap("x"), node("c")}});
      body.push_back({"arg", "Mul", {node("inner"), val(kSqrt2OverPi, kTol)}});
      body.push_back({"t", "Tanh", {node("arg")}});
      body.push_back({"s", "Add", {node("t"), val(1.0)}});
      patterns.push_back(concat(body, product));
    }
  for (const auto& product : half_products())  // OpenAI: 0.79788 x * (1 + 0.044715 x x)
    patterns.push_back(concat({{"kx", "Mul", {cap("x"), val(kCubic, kTol)}},
                               {"kxx", "Mul", {node("kx"), cap("x")}},
                               {"poly", "Add", {node("kxx"), val(1.0)}},
                               {"cx", "Mul", {cap("x"), val(kSqrt2OverPi, kTol)}},
                               {"arg", "Mul", {node("cx"), node("poly")}},
                               {"t", "Tanh", {node("arg")}},
                               {"s", "Add", {node("t"), val(1.0)}}},
                              product));
  for (Pattern& p : patterns) p.anchor = "t";
  Rewrite r{"FastGelu", patterns, [](const Match& m, RewriteContext& ctx) { return unary(m, ctx, "FastGelu"); }};
  return rewrite_pass("fast-gelu", Level::Extended, std::move(r));
}

}  // namespace refeval::optimize
