// Binary and variadic elementwise ops: comparisons, logic, bitwise, Pow, Mod, Clip, Where,
// Max/Min/Sum/Mean: integer rules, NaN propagation, broadcasting and errors.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {
const float kNaN = std::numeric_limits<float>::quiet_NaN();
}

TEST_CASE("binary ops") {
  struct Case { const char* op; std::vector<Attribute> attrs; Tensor a, b, expected; };
  const Case cases[] = {
      {"Equal", {}, tensor<std::string>({2}, {"a", "b"}), tensor<std::string>({1}, {"a"}), tensor<bool>({2}, {true, false})},
      {"Less", {}, tensor<float>({2}, {kNaN, 1.f}), tensor<float>({2}, {1.f, 2.f}), tensor<bool>({2}, {false, true})},
      {"GreaterOrEqual", {}, tensor<uint64_t>({2}, {UINT64_MAX, 0}), tensor<uint64_t>({1}, {1}), tensor<bool>({2}, {true, false})},
      {"Xor", {}, tensor<bool>({2, 2}, {true, true, false, false}), tensor<bool>({2}, {true, false}), tensor<bool>({2, 2}, {false, true, true, false})},
      // shifting by the bit width or more gives 0
      {"BitShift", {attr("direction", "LEFT")}, tensor<uint8_t>({3}, {1, 1, 255}), tensor<uint8_t>({3}, {7, 8, 1}), tensor<uint8_t>({3}, {128, 0, 254})},
      {"BitShift", {attr("direction", "RIGHT")}, tensor<uint64_t>({2}, {UINT64_MAX, 8}), tensor<uint64_t>({2}, {64, 3}), tensor<uint64_t>({2}, {0, 1})},
      {"BitwiseAnd", {}, tensor<int8_t>({2}, {-1, 6}), tensor<int8_t>({2}, {5, 3}), tensor<int8_t>({2}, {5, 2})},
      // Python's % for integers: the sign of the divisor
      {"Mod", {}, tensor<int32_t>({4}, {-7, 7, -7, INT32_MIN}), tensor<int32_t>({4}, {3, -3, -3, -1}), tensor<int32_t>({4}, {2, -2, -1, 0})},
      {"Mod", {attr("fmod", int64_t(1))}, tensor<int32_t>({2}, {-7, 7}), tensor<int32_t>({2}, {3, -3}), tensor<int32_t>({2}, {-1, 1})},
      {"Mod", {attr("fmod", int64_t(1))}, tensor<float>({2}, {-7.5f, 7.5f}), tensor<float>({2}, {2.f, -2.f}), tensor<float>({2}, {-1.5f, 1.5f})},
      // narrow integer products wrap as numpy's: np.int16(300) * np.int16(300) == 24464
      {"Mul", {}, tensor<int16_t>({3}, {300, -32768, -1}), tensor<int16_t>({3}, {300, -1, -1}), tensor<int16_t>({3}, {24464, -32768, 1})},
      {"Mul", {}, tensor<uint16_t>({2}, {65535, 300}), tensor<uint16_t>({2}, {65535, 300}), tensor<uint16_t>({2}, {1, 24464})},
      // integer powers wrap; float exponents of integer bases truncate
      {"Pow", {}, tensor<int32_t>({3}, {2, -3, 65536}), tensor<int64_t>({3}, {10, 3, 2}), tensor<int32_t>({3}, {1024, -27, 0})},
      {"Pow", {}, tensor<int64_t>({2}, {2, 9}), tensor<float>({2}, {0.5f, 0.5f}), tensor<int64_t>({2}, {1, 3})},
      {"Pow", {}, tensor<float>({2}, {2.f, 4.f}), tensor<uint8_t>({1}, {3}), tensor<float>({2}, {8.f, 64.f})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.op);
    check_equal(run_node(node(c.op, {"a", "b"}, {"c"}, c.attrs), {c.a, c.b})[0], c.expected);
  }
}

