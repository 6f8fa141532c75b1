// The small ops: Shape, Size, Constant, ConstantOfShape, Expand, Range, Identity, Tile, Trilu,
// EyeLike, Compress, NonZero, OneHot, ReverseSequence.
#include <limits>

#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {
Tensor ints(std::vector<int64_t> v) { return tensor<int64_t>({int64_t(v.size())}, v); }
}  // namespace

TEST_CASE("Shape with start/end clamping and Size") {
  const Tensor x = tensor<bool>({2, 3, 4}, std::vector<bool>(24, false));
  struct Case { int64_t start; std::optional<int64_t> end; std::vector<int64_t> expected; };
  const Case cases[] = {{0, std::nullopt, {2, 3, 4}}, {-1, std::nullopt, {4}}, {-10, 10, {2, 3, 4}}, {2, 1, {}}, {1, -1, {3}}};
  for (const auto& c : cases) {
    std::vector<Attribute> attrs{attr("start", c.start)};
    if (c.end) attrs.push_back(attr("end", *c.end));
    check_equal(run_node(node("Shape", {"x"}, {"y"}, attrs), {x})[0], ints(c.expected));
  }
  check_equal(run_node(node("Size", {"x"}, {"y"}), {x})[0], tensor<int64_t>({}, {24}));
}

TEST_CASE("Constant: each value attribute, and exactly one") {
  check_equal(run_node(node("Constant", {}, {"y"}, {attr("value_ints", std::vector<int64_t>{1, 2})}), {})[0], ints({1, 2}));
  check_equal(run_node(node("Constant", {}, {"y"}, {attr("value_float", 2.5f)}), {})[0], tensor<float>({}, {2.5f}));
  check_equal(run_node(node("Constant", {}, {"y"}, {attr("value_strings", std::vector<std::string>{"a"})}), {})[0],
              tensor<std::string>({1}, {"a"}));
  check_equal(run_node(node("Constant", {}, {"y"}, {attr("value", tensor<uint16_t>({2}, {7, 8}))}), {})[0], tensor<uint16_t>({2}, {7, 8}));
  CHECK_THROWS_AS(run_node(node("Constant", {}, {"y"}), {}), Error);
  CHECK_THROWS_AS(run_node(node("Constant", {}, {"y"}, {attr("value_int", int64_t(1)), attr("value_float", 1.0f)}), {}), Error);
  CHECK_THROWS_AS(run_node(node("Constant", {}, {"y"}, {attr("value_int", int64_t(1))}), {}, 11), Error);  // not before 12
}

TEST_CASE("ConstantOfShape: default float zero, typed value, negative dim") {
  check_equal(run_node(node("ConstantOfShape", {"s"}, {"y"}), {ints({2})})[0], tensor<float>({2}, {0, 0}));
  check_equal(run_node(node("ConstantOfShape", {"s"}, {"y"}, {attr("value", tensor<int8_t>({1}, {-3}))}), {ints({1, 2})})[0],
              tensor<int8_t>({1, 2}, {-3, -3}));
  CHECK_THROWS_AS(run_node(node("ConstantOfShape", {"s"}, {"y"}), {ints({-1})}), Error);
}

TEST_CASE("Expand broadcasts both ways") {
  const Tensor x = tensor<std::string>({2, 1}, {"a", "b"});
  check_equal(run_node(node("Expand", {"x", "s"}, {"y"}), {x, ints({2})})[0], tensor<std::string>({2, 2}, {"a", "a", "b", "b"}));
  check_equal(run_node(node("Expand", {"x", "s"}, {"y"}), {x, ints({1, 1, 1})})[0], tensor<std::string>({1, 2, 1}, {"a", "b"}));
  CHECK_THROWS_AS(run_node(node("Expand", {"x", "s"}, {"y"}), {x, ints({3, 3})}), Error);
}

