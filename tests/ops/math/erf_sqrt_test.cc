// Float32 Erf and Sqrt, which run in vectors (ops/math/vector_math): Erf against erf in double, in
// ulps of the result, over a dense sweep of float bit patterns; Sqrt bit for bit against the
// scalar IEEE square root, the odd tail and the special values included.
#include <bit>
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <limits>

#include "test_util.h"
#include "isa_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::node;

namespace {

// Every `step`-th float bit pattern below `limit` in magnitude, both signs.
std::vector<float> sweep(uint32_t step, float limit) {
  std::vector<float> x;
  for (uint32_t b = 0; b < std::bit_cast<uint32_t>(limit); b += step) {
    x.push_back(std::bit_cast<float>(b));
    x.push_back(-std::bit_cast<float>(b));
  }
  return x;
}

// |got - want| in units of the float spacing at want (a subnormal spacing below 2^-126).
double ulps(float got, double want) {
  const double a = std::abs(want);
  const double ulp = a < 0x1p-126 ? 0x1p-149 : std::ldexp(1.0, std::ilogb(a) - 23);
  return std::abs(double(got) - want) / ulp;
}

Tensor run1(const char* op, const std::vector<float>& x) {
  return run_node(node(op, {"x"}, {"y"}), {tensor<float>({int64_t(x.size())}, x)})[0].tensor();
}

}  // namespace

TEST_CASE("float32 Erf is within 0.6 ulp of erf in double over a dense sweep") {
  testing::for_each_isa([&](Isa) {
    // Beyond |x| = 4 erf rounds to +-1 in float; the sweep's 4.2 M values cover every binade below.
    std::vector<float> x = sweep(1021, 4.5f);
    x.insert(x.end(), {0.0f, -0.0f, 1e-45f, -1e-45f, 0x1.c3706ep-9f, -0x1.ac6212p-1f, 10.0f, -10.0f});
    const Tensor y = run1("Erf", x);
    double worst = 0;
    float at = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double e = ulps(y.data<float>()[i], std::erf(double(x[i])));
      if (e > worst) worst = e, at = x[i];
    }
    INFO("worst " << worst << " ulp at " << std::hexfloat << at);
    CHECK(worst <= 0.6);
    CHECK(worst > 0.4);  // the sweep does meet rounding: a bound that is not vacuous
  });
}

TEST_CASE("float32 Erf keeps signed zeros, saturates, and passes NaN") {
  testing::for_each_isa([&](Isa) {
    const float inf = std::numeric_limits<float>::infinity();
    const Tensor y = run1("Erf", {0.0f, -0.0f, inf, -inf, 100.0f, -100.0f, std::nanf(""), 0.5f, -0.5f});
    const float* p = y.data<float>();
    CHECK(std::bit_cast<uint32_t>(p[0]) == std::bit_cast<uint32_t>(0.0f));
    CHECK(std::bit_cast<uint32_t>(p[1]) == std::bit_cast<uint32_t>(-0.0f));
    CHECK(p[2] == 1.0f);
    CHECK(p[3] == -1.0f);
    CHECK(p[4] == 1.0f);
    CHECK(p[5] == -1.0f);
    CHECK(std::isnan(p[6]));
    CHECK(p[7] == float(std::erf(0.5)));  // 9 elements: the last one runs in the padded tail
    CHECK(p[8] == float(std::erf(-0.5)));
  });
}

TEST_CASE("float32 Sqrt is the IEEE square root bit for bit, tails and special values included") {
  testing::for_each_isa([&](Isa) {
    std::vector<float> x = sweep(65537, std::numeric_limits<float>::infinity());
    const float inf = std::numeric_limits<float>::infinity();
    x.insert(x.end(), {0.0f, -0.0f, inf, -inf, std::nanf(""), 1e-45f, 2.0f});  // odd count: a tail
    const Tensor y = run1("Sqrt", x);
    for (size_t i = 0; i < x.size(); ++i) {
      const double want = std::sqrt(double(x[i]));  // double's sqrt rounded to float is float's
      const float got = y.data<float>()[i];
      if (std::isnan(want)) {
        if (!std::isnan(got)) FAIL_CHECK("Sqrt(" << x[i] << ") = " << got << ", want NaN");
      } else if (std::bit_cast<uint32_t>(got) != std::bit_cast<uint32_t>(float(want))) {
        FAIL_CHECK("Sqrt(" << std::hexfloat << x[i] << ") = " << got << ", want " << float(want));
      }
    }
  });
}
