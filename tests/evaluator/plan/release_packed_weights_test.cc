// EvaluatorOptions::release_packed_weights: a weight that every node reading it took in its own
// form as the session was made (MatMul's packed strips) is let go, and runs give the same bits.
#include <cstring>

#include "refeval/builder.h"
#include "refeval/evaluator.h"
#include "refeval/isa.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::build;
using refeval::testing::tensor;

namespace {

Tensor weight(int64_t k, int64_t n, float scale) {
  std::vector<float> v(size_t(k * n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(int(i % 17) - 8) * scale;
  return tensor<float>({k, n}, v);
}

// y = ((x W1) W2 + W2[0]) W3: W1 read by one MatMul, W2 by a MatMul and a Gather, W3 too small for
// its strips to serve a one-row product (Eigen's).
Model model() {
  const std::vector<Initializer> inits = {{"W1", weight(512, 512, 0.01f)}, {"W2", weight(512, 512, 0.02f)},
                                          {"W3", weight(512, 64, 0.03f)}, {"row", tensor<int64_t>({1}, {0})}};
  Graph g = graph("g",
                  {node("MatMul", {"x", "W1"}, {"h1"}), node("MatMul", {"h1", "W2"}, {"h2"}), node("Gather", {"W2", "row"}, {"r"}),
                   node("Add", {"h2", "r"}, {"h3"}), node("MatMul", {"h3", "W3"}, {"y"})},
                  {tensor_info("x", DType::Float, {"rows", 512})}, {tensor_info("y", DType::Float, {"rows", 64})}, inits);
  return build::model(g);
}

}  // namespace

TEST_CASE("release_packed_weights: a weight only packing MatMuls read is let go; the others stay; the same bits") {
  ReferenceEvaluator kept(model()), released(model(), {nullptr, true});
  const bool packs = active_isa() != Isa::Generic;  // the portable path packs nothing
  const auto value_of = [&](const std::string& name) { return released.model().graph.find_initializer(name)->value; };
  CHECK((value_of("W1").raw_data() == nullptr) == packs);
  CHECK(value_of("W1").shape() == Shape{512, 512});  // its type and shape stay for the model's readers
  CHECK(value_of("W2").raw_data() != nullptr);        // a Gather reads it too
  CHECK(value_of("W3").raw_data() != nullptr);        // a one-row product of it goes to Eigen, which reads it
  CHECK(kept.model().graph.find_initializer("W1")->value.raw_data() != nullptr);
  for (int64_t rows : {1, 3, 40}) {
    CAPTURE(rows);
    std::vector<float> x(size_t(rows * 512));
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 13) - 6) * 0.1f;
    const Tensor a = kept.run({}, {{"x", tensor<float>({rows, 512}, x)}})[0].tensor();
    const Tensor b = released.run({}, {{"x", tensor<float>({rows, 512}, x)}})[0].tensor();
    CHECK(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0);
  }
}