TEST_CASE("Range counts ceil((limit - start) / delta) elements, integers exactly") {
  auto r = [](auto s, auto l, auto d) {
    using T = decltype(s);
    return run_node(node("Range", {"s", "l", "d"}, {"y"}), {Tensor::scalar<T>(s), Tensor::scalar<T>(l), Tensor::scalar<T>(d)})[0];
  };
  check_equal(r(int32_t(10), int32_t(4), int32_t(-3)), tensor<int32_t>({2}, {10, 7}));
  check_equal(r(int16_t(0), int16_t(5), int16_t(2)), tensor<int16_t>({3}, {0, 2, 4}));
  check_equal(r(1.0, 0.0, 1.0), tensor<double>({0}, {}));
  const int64_t big = std::numeric_limits<int64_t>::max();
  check_equal(r(big - 2, big, int64_t(1)), tensor<int64_t>({2}, {big - 2, big - 1}));
  check_equal(r(float16(0.5f), float16(2.0f), float16(0.5f)), tensor<float16>({3}, {float16(0.5f), float16(1.0f), float16(1.5f)}));
  CHECK_THROWS_AS(r(int64_t(0), int64_t(3), int64_t(0)), Error);
}

TEST_CASE("Identity passes tensors and sequences through") {
  Sequence s;
  s.elem_dtype = DType::Float;
  s.items.push_back(tensor<float>({1}, {1}));
  auto out = run_node(node("Identity", {"x"}, {"y"}), {Value(s)});
  REQUIRE(out[0].is_sequence());
  CHECK(out[0].sequence().items.size() == 1);
}

TEST_CASE("Tile repeats each axis; Tile-1 takes tiles and axis inputs") {
  const Tensor x = tensor<int64_t>({1, 2}, {1, 2});
  check_equal(run_node(node("Tile", {"x", "r"}, {"y"}), {x, ints({2, 2})})[0], tensor<int64_t>({2, 4}, {1, 2, 1, 2, 1, 2, 1, 2}));
  check_equal(run_node(node("Tile", {"x", "r"}, {"y"}), {x, ints({0, 1})})[0], tensor<int64_t>({0, 2}, {}));
  check_equal(run_node(node("Tile", {"x", "t", "a"}, {"y"}), {x, ints({2}), ints({0})}, 1)[0], tensor<int64_t>({2, 2}, {1, 2, 1, 2}));
  CHECK_THROWS_AS(run_node(node("Tile", {"x", "r"}, {"y"}), {x, ints({2})}), Error);
  CHECK_THROWS_AS(run_node(node("Tile", {"x", "r"}, {"y"}), {x, ints({1, -1})}), Error);
}

TEST_CASE("Trilu with extreme k and batches") {
  const Tensor x = tensor<int32_t>({2, 2}, {1, 2, 3, 4});
  auto t = [&](int64_t upper, std::optional<int64_t> k) {
    if (!k) return run_node(node("Trilu", {"x"}, {"y"}, {attr("upper", upper)}), {x})[0];
    return run_node(node("Trilu", {"x", "k"}, {"y"}, {attr("upper", upper)}), {x, tensor<int64_t>({}, {*k})})[0];
  };
  check_equal(t(1, std::nullopt), tensor<int32_t>({2, 2}, {1, 2, 0, 4}));
  check_equal(t(0, std::nullopt), tensor<int32_t>({2, 2}, {1, 0, 3, 4}));
  check_equal(t(1, std::numeric_limits<int64_t>::min()), x);
  check_equal(t(1, std::numeric_limits<int64_t>::max()), tensor<int32_t>({2, 2}, {0, 0, 0, 0}));
  check_equal(t(0, -1), tensor<int32_t>({2, 2}, {0, 0, 3, 0}));
}

TEST_CASE("EyeLike with k and dtype") {
  check_equal(run_node(node("EyeLike", {"x"}, {"y"}, {attr("k", int64_t(1)), attr("dtype", int64_t(DType::Double))}),
                       {tensor<int32_t>({2, 3}, {0, 0, 0, 0, 0, 0})})[0],
              tensor<double>({2, 3}, {0, 1, 0, 0, 0, 1}));
  CHECK_THROWS_AS(run_node(node("EyeLike", {"x"}, {"y"}), {tensor<int32_t>({2}, {0, 0})}), Error);
}

