// ORT's LayerNormalization / SimplifiedLayerNormalization (default domain v1 and com.microsoft):
// hand-computed values, epsilon inside the square root, statistics outputs, and agreement with
// ONNX's own LayerNormalization-17.
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {
Node layer_norm(const char* op, std::vector<std::string> outs, float epsilon, const char* domain, int64_t axis = -1) {
  std::vector<std::string> ins = {"x", "scale"};
  if (std::string(op) == "LayerNormalization") ins.push_back("b");
  return node(op, ins, outs, {attr("epsilon", epsilon), attr("axis", axis)}, "ln", domain);
}
}  // namespace

TEST_CASE("contrib LayerNormalization: hand-computed rows, epsilon under the square root") {
  struct Case { const char* what; Tensor x, scale, b, y, mean, inv; float epsilon; };
  const Case cases[] = {
      // mean 2.5, variance 1.25: y = (x - 2.5) / sqrt(1.25)
      {"plain row", tensor<float>({1, 4}, {1, 2, 3, 4}), tensor<float>({4}, {1, 1, 1, 1}), tensor<float>({4}, {0, 0, 0, 0}),
       tensor<float>({1, 4}, {-1.3416408f, -0.4472136f, 0.4472136f, 1.3416408f}), tensor<float>({1, 1}, {2.5f}),
       tensor<float>({1, 1}, {0.8944272f}), 0.0f},
      // variance 1 + epsilon 3 = 4 under the root: inv_std 0.5 (not 1 / (1 + 3))
      {"epsilon placement", tensor<float>({2, 2}, {0, 2, 5, 5}), tensor<float>({2}, {2, 1}), tensor<float>({2}, {10, 0}),
       tensor<float>({2, 2}, {9, 0.5f, 10, 0}), tensor<float>({2, 1}, {1, 5}), tensor<float>({2, 1}, {0.5f, 1 / std::sqrt(3.0f)}),
       3.0f},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    for (const char* domain : {"", "com.microsoft"}) {
      const Values out = run_node(layer_norm("LayerNormalization", {"y", "mean", "inv"}, c.epsilon, domain), {c.x, c.scale, c.b}, 13);
      REQUIRE(out.size() == 3);
      check_equal(out[0], c.y);
      check_equal(out[1], c.mean);
      check_equal(out[2], c.inv);
    }
  }
}

TEST_CASE("contrib LayerNormalization normalises over [axis, rank) with scale broadcast") {
  // axis 1 of (1, 2, 2): the four values 1, 3, 5, 7 form one group (mean 4, variance 5)
  const Tensor x = tensor<float>({1, 2, 2}, {1, 3, 5, 7});
  const Values out = run_node(layer_norm("LayerNormalization", {"y"}, 0.0f, "", 1),
                              {x, tensor<float>({2}, {1, 2}), tensor<float>({1}, {1})}, 11);
  const float s = 1 / std::sqrt(5.0f);
  check_equal(out[0], tensor<float>({1, 2, 2}, {1 - 3 * s, 1 - 2 * s, 1 + s, 1 + 6 * s}));
}

TEST_CASE("contrib LayerNormalization agrees with ONNX LayerNormalization-17 (float16 computes in float)") {
  const Tensor x = tensor<float>({2, 3}, {0.5f, -1, 2, 3, 3.5f, -4});
  const Tensor scale = tensor<float>({3}, {1, -2, 0.5f}), b = tensor<float>({3}, {0.1f, 0.2f, 0.3f});
  const Node n = layer_norm("LayerNormalization", {"y", "mean", "inv"}, 1e-5f, "");
  const Values contrib = run_node(n, {x, scale, b}, 16), onnx = run_node(n, {x, scale, b}, 17);
  for (size_t i = 0; i < 3; ++i) check_equal(contrib[i], onnx[i]);

  auto half = [](const Tensor& t) {
    std::vector<float16> v;
    for (float f : t.to_vector<float>()) v.push_back(float16(f));
    return Tensor::from_vector<float16>(t.shape(), v);
  };
  const Values h = run_node(n, {half(x), half(scale), half(b)}, 16);
  CHECK(h[0].tensor().dtype() == DType::Float16);
  CHECK(h[1].tensor().dtype() == DType::Float);  // stash_type 1: statistics stay float
  check_equal(h[0], half(onnx[0].tensor()), {1e-2, 1e-3});
}

