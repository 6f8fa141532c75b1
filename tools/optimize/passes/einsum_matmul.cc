// A two-operand Einsum that is a batched matrix product, as Transposes around a MatMul: the form
// every later pass reads (attention's scores and context, transpose folding) and ORT's MatMul
// kernels run (its CPU Einsum transposes and loops per batch). MixFormer's Phi writes attention
// as einsum("bthd,bhsd->bhts", q, k) and einsum("bhts,bhsd->bthd", p, v).
//
// Labels in both operands and the output are batch axes (in the output's order), the one label
// in both operands but not the output is contracted, and each operand keeps one label of its own:
//   A -> Transpose to (batch.., m, k),  B -> Transpose to (batch.., k, n),
//   y = Transpose(MatMul(A, B), to the output's order)
// with a Transpose left out where its perm is the identity. Refused with the reason: an ellipsis,
// a label repeated within an operand (a diagonal), a label summed in one operand only, more or
// fewer than one contracted label or one own label per operand, sizes that differ per label.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "../pass.h"
#include "refeval/builder.h"

namespace refeval::optimize {
namespace {

constexpr const char* kPass = "einsum-matmul";

struct Plan {
  std::vector<int64_t> perm_a, perm_b, perm_out;  // empty: identity
};

bool identity(const std::vector<int64_t>& p) {
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] != int64_t(i)) return false;
  return true;
}

// The plan for `equation` on operands of ranks ra and rb, or the reason it is not a product.
std::optional<Plan> plan(std::string equation, size_t ra, size_t rb, std::string& why) {
  equation.erase(std::remove(equation.begin(), equation.end(), ' '), equation.end());
  if (equation.find("...") != std::string::npos) return why = "the equation has an ellipsis", std::nullopt;
  const size_t arrow = equation.find("->");
  const std::string lhs = equation.substr(0, arrow);
  const size_t comma = lhs.find(',');
  if (comma == std::string::npos || lhs.find(',', comma + 1) != std::string::npos) return why = "the equation has not two operands", std::nullopt;
  const std::string a = lhs.substr(0, comma), b = lhs.substr(comma + 1);
  std::string out;
  if (arrow != std::string::npos) {
    out = equation.substr(arrow + 2);
  } else {  // implicit: the labels used once, in alphabetical order
    const std::string all = a + b;
    for (const char c : all)
      if (std::count(all.begin(), all.end(), c) == 1) out += c;
    std::sort(out.begin(), out.end());
  }
  for (const std::string* t : std::initializer_list<const std::string*>{&a, &b, &out}) {
    for (const char c : *t)
      if (!std::isalpha(static_cast<unsigned char>(c))) return why = fmt::format("'{}' is not a list of labels", *t), std::nullopt;
    if (std::count_if(t->begin(), t->end(), [&](char c) { return std::count(t->begin(), t->end(), c) > 1; }))
      return why = fmt::format("a label repeats in '{}' (a diagonal)", *t), std::nullopt;
  }
  if (a.size() != ra || b.size() != rb) return why = fmt::format("'{}' and '{}' do not name the operands' {} and {} axes", a, b, ra, rb), std::nullopt;
  std::string batch, contracted, own_a, own_b;
  for (const char c : out) {
    const bool in_a = a.find(c) != std::string::npos, in_b = b.find(c) != std::string::npos;
    if (in_a && in_b) batch += c;
    else if (in_a) own_a += c;
    else if (in_b) own_b += c;
    else return why = fmt::format("output label '{}' is in no operand", c), std::nullopt;
  }
  for (const char c : a + b) {
    if (out.find(c) != std::string::npos) continue;
    if (a.find(c) == std::string::npos || b.find(c) == std::string::npos)
      return why = fmt::format("label '{}' is summed within one operand", c), std::nullopt;
    if (contracted.find(c) == std::string::npos) contracted += c;
  }
  if (contracted.size() != 1 || own_a.size() != 1 || own_b.size() != 1)
    return why = fmt::format("{} contracted labels and {} and {} labels of each operand's own, not one each", contracted.size(), own_a.size(),
                             own_b.size()),
           std::nullopt;
  Plan p;
  const auto positions = [](const std::string& term, const std::string& labels) {
    std::vector<int64_t> perm;
    for (const char c : labels) perm.push_back(int64_t(term.find(c)));
    return perm;
  };
  p.perm_a = positions(a, batch + own_a + contracted);
  p.perm_b = positions(b, batch + contracted + own_b);
  p.perm_out = positions(batch + own_a + own_b, out);
  return p;
}

std::optional<Replacement> build(const Match& m, RewriteContext& ctx) {
  const GraphIndex& g = ctx.index;
  const Node& e = m.node(g, "y");
  const std::vector<Dim>* da = g.dims(m.value("a"));
  const std::vector<Dim>* db = g.dims(m.value("b"));
  const ValueType* t = g.type(e.outputs[0]);
  if (!da || !db) return ctx.refuse("the operands' ranks are not known");
  if (!t || (t->dtype != DType::Float && t->dtype != DType::Float16 && t->dtype != DType::Double))
    return ctx.refuse("the product is not float, float16 or double");
  const Attribute* eq = e.find_attribute("equation");
  std::string why;
  const auto p = plan(eq ? eq->s : "", da->size(), db->size(), why);
  if (!p) return ctx.refuse(why);
  // A label's sizes must agree: known sizes that differ are refused. Unknown ones (a mask's
  // run-time shape) are taken as Einsum requires them: where they differ, the contracted label
  // fails in MatMul as in Einsum.
  const auto differ = [](const Dim& a, const Dim& b) { return a.fixed() && b.fixed() && a.value != b.value; };
  const size_t batch = p->perm_a.size() - 2;
  for (size_t i = 0; i < batch; ++i)
    if (differ((*da)[size_t(p->perm_a[i])], (*db)[size_t(p->perm_b[i])])) return ctx.refuse("a batch label has different sizes in the operands");
  if (differ((*da)[size_t(p->perm_a.back())], (*db)[size_t(p->perm_b[batch])])) return ctx.refuse("the contracted label has different sizes");
  Replacement rep;
  const std::string base = e.name.empty() ? e.outputs[0] : e.name;
  const auto transposed = [&](const std::string& v, const std::vector<int64_t>& perm, const std::string& what) {
    if (identity(perm)) return v;
    const std::string out = ctx.names.value(base + "/" + what);
    rep.nodes.push_back(make_node("Transpose", "", {v}, {out}, {build::attr("perm", perm)}, ctx.names.node(base + "/" + what)));
    return out;
  };
  const std::string a = transposed(m.value("a"), p->perm_a, "TransposeA"), b = transposed(m.value("b"), p->perm_b, "TransposeB");
  if (identity(p->perm_out)) {
    rep.nodes.push_back(make_node("MatMul", "", {a, b}, {e.outputs[0]}, {}, ctx.names.node(base + "/MatMul")));
  } else {
    const std::string product = ctx.names.value(base + "/product");
    rep.nodes.push_back(make_node("MatMul", "", {a, b}, {product}, {}, ctx.names.node(base + "/MatMul")));
    rep.nodes.push_back(make_node("Transpose", "", {product}, {e.outputs[0]}, {build::attr("perm", p->perm_out)}, ctx.names.node(base + "/TransposeY")));
  }
  return rep;
}

}  // namespace

Pass einsum_matmul_pass() {
  Rewrite r{"MatMul from Einsum", {Pattern{{{"y", "Einsum", {cap("a"), cap("b")}}}}}, build};
  return rewrite_pass(kPass, Level::Extended, std::move(r));
}

}  // namespace refeval::optimize
