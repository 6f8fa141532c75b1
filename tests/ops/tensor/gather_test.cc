// Gather, GatherElements, GatherND: negative indices, int32 indices, batch_dims, range errors.
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

TEST_CASE("Gather with negative and int32 indices, scalar index drops the axis") {
  const Tensor x = tensor<std::string>({3, 2}, {"a", "b", "c", "d", "e", "f"});
  check_equal(run_node(node("Gather", {"x", "i"}, {"y"}), {x, tensor<int32_t>({2}, {-1, 0})})[0],
              tensor<std::string>({2, 2}, {"e", "f", "a", "b"}));
  check_equal(run_node(node("Gather", {"x", "i"}, {"y"}, {attr("axis", int64_t(1))}), {x, tensor<int64_t>({}, {1})})[0],
              tensor<std::string>({3}, {"b", "d", "f"}));
}

TEST_CASE("Gather index out of range is a clear error") {
  const Tensor x = tensor<float>({3}, {1, 2, 3});
  CHECK_THROWS_WITH_AS(run_node(node("Gather", {"x", "i"}, {"y"}), {x, tensor<int64_t>({1}, {3})}),
                       doctest::Contains("index 3 is out of range"), Error);
  CHECK_THROWS_AS(run_node(node("Gather", {"x", "i"}, {"y"}), {x, tensor<int64_t>({1}, {-4})}), Error);
  CHECK_THROWS_AS(run_node(node("Gather", {"x", "i"}, {"y"}), {x, tensor<float>({1}, {0})}), Error);  // float indices
}

TEST_CASE("GatherElements picks along the axis; negative indices wrap") {
  const Tensor x = tensor<int64_t>({2, 2}, {1, 2, 3, 4});
  check_equal(run_node(node("GatherElements", {"x", "i"}, {"y"}, {attr("axis", int64_t(1))}), {x, tensor<int64_t>({2, 2}, {0, 0, -1, 0})})[0],
              tensor<int64_t>({2, 2}, {1, 1, 4, 3}));
  CHECK_THROWS_AS(run_node(node("GatherElements", {"x", "i"}, {"y"}), {x, tensor<int64_t>({1, 1}, {2})}), Error);
  CHECK_THROWS_AS(run_node(node("GatherElements", {"x", "i"}, {"y"}), {x, tensor<int64_t>({2}, {0, 1})}), Error);
}

TEST_CASE("GatherND with and without batch_dims") {
  const Tensor x = tensor<int32_t>({2, 2}, {0, 1, 2, 3});
  check_equal(run_node(node("GatherND", {"x", "i"}, {"y"}), {x, tensor<int64_t>({2, 2}, {0, 0, -1, -1})})[0], tensor<int32_t>({2}, {0, 3}));
  check_equal(run_node(node("GatherND", {"x", "i"}, {"y"}), {x, tensor<int64_t>({2, 1}, {1, 0})})[0],
              tensor<int32_t>({2, 2}, {2, 3, 0, 1}));
  check_equal(run_node(node("GatherND", {"x", "i"}, {"y"}, {attr("batch_dims", int64_t(1))}), {x, tensor<int64_t>({2, 1}, {1, 0})})[0],
              tensor<int32_t>({2}, {1, 2}));
  CHECK_THROWS_AS(run_node(node("GatherND", {"x", "i"}, {"y"}), {x, tensor<int64_t>({1, 2}, {0, 2})}), Error);
  CHECK_THROWS_AS(run_node(node("GatherND", {"x", "i"}, {"y"}), {x, tensor<int64_t>({1, 3}, {0, 0, 0})}), Error);
}
