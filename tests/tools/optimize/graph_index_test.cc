// What the optimizer's passes read as constants: initializers (not those a graph input may
// override) and Constant nodes in each of their value forms (tf2onnx and onnxscript write
// value_float, value_int, value_floats and value_ints), not the sparse one.
#include <doctest/doctest.h>

#include "graph_index.h"
#include "optimize_test_util.h"

using namespace refeval;
using namespace refeval::build;

TEST_CASE("graph index: a Constant node's value in every dense form is a constant; a sparse one and an overridable initializer are not") {
  Attribute sparse;
  sparse.name = "sparse_value", sparse.type = AttrType::SparseTensor;
  const Graph g = graph("constants",
                        {node("Constant", {}, {"f"}, {attr("value_float", 0.5f)}), node("Constant", {}, {"i"}, {attr("value_int", int64_t(3))}),
                         node("Constant", {}, {"fs"}, {attr("value_floats", std::vector<float>{1, 2})}),
                         node("Constant", {}, {"is"}, {attr("value_ints", std::vector<int64_t>{4, 5, 6})}),
                         node("Constant", {}, {"t"}, {attr("value", Tensor::from_vector<float>({2, 1}, {7, 8}))}), node("Constant", {}, {"s"}, {sparse})},
                        {testing::f32("w", {2})}, {}, {{"w", Tensor::from_vector<float>({2}, {9, 9})}, {"c", Tensor::scalar<int64_t>(1)}});
  const optimize::GraphIndex index(g);
  CHECK(index.scalar("f") == 0.5);
  CHECK(index.ints("i") == std::vector<int64_t>{3});
  REQUIRE(index.constant("fs") != nullptr);
  CHECK(index.constant("fs")->shape() == Shape{2});
  CHECK(index.constant("fs")->data<float>()[1] == 2.0f);
  CHECK(index.ints("is") == std::vector<int64_t>{4, 5, 6});
  REQUIRE(index.constant("t") != nullptr);
  CHECK(index.constant("t")->shape() == Shape{2, 1});
  CHECK(index.constant("s") == nullptr);
  CHECK(index.constant("w") == nullptr);  // an initializer the graph also takes as an input: fed values win
  CHECK(index.scalar("c") == 1.0);
}
