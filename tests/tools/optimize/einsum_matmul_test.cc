// einsum-matmul: a two-operand Einsum that is a batched product becomes Transposes around a
// MatMul, checked against the original's Einsum with the evaluator; every other Einsum stays,
// and --explain says why.
#include <doctest/doctest.h>

#include "optimize_test_util.h"

using namespace refeval;
using namespace refeval::build;
using refeval::testing::count_ops;
using refeval::testing::optimized;
using refeval::testing::refusals;

namespace {

// y = Einsum(equation)(a, b) with the operands' dims given (strings are symbols).
Model einsum_model(const std::string& equation, std::vector<DimSpec> a, std::vector<DimSpec> b) {
  return model(graph("einsum", {node("Einsum", {"a", "b"}, {"y"}, {attr("equation", equation)})},
                     {tensor_info("a", DType::Float, std::move(a)), tensor_info("b", DType::Float, std::move(b))},
                     {tensor_info_unknown_rank("y", DType::Float)}, {}),
               {{"", 17}});
}

}  // namespace

TEST_CASE("einsum-matmul: MixFormer's attention einsums become MatMuls with the transposes they need") {
  // scores: q (B, T, N, h) with keys (B, N, S, h): q to (B, N, T, h), keys to (B, N, h, S)
  const Model scores = optimized(einsum_model("bthd,bhsd->bhts", {"B", "T", 3, 4}, {"B", 3, "S", 4}), {"einsum-matmul"});
  CHECK(count_ops(scores, "Einsum") == 0);
  CHECK(count_ops(scores, "MatMul") == 1);
  CHECK(count_ops(scores, "Transpose") == 2);
  // context: p (B, N, T, S) with values (B, N, S, h), the product (B, N, T, h) transposed to (B, T, N, h)
  const Model context = optimized(einsum_model("bhts,bhsd->bthd", {2, 3, 5, 6}, {2, 3, 6, 4}), {"einsum-matmul"});
  CHECK(count_ops(context, "MatMul") == 1);
  CHECK(count_ops(context, "Transpose") == 1);
  // a plain product needs no transpose; an implicit output is the labels used once, sorted
  const Model plain = optimized(einsum_model("ij,jk", {3, 4}, {4, 5}), {"einsum-matmul"});
  CHECK(count_ops(plain, "MatMul") == 1);
  CHECK(count_ops(plain, "Transpose") == 0);
}

TEST_CASE("einsum-matmul: what is not one batched product stays an Einsum, with its reason") {
  const struct {
    const char* equation;
    std::vector<DimSpec> a, b;
    const char* reason;
  } cases[] = {
      {"...ij,...jk->...ik", {2, 3, 4}, {2, 4, 5}, "the equation has an ellipsis"},
      {"ij,jk,kl->il", {3, 4}, {4, 5}, "the equation has not two operands"},  // a chain of three
      {"iJ,Jk->ik", {3, 4}, {4, 5}, ""},                                        // upper-case labels are labels
      {"i_,_k->ik", {3, 4}, {4, 5}, "'i_' is not a list of labels"},
      {"ii,ij->ij", {3, 3}, {3, 4}, "a label repeats in 'ii' (a diagonal)"},
      {"ij,jk->k", {3, 4}, {4, 5}, "label 'i' is summed within one operand"},
      {"bij,bj->bi", {2, 3, 4}, {2, 4}, "1 contracted labels and 1 and 0 labels of each operand's own"},
      {"bij,bjk", {2, 3, 4}, {2, 4, 5}, "2 contracted labels"},  // implicit: b is used twice, so summed
      {"ij,jk->ikz", {3, 4}, {4, 5}, "output label 'z' is in no operand"},
      {"bij,bjk->bik", {2, 3, 4}, {3, 4, 5}, "a batch label has different sizes in the operands"},
      {"ij,jk->ik", {3, 4}, {5, 6}, "the contracted label has different sizes"},
      {"ijk,jk->ik", {3, 4}, {4, 5}, "do not name the operands' 2 and 2 axes"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.equation);
    const Model m = einsum_model(c.equation, c.a, c.b);
    const std::string lines = refusals(m, {"einsum-matmul"});
    if (*c.reason) CHECK_MESSAGE(lines.find(c.reason) != std::string::npos, lines);
    else CHECK_MESSAGE(lines.empty(), lines);
  }
}
