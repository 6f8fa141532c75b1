// Gather, GatherElements, GatherND: negative indices, int32 indices, batch_dims, range errors.
#include <random>

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

TEST_CASE("GatherElements on every axis of ranks 1 to 3, indices smaller than data, equals an index-by-index oracle") {
  std::mt19937 gen(4);
  auto r = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(gen); };
  for (int64_t rank = 1; rank <= 3; ++rank)
    for (int64_t axis = -rank; axis < rank; ++axis) {
      CAPTURE(rank);
      CAPTURE(axis);
      const size_t ax = size_t(axis < 0 ? axis + rank : axis);
      Shape xs, is;
      for (int64_t d = 0; d < rank; ++d) xs.push_back(r(1, 5)), is.push_back(size_t(d) == ax ? r(1, 6) : r(1, xs.back()));
      std::vector<float> x(size_t(shape_size(xs)));
      for (size_t i = 0; i < x.size(); ++i) x[i] = float(i);
      std::vector<int64_t> idx(size_t(shape_size(is)));
      for (int64_t& i : idx) i = r(-xs[ax], xs[ax] - 1);
      const Tensor y = run_node(node("GatherElements", {"x", "i"}, {"y"}, {attr("axis", axis)}),
                                {tensor<float>(xs, x), tensor<int64_t>(is, idx)})[0].tensor();
      std::vector<float> want(idx.size());
      for (int64_t k = 0; k < int64_t(idx.size()); ++k) {
        int64_t rest = k, off = 0, stride = 1;
        std::vector<int64_t> pos(static_cast<size_t>(rank));
        for (int64_t d = rank - 1; d >= 0; --d) pos[size_t(d)] = rest % is[size_t(d)], rest /= is[size_t(d)];
        pos[ax] = idx[size_t(k)] < 0 ? idx[size_t(k)] + xs[ax] : idx[size_t(k)];
        for (int64_t d = rank - 1; d >= 0; --d) off += pos[size_t(d)] * stride, stride *= xs[size_t(d)];
        want[size_t(k)] = x[size_t(off)];
      }
      check_equal(y, tensor<float>(is, want), Tolerance{0, 0});
    }
}
