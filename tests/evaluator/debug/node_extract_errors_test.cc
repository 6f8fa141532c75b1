// A one-node model needs a value for everything the node reads; a missing one is named with the node.
#include "refeval/node_extract.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::build;
using refeval::testing::tensor;

TEST_CASE("a one-node model without a value the node reads names the node and the value") {
  const Model m = model(graph("g", {node("Add", {"X", "B"}, {"Y"}, {}, "add")}, {tensor_info("X", DType::Float, {2}),
                              tensor_info("B", DType::Float, {2})}, {tensor_info("Y", DType::Float, {2})}));
  CHECK_THROWS_WITH_AS(single_node_model(m, m.graph.nodes[0], {{"X", Value(tensor<float>({2}, {1, 2}))}}),
                       "node 'add' (Add): no value for 'B' to build the one-node model from", Error);
}
