// Einsum (explicit and implicit outputs, ellipsis broadcasting, diagonals, integer types), Det
// and MatMulInteger (zero points per tensor, per row and per column).
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {
Values einsum(const std::string& eq, const Values& in) {
  std::vector<std::string> names;
  for (size_t i = 0; i < in.size(); ++i) names.push_back("x" + std::to_string(i));
  return run_node(node("Einsum", names, {"y"}, {attr("equation", eq)}), in, 12);
}
}  // namespace

TEST_CASE("Einsum equations") {
  const Tensor m = tensor<float>({2, 2}, {1, 2, 3, 4});
  const Tensor v = tensor<float>({2}, {1, 10});
  struct Case { const char* eq; Values in; Tensor expected; };
  const Case cases[] = {
      {"ij,jk->ik", {m, m}, tensor<float>({2, 2}, {7, 10, 15, 22})},       // matrix product
      {"ij->ji", {m}, tensor<float>({2, 2}, {1, 3, 2, 4})},                // transpose
      {"ii->i", {m}, tensor<float>({2}, {1, 4})},                          // diagonal
      {"ii", {m}, tensor<float>({}, {5})},                                 // implicit: trace
      {"ij", {m}, m},                                                      // implicit: identity
      {"ba", {m}, tensor<float>({2, 2}, {1, 3, 2, 4})},                    // implicit output sorts labels
      {"i,i", {v, v}, tensor<float>({}, {101})},                           // inner product
      {"i,j->ij", {v, v}, tensor<float>({2, 2}, {1, 10, 10, 100})},        // outer product
      {"...j,j->...", {m, v}, tensor<float>({2}, {21, 43})},               // ellipsis leading dims
      {"...ij,...jk", {tensor<float>({1, 2, 2}, {1, 2, 3, 4}), m}, tensor<float>({1, 2, 2}, {7, 10, 15, 22})},  // broadcast ellipsis
      {" i j -> j ", {m}, tensor<float>({2}, {4, 6})},                     // spaces, column sums
  };
  for (const auto& c : cases) {
    CAPTURE(c.eq);
    check_equal(einsum(c.eq, c.in)[0], c.expected);
  }
  check_equal(einsum("ij,jk->ik", {tensor<int32_t>({1, 1}, {65536}), tensor<int32_t>({1, 1}, {65536})})[0], tensor<int32_t>({1, 1}, {0}));
  check_equal(einsum("i->", {tensor<int8_t>({2}, {100, 100})})[0], tensor<int8_t>({}, {-56}));
}

TEST_CASE("Einsum errors") {
  const Tensor m = tensor<float>({2, 2}, {1, 2, 3, 4});
  CHECK_THROWS_AS(einsum("ijk->i", {m}), Error);                                           // too many labels
  CHECK_THROWS_AS(einsum("ij,jk->ik", {m, tensor<float>({3, 1}, {1, 2, 3})}), Error);      // size mismatch
  CHECK_THROWS_AS(einsum("ij->iz", {m}), Error);                                           // unknown output label
  CHECK_THROWS_AS(einsum("ij,jk->ik", {m}), Error);                                        // operand count
}

TEST_CASE("Det of a batch of matrices, singular and 1x1") {
  check_equal(run_node(node("Det", {"x"}, {"y"}), {tensor<float>({2, 2, 2}, {1, 2, 3, 4, 2, 4, 1, 2})})[0], tensor<float>({2}, {-2, 0}));
  check_equal(run_node(node("Det", {"x"}, {"y"}), {tensor<double>({1, 1}, {-7})})[0], tensor<double>({}, {-7}));
  check_equal(run_node(node("Det", {"x"}, {"y"}), {tensor<double>({3, 3}, {0, 1, 0, 0, 0, 1, 1, 0, 0})})[0], tensor<double>({}, {1}));  // needs pivoting
  CHECK_THROWS_AS(run_node(node("Det", {"x"}, {"y"}), {tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6})}), Error);
}

TEST_CASE("MatMulInteger with zero points") {
  const Tensor a = tensor<uint8_t>({2, 2}, {10, 11, 12, 13});
  const Tensor b = tensor<uint8_t>({2, 2}, {1, 2, 3, 4});
  // no zero points
  check_equal(run_node(node("MatMulInteger", {"a", "b"}, {"y"}), {a, b}, 10)[0], tensor<int32_t>({2, 2}, {43, 64, 51, 76}));
  // scalar a zero point, per-column b zero point
  check_equal(run_node(node("MatMulInteger", {"a", "b", "za", "zb"}, {"y"}),
                       {a, b, tensor<uint8_t>({}, {10}), tensor<uint8_t>({2}, {1, 2})}, 10)[0],
              tensor<int32_t>({2, 2}, {2, 2, 6, 6}));
  // per-row a zero point, int8 operands
  check_equal(run_node(node("MatMulInteger", {"a", "b", "za"}, {"y"}),
                       {tensor<int8_t>({2, 1}, {-128, 5}), tensor<int8_t>({1, 1}, {-1}), tensor<int8_t>({2}, {-128, 6})}, 10)[0],
              tensor<int32_t>({2, 1}, {0, 1}));
  CHECK_THROWS_AS(run_node(node("MatMulInteger", {"a", "b", "za"}, {"y"}), {a, b, tensor<int8_t>({}, {1})}, 10), Error);
  CHECK_THROWS_AS(run_node(node("MatMulInteger", {"a", "b", "za"}, {"y"}), {a, b, tensor<uint8_t>({3}, {1, 2, 3})}, 10), Error);
}
