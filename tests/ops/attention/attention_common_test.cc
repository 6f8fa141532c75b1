// The attention family computes float tensors in float and double ones in double
// (attention_common.h); any other element type is refused by each operator, naming the node and
// the types it takes.
#include "refeval/builder.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using namespace refeval::build;

TEST_CASE("attention operators refuse integer query, key and value, listing the float types") {
  const Tensor q = tensor<int32_t>({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}), q3 = q.reshaped({1, 2, 4});  // LinearAttention: (B, T, H*D)
  const std::vector<Attribute> heads = {attr("q_num_heads", int64_t(1)), attr("kv_num_heads", int64_t(1)), attr("update_rule", "linear")};
  const std::vector<std::tuple<Node, int64_t, Tensor>> nodes = {
      {node("Attention", {"q", "k", "v"}, {"y"}), 23, q},
      {node("FlexAttention", {"q", "k", "v"}, {"y"}, {}, "", "ai.onnx.preview"), 1, q},
      {node("LinearAttention", {"q", "k", "v"}, {"y"}, heads), 27, q3},
  };
  for (const auto& [n, opset, x] : nodes) {
    const std::string op = n.op_type;  // a copy: clang 14 cannot capture a structured binding
    CAPTURE(op);
    CHECK_THROWS_WITH_AS(run_node(n, {x, x, x}, opset), doctest::Contains("element type int32 is not supported (supported: float, double"), Error);
  }
}
