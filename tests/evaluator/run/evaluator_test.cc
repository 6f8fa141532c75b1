// Feeds are checked against the model's inputs before anything runs: an unknown name, a missing
// input and a value of another kind are refused with the input's name and declared type.
#include "refeval/builder.h"
#include "refeval/evaluator.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::build;
using refeval::testing::tensor;

namespace {
ReferenceEvaluator negation() {
  return ReferenceEvaluator(model(graph("g", {node("Neg", {"X"}, {"Y"})}, {tensor_info("X", DType::Float, {2})},
                                        {tensor_info("Y", DType::Float, {2})})));
}
}  // namespace

TEST_CASE("a feed for a name the model does not take lists the inputs it does") {
  CHECK_THROWS_WITH_AS(negation().run({}, {{"X", Value(tensor<float>({2}, {1, 2}))}, {"Z", Value(tensor<float>({1}, {0}))}}),
                       "'Z' is not an input of the model (inputs: X)", Error);
}

TEST_CASE("an input without a feed is named with its declared type") {
  CHECK_THROWS_WITH_AS(negation().run({}, {}), "missing input 'X' (tensor(float)[2])", Error);
}

TEST_CASE("a sequence fed to a tensor input is refused before the graph runs") {
  Sequence s;
  s.items = {tensor<float>({2}, {1, 2})};
  CHECK_THROWS_WITH_AS(negation().run({}, {{"X", Value(s)}}),
                       "input 'X': expected tensor(float)[2] but got sequence (not a tensor)", Error);
}