TEST_CASE("Pow by a scalar 0.5 gives numpy's float32 np.power bit for bit, signed zeros and infinities included") {
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor x = tensor<float>({11}, {4, 2, 0, -0.f, -inf, inf, -1, kNaN, 3e-39f, 1e30f, 0.7f});
  // np.power(x, np.float32(0.5)) with numpy 1.24: pow(-0, 0.5) is +0 and pow(-inf, 0.5) is +inf, unlike sqrt.
  const std::vector<float> numpy = {2.f, 1.4142135381698608f, 0.f, 0.f, inf, inf, kNaN, kNaN, 5.477226186103597e-20f,
                                    999999986991104.f, 0.8366600275039673f};
  for (const Tensor& half : {tensor<float>({}, {0.5f}), tensor<double>({1}, {0.5})}) {
    const Tensor z = run_node(node("Pow", {"a", "b"}, {"c"}), {x, half})[0].tensor();
    for (size_t i = 0; i < numpy.size(); ++i) {
      CAPTURE(i);
      const float got = z.data<float>()[i];
      if (std::isnan(numpy[i])) CHECK(std::isnan(got));
      else CHECK(std::memcmp(&got, &numpy[i], sizeof(float)) == 0);
    }
  }
}

TEST_CASE("Pow of a scalar by a one-element exponent has the broadcast shape (1,), as numpy's") {
  // np.power(np.float32(3), np.array([2], np.float32)) is array([9.], dtype=float32): shape (1,)
  for (const float e : {2.f, 3.f, 0.5f, 1.5f}) {
    CAPTURE(e);
    const Tensor z = run_node(node("Pow", {"a", "b"}, {"c"}), {tensor<float>({}, {4.f}), tensor<float>({1}, {e})})[0].tensor();
    CHECK(z.shape() == Shape{1});
    CHECK(z.data<float>()[0] == std::pow(4.f, e));
  }
}

TEST_CASE("binary op errors") {
  CHECK_THROWS_WITH_AS(run_node(node("Mod", {"a", "b"}, {"c"}), {tensor<int64_t>({1}, {1}), tensor<int64_t>({1}, {0})}),
                       doctest::Contains("modulo by zero"), Error);
  CHECK_THROWS_AS(run_node(node("Mod", {"a", "b"}, {"c"}), {tensor<float>({1}, {1}), tensor<float>({1}, {2})}), Error);
  CHECK_THROWS_AS(run_node(node("Pow", {"a", "b"}, {"c"}), {tensor<int32_t>({1}, {2}), tensor<int32_t>({1}, {-1})}), Error);
  CHECK_THROWS_AS(run_node(node("BitShift", {"a", "b"}, {"c"}, {attr("direction", "UP")}), {tensor<uint8_t>({1}, {1}), tensor<uint8_t>({1}, {1})}), Error);
  CHECK_THROWS_AS(run_node(node("Equal", {"a", "b"}, {"c"}), {tensor<float>({2}, {1, 2}), tensor<float>({3}, {1, 2, 3})}), Error);
}

TEST_CASE("variadic Max/Min/Sum/Mean broadcast and propagate NaN") {
  const Tensor a = tensor<float>({2, 1}, {1.f, kNaN});
  const Tensor b = tensor<float>({3}, {0.f, 2.f, 4.f});
  check_equal(run_node(node("Max", {"a", "b"}, {"c"}), {a, b})[0], tensor<float>({2, 3}, {1, 2, 4, kNaN, kNaN, kNaN}));
  check_equal(run_node(node("Min", {"a", "b"}, {"c"}), {a, b})[0], tensor<float>({2, 3}, {0, 1, 1, kNaN, kNaN, kNaN}));
  check_equal(run_node(node("Mean", {"a", "b", "b"}, {"c"}), {tensor<float>({1}, {3}), b, b})[0], tensor<float>({3}, {1, 7.f / 3, 11.f / 3}));
  check_equal(run_node(node("Sum", {"a"}, {"c"}), {b})[0], b);
  check_equal(run_node(node("Max", {"a", "b"}, {"c"}), {tensor<int8_t>({2}, {-128, 5}), tensor<int8_t>({1}, {0})})[0], tensor<int8_t>({2}, {0, 5}));
}