TEST_CASE("SimplifiedLayerNormalization divides by the root mean square (no mean subtracted)") {
  struct Case { const char* what; float epsilon; Tensor y, inv; };
  const Case cases[] = {
      {"rms of (1, 7) is 5", 0.0f, tensor<float>({1, 2}, {0.2f, 1.4f}), tensor<float>({1, 1}, {0.2f})},
      {"epsilon 11 under the root: sqrt(25 + 11) = 6", 11.0f, tensor<float>({1, 2}, {1 / 6.0f, 7 / 6.0f}),
       tensor<float>({1, 1}, {1 / 6.0f})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    const Values out = run_node(layer_norm("SimplifiedLayerNormalization", {"y", "inv"}, c.epsilon, ""),
                                {tensor<float>({1, 2}, {1, 7}), tensor<float>({2}, {1, 1})}, 14);
    REQUIRE(out.size() == 2);
    check_equal(out[0], c.y);
    check_equal(out[1], c.inv);
  }
}

TEST_CASE("SimplifiedLayerNormalization resolves in the ai.onnx domain under genai's opset import of 21") {
  // onnxruntime-genai imports {"": 21, "com.microsoft": 1} and emits SimplifiedLayerNormalization
  // in the default domain, where ORT registers it at version 1; later opsets resolve it as well.
  const Tensor x = tensor<float>({2, 3}, {1, -2, 2, 0.5f, 0.5f, -0.5f}), scale = tensor<float>({3}, {1, 2, -1});
  // rms of (1, -2, 2) is sqrt(3), of (0.5, 0.5, -0.5) 0.5; epsilon 0
  const float r = 1 / std::sqrt(3.0f);
  const Tensor y = tensor<float>({2, 3}, {r, -4 * r, -2 * r, 1, 2, 1}), inv = tensor<float>({2, 1}, {r, 2});
  for (int64_t opset : {21, 23, 25}) {
    CAPTURE(opset);
    const Values out = run_node(layer_norm("SimplifiedLayerNormalization", {"y", "inv"}, 0.0f, ""), {x, scale}, opset);
    REQUIRE(out.size() == 2);
    check_equal(out[0], y);
    check_equal(out[1], inv);
  }
}

TEST_CASE("contrib LayerNormalization errors name the problem") {
  const Tensor x = tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK_THROWS_WITH_AS(run_node(layer_norm("LayerNormalization", {"y"}, 1e-5f, ""), {x, tensor<float>({2}, {1, 1}), tensor<float>({3}, {0, 0, 0})}, 13),
                       doctest::Contains("Scale of shape (2,) does not broadcast to (3,)"), Error);
  CHECK_THROWS_WITH_AS(run_node(layer_norm("LayerNormalization", {"y"}, 1e-5f, "", 2), {x, tensor<float>({3}, {1, 1, 1}), tensor<float>({3}, {0, 0, 0})}, 13),
                       doctest::Contains("axis 2 is out of range"), Error);
  CHECK_THROWS_WITH_AS(run_node(node("LayerNormalization", {"x", "scale"}, {"y"}, {attr("stash_type", int64_t(7))}, "ln"),
                                {x, tensor<float>({3}, {1, 1, 1})}, 13),
                       doctest::Contains("stash_type 7"), Error);
}

TEST_CASE("contrib (Simplified)LayerNormalization float32 matches a double oracle at many sizes, NaN confined to its row") {
  for (const char* op : {"LayerNormalization", "SimplifiedLayerNormalization"})
    for (int64_t H : {1, 2, 7, 8, 9, 15, 64, 768, 2049})
      for (int64_t rows : {1, 3}) {
        CAPTURE(op); CAPTURE(H); CAPTURE(rows);
        const bool rms = std::string(op) != "LayerNormalization";
        std::vector<float> xv = wave(size_t(rows * H), 0.61f);
        for (float& v : xv) v = v * 3 + 2;  // an offset the mean must remove
        if (rows > 1) xv[size_t(H / 2)] = NAN;  // row 0 only
        const std::vector<float> gv = wave(size_t(H), 0.3f, 1.1f), bv = wave(size_t(H), 0.9f, 0.5f);
        Values feeds = {tensor<float>({rows, H}, xv), tensor<float>({H}, gv)};
        if (!rms) feeds.push_back(tensor<float>({H}, bv));
        const Values out = run_node(layer_norm(op, {"y"}, 1e-6f, "com.microsoft"), feeds, 1);
        const float* y = out[0].tensor().data<float>();
        for (int64_t r = 0; r < rows; ++r) {
          const float* row = xv.data() + r * H;
          double m = 0, sq = 0;
          if (!rms) {
            for (int64_t j = 0; j < H; ++j) m += row[j];
            m /= double(H);
          }
          for (int64_t j = 0; j < H; ++j) sq += (row[j] - m) * (row[j] - m);
          const double is = 1 / std::sqrt(sq / double(H) + 1e-6);
          for (int64_t j = 0; j < H; ++j) {
            const double want = (row[j] - m) * is * gv[size_t(j)] + (rms ? 0.0 : bv[size_t(j)]);
            if (std::isnan(want)) REQUIRE(std::isnan(y[r * H + j]));
            else REQUIRE(std::fabs(y[r * H + j] - want) <= 1e-6 * std::fabs(want) + 1e-6);
          }
        }
      }
}

TEST_CASE("contrib LayerNormalization without B, in float16, statistics in double; refusals one line each") {
  // x rows (1, 2, 3) and (4, 4, 4): means 2 and 4, variances 2/3 and 0, epsilon 0.
  const Tensor x = tensor<float>({2, 3}, {1, 2, 3, 4, 4, 4});
  const double r = std::sqrt(1.5);  // 1 / sqrt(2/3)
  const Node no_b = node("LayerNormalization", {"x", "scale"}, {"y", "mean", "inv"},
                         {attr("epsilon", 1e-3f), attr("stash_type", int64_t(11))}, "ln");
  const Values out = run_node(no_b, {x, tensor<float>({3}, {1, 2, 1})}, 13);
  const double eps = double(1e-3f), inv0 = 1 / std::sqrt(2.0 / 3 + eps), inv1 = 1 / std::sqrt(eps);  // epsilon is a float attribute
  check_equal(out[0], tensor<float>({2, 3}, {float(-inv0), 0, float(inv0), 0, 0, 0}));
  check_equal(out[1], tensor<double>({2, 1}, {2, 4}));
  check_equal(out[2], tensor<double>({2, 1}, {inv0, inv1}), {1e-12, 0});
  // float16 X with a float16 scale and B: Y is float16, computed in double and rounded once
  const Tensor xh = tensor<float16>({1, 3}, {float16(1.0f), float16(2.0f), float16(3.0f)});
  const Tensor y = run_node(node("LayerNormalization", {"x", "scale", "b"}, {"y"}, {attr("epsilon", 0.0f)}, "ln"),
                            {xh, tensor<float16>({3}, {float16(2.0f), float16(2.0f), float16(2.0f)}),
                             tensor<float16>({3}, {float16(1.0f), float16(1.0f), float16(1.0f)})},
                            13)[0].tensor();
  check_equal(y, tensor<float16>({1, 3}, {float16(float(1 - 2 * r)), float16(1.0f), float16(float(1 + 2 * r))}), {1e-3, 0});
  // SimplifiedLayerNormalization's second output is InvStdDev: 1 / sqrt(mean(x^2)) = 1 / sqrt(14/3)
  const Values rms = run_node(node("SimplifiedLayerNormalization", {"x", "scale"}, {"y", "inv"}, {attr("epsilon", 0.0f)}, "ln"),
                              {tensor<float>({1, 3}, {1, 2, 3}), tensor<float>({3}, {1, 1, 1})}, 13);
  check_equal(rms[1], tensor<float>({1, 1}, {float(1 / std::sqrt(14.0 / 3))}));

  const std::string A = "node 'ln' (LayerNormalization): ";
  const Tensor scale = tensor<float>({3}, {1, 1, 1});
  CHECK_THROWS_WITH_AS(run_node(node("LayerNormalization", {"x", "scale"}, {"y"}, {attr("epsilon", -1.0f)}, "ln"), {x, scale}, 13),
                       (A + "epsilon -1 is negative").c_str(), Error);
  CHECK_THROWS_WITH_AS(run_node(node("LayerNormalization", {"x", "scale"}, {"y"}, {attr("axis", int64_t(-3))}, "ln"), {x, scale}, 13),
                       (A + "axis -3 is out of range for X of rank 2").c_str(), Error);
  CHECK_THROWS_WITH_AS(run_node(node("LayerNormalization", {"x", "scale", "b"}, {"y"}, {}, "ln"), {x, scale, tensor<double>({3}, {0, 0, 0})}, 13),
                       (A + "B has element type double, expected float").c_str(), Error);
}

// Over an empty normalized shape (X (2, 0), axis -1) ONNX Runtime 1.30 refuses the node ("Size of
// X.shape[axis:] must be at least 1, got 0"): statistics of no values.
TEST_CASE("contrib LayerNormalization refuses an empty normalized shape, as ORT does") {
  CHECK_THROWS_WITH_AS(run_node(node("LayerNormalization", {"x", "scale"}, {"y", "mean", "inv"}, {}, "ln"), {tensor<float>({2, 0}, {}), tensor<float>({0}, {})}, 13),
                       doctest::Contains("X.shape[1:] = (0,) holds no element to normalize"), Error);
}

TEST_CASE("contrib LayerNormalization: float X with a float16 Scale gives float16 Y (Scale's type)") {
  // x (1, 2, 3): mean 2, variance 2/3, epsilon 0: y = (x - 2) * sqrt(1.5) * 2 + 1
  const double r = std::sqrt(1.5);
  const Tensor y = run_node(node("LayerNormalization", {"x", "scale", "b"}, {"y"}, {attr("epsilon", 0.0f)}, "ln"),
                            {tensor<float>({1, 3}, {1, 2, 3}), tensor<float16>({3}, {float16(2.0f), float16(2.0f), float16(2.0f)}),
                             tensor<float16>({3}, {float16(1.0f), float16(1.0f), float16(1.0f)})},
                            13)[0].tensor();
  check_equal(y, tensor<float16>({1, 3}, {float16(float(1 - 2 * r)), float16(1.0f), float16(float(1 + 2 * r))}), {1e-3, 0});
}