TEST_CASE("Compress with and without axis; a short condition") {
  const Tensor x = tensor<std::string>({2, 2}, {"a", "b", "c", "d"});
  check_equal(run_node(node("Compress", {"x", "c"}, {"y"}), {x, tensor<bool>({3}, {false, true, true})})[0],
              tensor<std::string>({2}, {"b", "c"}));
  check_equal(run_node(node("Compress", {"x", "c"}, {"y"}, {attr("axis", int64_t(-1))}), {x, tensor<bool>({1}, {true})})[0],
              tensor<std::string>({2, 1}, {"a", "c"}));
  CHECK_THROWS_AS(run_node(node("Compress", {"x", "c"}, {"y"}, {attr("axis", int64_t(0))}), {x, tensor<bool>({3}, {0, 0, 1})}), Error);
}

TEST_CASE("NonZero on numbers, strings and a scalar") {
  check_equal(run_node(node("NonZero", {"x"}, {"y"}), {tensor<float>({2, 2}, {0, 1, 2, 0})})[0], tensor<int64_t>({2, 2}, {0, 1, 1, 0}));
  check_equal(run_node(node("NonZero", {"x"}, {"y"}), {tensor<std::string>({3}, {"", "a", ""})})[0], tensor<int64_t>({1, 1}, {1}));
  check_equal(run_node(node("NonZero", {"x"}, {"y"}), {tensor<int32_t>({}, {5})})[0], tensor<int64_t>({1, 1}, {0}));
}

TEST_CASE("OneHot: negative and out-of-range indices, axis 0, float depth") {
  auto out = run_node(node("OneHot", {"i", "d", "v"}, {"y"}),
                      {tensor<int64_t>({3}, {0, -1, 5}), tensor<float>({}, {3.7f}), tensor<std::string>({2}, {"off", "on"})});
  check_equal(out[0], tensor<std::string>({3, 3}, {"on", "off", "off", "off", "off", "on", "off", "off", "off"}));
  auto a0 = run_node(node("OneHot", {"i", "d", "v"}, {"y"}, {attr("axis", int64_t(0))}),
                     {tensor<int32_t>({2}, {1, 0}), tensor<int64_t>({1}, {2}), tensor<int8_t>({2}, {0, 1})});
  check_equal(a0[0], tensor<int8_t>({2, 2}, {0, 1, 1, 0}));
  CHECK_THROWS_AS(run_node(node("OneHot", {"i", "d", "v"}, {"y"}), {tensor<int64_t>({1}, {0}), tensor<int64_t>({}, {0}), tensor<int8_t>({2}, {0, 1})}),
                  Error);
}

TEST_CASE("ReverseSequence reverses each batch's prefix") {
  const Tensor x = tensor<int32_t>({3, 2}, {1, 10, 2, 20, 3, 30});  // time x batch
  check_equal(run_node(node("ReverseSequence", {"x", "l"}, {"y"}), {x, ints({3, 2})})[0],
              tensor<int32_t>({3, 2}, {3, 20, 2, 10, 1, 30}));
  CHECK_THROWS_AS(run_node(node("ReverseSequence", {"x", "l"}, {"y"}), {x, ints({4, 1})}), Error);
}

TEST_CASE("absurd sizes are errors, never overflow") {
  const int64_t big = std::numeric_limits<int64_t>::max() / 2;
  const Tensor x = tensor<float>({2}, {1, 2});
  CHECK_THROWS_AS(run_node(node("Reshape", {"x", "s"}, {"y"}), {x, ints({big, 4, -1})}), Error);
  CHECK_THROWS_AS(run_node(node("Tile", {"x", "r"}, {"y"}), {x, ints({big})}), Error);
  CHECK_THROWS_AS(run_node(node("Pad", {"x", "p"}, {"y"}), {x, ints({big, big})}), Error);
  CHECK_THROWS_AS(run_node(node("Split", {"x", "s"}, {"a", "b"}), {x, ints({big * 2, big * 2})}), Error);
  check_equal(run_node(node("EyeLike", {"x"}, {"y"}, {attr("k", std::numeric_limits<int64_t>::max())}),
                       {tensor<float>({2, 2}, {5, 5, 5, 5})})[0],
              tensor<float>({2, 2}, {0, 0, 0, 0}));
}