TEST_CASE("Clip: attributes before opset 11, optional inputs after") {
  const Tensor x = tensor<float>({4}, {-5.f, 0.5f, 5.f, kNaN});
  check_equal(run_node(node("Clip", {"x"}, {"y"}, {attr("min", -1.f), attr("max", 1.f)}), {x}, 6)[0],
              tensor<float>({4}, {-1.f, 0.5f, 1.f, kNaN}));
  check_equal(run_node(node("Clip", {"x", "", "hi"}, {"y"}), {x, Value(), tensor<float>({}, {2.f})}, 13)[0],
              tensor<float>({4}, {-5.f, 0.5f, 2.f, kNaN}));
  // min > max: everything becomes max, as numpy.clip does
  check_equal(run_node(node("Clip", {"x", "lo", "hi"}, {"y"}), {tensor<int32_t>({2}, {-9, 9}), tensor<int32_t>({}, {3}), tensor<int32_t>({}, {1})}, 13)[0],
              tensor<int32_t>({2}, {1, 1}));
  CHECK_THROWS_AS(run_node(node("Clip", {"x", "lo"}, {"y"}), {x, tensor<float>({2}, {0, 1})}, 13), Error);
}

TEST_CASE("Where broadcasts condition, X and Y, of any element type") {
  auto out = run_node(node("Where", {"c", "x", "y"}, {"z"}),
                      {tensor<bool>({2, 1}, {true, false}), tensor<std::string>({2}, {"a", "b"}), tensor<std::string>({}, {"-"})});
  check_equal(out[0], tensor<std::string>({2, 2}, {"a", "b", "-", "-"}));
  auto num = run_node(node("Where", {"c", "x", "y"}, {"z"}),
                      {tensor<bool>({3}, {true, false, true}), tensor<bool>({1}, {true}), tensor<bool>({3}, {false, false, false})});
  check_equal(num[0], tensor<bool>({3}, {true, false, true}));
  CHECK_THROWS_AS(run_node(node("Where", {"c", "x", "y"}, {"z"}), {tensor<int32_t>({1}, {1}), tensor<float>({1}, {1}), tensor<float>({1}, {2})}), Error);
}

TEST_CASE("before opset 7, broadcasting needs broadcast=1 and follows axis") {
  const Tensor a = tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  // B lines up with A's dimension 0 through axis=0
  check_equal(run_node(node("Add", {"a", "b"}, {"c"}, {attr("broadcast", int64_t(1)), attr("axis", int64_t(0))}),
                       {a, tensor<float>({2}, {10, 20})}, 6)[0],
              tensor<float>({2, 3}, {11, 12, 13, 24, 25, 26}));
  // default: B is A's trailing dimensions
  check_equal(run_node(node("Greater", {"a", "b"}, {"c"}, {attr("broadcast", int64_t(1))}), {a, tensor<float>({3}, {0, 5, 5})}, 1)[0],
              tensor<bool>({2, 3}, {true, false, false, true, false, true}));
  // without broadcast the shapes must be equal
  CHECK_THROWS_AS(run_node(node("Pow", {"a", "b"}, {"c"}), {a, tensor<float>({3}, {1, 2, 3})}, 1), Error);
  CHECK_THROWS_AS(run_node(node("Add", {"a", "b"}, {"c"}, {attr("broadcast", int64_t(1)), attr("axis", int64_t(1))}),
                           {a, tensor<float>({2}, {1, 2})}, 6), Error);
}

TEST_CASE("opset 1 ops accept consumed_inputs") {
  check_equal(run_node(node("Abs", {"x"}, {"y"}, {attr("consumed_inputs", std::vector<int64_t>{0})}), {tensor<float>({1}, {-2})}, 1)[0],
              tensor<float>({1}, {2}));
  check_equal(run_node(node("Sum", {"x", "z"}, {"y"}, {attr("consumed_inputs", std::vector<int64_t>{0, 0})}),
                       {tensor<float>({1}, {1}), tensor<float>({1}, {2})}, 1)[0],
              tensor<float>({1}, {3}));
}

