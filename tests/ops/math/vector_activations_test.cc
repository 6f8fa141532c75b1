// The float32 paths of Exp, Log, Sin, Cos, Erf, Elu, LeakyRelu, Sigmoid, Softplus and Gelu
// (both forms), most of which run their transcendental part through glibc's vector functions, against the formulas
// evaluated here in double: within a few float ulps over [-30, 30] (Gelu, Sin and Cos: of |x|,
// where 1 + erf cancels or the argument reduction loses x's last bits), and the right limits at
// infinities, signed zeros and NaN.
#include <cmath>
#include <iomanip>
#include <limits>
#include <numbers>

#include "test_util.h"
#include "isa_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {

std::vector<float> samples() {
  std::vector<float> x;
  for (int i = -3000; i <= 3000; ++i) x.push_back(float(i) * 0.01f + float(i % 7) * 1e-4f);
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {0.0f, -0.0f, inf, -inf, 1e-30f, -1e-30f, 88.5f, -88.5f, 1e30f, -1e30f, std::nanf("")}) x.push_back(v);
  // Around Exp's floor (inputs below -104 give 0 without the vector code's slow path) and a
  // causal mask's float lowest beside ordinary values in one vector.
  for (float v : {-103.9f, -104.0f, -104.1f, 1.5f, std::numeric_limits<float>::lowest(), -2.0f, std::nanf(""), 0.5f})
    x.push_back(v);
  return x;
}

template <class F>
void check_op(const char* op, std::vector<Attribute> attrs, F oracle, double atol_per_x = 0) {
  const std::vector<float> x = samples();
  const Tensor y = run_node(node(op, {"x"}, {"y"}, std::move(attrs)), {tensor<float>({int64_t(x.size())}, x)})[0].tensor();
  const float* got = y.data<float>();
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = oracle(double(x[i]));
    if (std::isnan(want)) {
      CHECK(std::isnan(got[i]));
    } else if (std::isinf(want)) {
      CHECK(double(got[i]) == want);
    } else {
      const double bound = 4e-6 * std::abs(want) + 1e-30 + (std::isinf(x[i]) ? 0 : atol_per_x * std::abs(double(x[i])));
      if (!(std::abs(double(got[i]) - want) <= bound))
        FAIL_CHECK(std::string(op) << "(" << x[i] << ") = " << std::setprecision(9) << got[i] << ", formula " << want);
    }
  }
}

}  // namespace

TEST_CASE("float32 Exp, Log, Sin, Cos, Erf, Elu, LeakyRelu, Sigmoid, Softplus and Gelu match their formulas in double") {
  testing::for_each_isa([&](Isa) {
    check_op("Exp", {}, [](double v) { return std::exp(v); });
    check_op("Log", {}, [](double v) { return std::log(v); });
    check_op("Sin", {}, [](double v) { return std::sin(v); }, 1.2e-7);
    check_op("Cos", {}, [](double v) { return std::cos(v); }, 1.2e-7);
    check_op("Erf", {}, [](double v) { return std::erf(v); });
    check_op("Elu", {attr("alpha", 0.5f)}, [](double v) { return v < 0 ? 0.5 * std::expm1(v) : v; });
    check_op("LeakyRelu", {attr("alpha", 0.25f)}, [](double v) { return v < 0 ? 0.25 * v : v; });
    check_op("Sigmoid", {}, [](double v) { return 1 / (1 + std::exp(-v)); });
    check_op("Softplus", {}, [](double v) { return v > 30 ? v + std::exp(-v) : std::log1p(std::exp(v)); });
    // Gelu multiplies x by 1 + erf (or 1 + tanh), which cancels for negative x: an error of a float
    // ulp of 1 times |x|.
    check_op("Gelu", {}, [](double v) { return 0.5 * v * (1 + std::erf(v / std::numbers::sqrt2)); }, 1.2e-7);
    check_op("Gelu", {attr("approximate", "tanh")}, [](double v) {
      return 0.5 * v * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (v + 0.044715 * v * v * v)));
    }, 1.2e-7);
  });
}

#if defined(__AVX512F__)
#include <immintrin.h>

#include <bit>

#include "../../../ops/math/vector_math.h"
extern "C" __m256 _ZGVdN8v_expf(__m256);

TEST_CASE("float32 Exp on 512-bit vectors gives the bits of the 8-lane path AVX2 machines take") {
  // Every 997th float (all exponents, both signs, NaN payloads, the floor at -104), 16 at a time:
  // exp_floats' 16-lane code against glibc's 8-lane expf with the same floor.
  std::vector<float> x;
  for (uint64_t u = 0; u < (uint64_t(1) << 32); u += 997) x.push_back(std::bit_cast<float>(uint32_t(u)));
  std::vector<float> y(x.size());
  ops::exp_floats(x.data(), y.data(), int64_t(x.size()));
  size_t differ = 0;
  for (size_t i = 0; i + 8 <= x.size(); i += 8) {
    const __m256 v = _mm256_loadu_ps(x.data() + i);
    const __m256 zero = _mm256_cmp_ps(v, _mm256_set1_ps(-104.f), _CMP_LT_OQ);
    alignas(32) uint32_t want[8];
    _mm256_store_ps(reinterpret_cast<float*>(want), _mm256_andnot_ps(zero, _ZGVdN8v_expf(_mm256_andnot_ps(zero, v))));
    for (int l = 0; l < 8; ++l) differ += std::bit_cast<uint32_t>(y[i + l]) != want[l];
  }
  CHECK(differ == 0);
}
#endif