namespace {

// Where over [2, 3, 37] outputs with each input either full or broadcast (a scalar or a [37] row),
// against the elementwise definition; every width class and every stride pattern of the runs.
template <class T>
void check_where_patterns(T (*make)(size_t)) {
  const Shape full{2, 3, 37};
  std::vector<T> xs(222), ys(222);
  std::vector<bool> cs(222);
  for (size_t i = 0; i < 222; ++i) xs[i] = make(i), ys[i] = make(i + 1000), cs[i] = (i * 7 % 5) < 2;
  for (int pattern = 0; pattern < 27; ++pattern) {
    // 0: full, 1: scalar, 2: one row of 37 repeated
    const int pc = pattern % 3, px = pattern / 3 % 3, py = pattern / 9;
    if (pc != 0 && px != 0 && py != 0) continue;  // the output is [2, 3, 37]: one input at least is full
    auto shape_of = [&](int k) { return k == 0 ? full : k == 1 ? Shape{} : Shape{37}; };
    auto index = [&](int k, size_t i) { return k == 0 ? i : k == 1 ? size_t(0) : i % 37; };
    auto take = [&]<class V>(const std::vector<V>& v, int k) {
      std::vector<V> out;
      for (size_t i = 0; i < size_t(shape_size(shape_of(k))); ++i) out.push_back(v[i]);
      return out;
    };
    std::vector<T> want(222);
    for (size_t i = 0; i < 222; ++i) want[i] = cs[index(pc, i)] ? xs[index(px, i)] : ys[index(py, i)];
    CAPTURE(pattern);
    const Values out = run_node(node("Where", {"c", "x", "y"}, {"z"}),
                                {tensor<bool>(shape_of(pc), take(cs, pc)), tensor<T>(shape_of(px), take(xs, px)),
                                 tensor<T>(shape_of(py), take(ys, py))});
    check_equal(out[0], tensor<T>(full, want), Tolerance{0, 0});
  }
}

}  // namespace

TEST_CASE("Where: every broadcast pattern of condition, X and Y, for every element width") {
  check_where_patterns<uint8_t>([](size_t i) { return uint8_t(i * 13); });
  check_where_patterns<int16_t>([](size_t i) { return int16_t(i * 977); });
  check_where_patterns<float>([](size_t i) { return float(i) * -0.5f; });
  check_where_patterns<double>([](size_t i) { return double(i) * 1e300; });
  check_where_patterns<std::string>([](size_t i) { return std::to_string(i); });
}

TEST_CASE("float Max and Min of equal shapes (vector path, tails) follow the scalar rules: NaN wins, ties keep A") {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> pool = {1.0f, -1.0f, 0.0f, -0.0f, 2.5f, inf, -inf, kNaN, 3.0f, -7.0f, 1e-40f};
  std::vector<float> a, b;
  for (float u : pool)
    for (float v : pool) a.push_back(u), b.push_back(v);  // 121 pairs: 15 vectors and a tail
  for (const char* op : {"Max", "Min"}) {
    const bool is_max = op[1] == 'a';
    const Tensor y = run_node(node(op, {"a", "b"}, {"c"}), {tensor<float>({int64_t(a.size())}, a), tensor<float>({int64_t(b.size())}, b)})[0].tensor();
    for (size_t i = 0; i < a.size(); ++i) {
      const float got = y.data<float>()[i];
      CAPTURE(op);
      CAPTURE(a[i]);
      CAPTURE(b[i]);
      if (std::isnan(a[i]) || std::isnan(b[i])) {
        CHECK(std::isnan(got));
      } else {
        const float want = (is_max ? a[i] < b[i] : b[i] < a[i]) ? b[i] : a[i];  // equal values (+0, -0): A
        CHECK(std::signbit(got) == std::signbit(want));
        CHECK(got == want);
      }
    }
  }
  // Three inputs fold left to right.
  const Tensor t = tensor<float>({9}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Tensor u = tensor<float>({9}, {9, 8, 7, 6, 5, 4, 3, 2, 1});
  const Tensor v = tensor<float>({9}, {5, 5, 5, 5, 5, 5, 5, 5, kNaN});
  check_equal(run_node(node("Max", {"a", "b", "c"}, {"d"}), {t, u, v})[0], tensor<float>({9}, {9, 8, 7, 6, 5, 6, 7, 8, kNaN}));
  check_equal(run_node(node("Min", {"a", "b", "c"}, {"d"}), {t, u, v})[0], tensor<float>({9}, {1, 2, 3, 4, 5, 4, 3, 2, kNaN}));
}
