// Resize and Upsample: cases the backend tests leave out (integer and non-numeric element types,
// Resize-10, the Upsample attribute form, crop extrapolation with nearest, bad inputs).
#include <cmath>
#include <cstring>

#include "test_util.h"

#include "refeval/threads.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {
Value none() { return Value(); }
}  // namespace

TEST_CASE("Resize: a table of modes, element types and versions") {
  struct Case { const char* what; Node n; Values in; int64_t opset; Tensor expected; };
  const Node linear = node("Resize", {"x", "", "", "sizes"}, {"y"}, {attr("mode", "linear")});
  const Case cases[] = {
      // half_pixel linear: edge samples clamp, inner ones interpolate
      {"linear float", linear, {tensor<float>({1, 2}, {0, 10}), none(), none(), tensor<int64_t>({2}, {1, 4})}, 19,
       tensor<float>({1, 4}, {0, 2.5f, 7.5f, 10})},
      // integers interpolate in double and truncate toward zero on the way back
      {"linear uint8", linear, {tensor<uint8_t>({1, 2}, {0, 10}), none(), none(), tensor<int64_t>({2}, {1, 4})}, 19,
       tensor<uint8_t>({1, 4}, {0, 2, 7, 10})},
      // nearest is a gather, so strings resize too
      {"nearest string", node("Resize", {"x", "", "", "sizes"}, {"y"}),
       {tensor<std::string>({2}, {"a", "b"}), none(), none(), tensor<int64_t>({1}, {4})}, 19,
       tensor<std::string>({4}, {"a", "a", "b", "b"})},
      // Resize-10: asymmetric coordinates, nearest rounds down, downsampling allowed
      {"resize-10 downsample", node("Resize", {"x", "scales"}, {"y"}),
       {tensor<float>({4}, {1, 2, 3, 4}), tensor<float>({1}, {0.5f})}, 10, tensor<float>({2}, {1, 3})},
      // axes: only the listed axis changes
      {"axes", node("Resize", {"x", "", "scales"}, {"y"}, {attr("axes", std::vector<int64_t>{-1})}),
       {tensor<int32_t>({2, 1}, {7, 8}), none(), tensor<float>({1}, {2.0f})}, 19,
       tensor<int32_t>({2, 2}, {7, 7, 8, 8})},
      // tf_crop_and_resize with nearest: outside the crop box gives extrapolation_value
      {"crop nearest", node("Resize", {"x", "roi", "", "sizes"}, {"y"},
                            {attr("coordinate_transformation_mode", "tf_crop_and_resize"),
                             attr("extrapolation_value", 9.0f)}),
       {tensor<float>({2}, {1, 2}), tensor<float>({2}, {0.5f, 1.5f}), none(), tensor<int64_t>({1}, {3})}, 19,
       tensor<float>({3}, {1, 2, 9})},
      // not_smaller: the larger scale applies to both axes, sizes round half up
      {"not_smaller", node("Resize", {"x", "", "", "sizes"}, {"y"}, {attr("keep_aspect_ratio_policy", "not_smaller")}),
       {tensor<double>({1, 2}, {1, 2}), none(), none(), tensor<int64_t>({2}, {2, 2})}, 19,
       tensor<double>({2, 4}, {1, 1, 2, 2, 1, 1, 2, 2})},
      // Upsample-7 takes its scales as an attribute
      {"upsample-7", node("Upsample", {"x"}, {"y"}, {attr("scales", std::vector<float>{1, 2})}),
       {tensor<bool>({1, 2}, {true, false})}, 7, tensor<bool>({1, 4}, {true, true, false, false})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    check_equal(run_node(c.n, c.in, c.opset)[0], c.expected);
  }
}

TEST_CASE("Resize: bad inputs are refused") {
  const Node n = node("Resize", {"x", "", "scales", "sizes"}, {"y"});
  // scales and sizes together
  CHECK_THROWS_AS(run_node(n, {tensor<float>({2}, {1, 2}), none(), tensor<float>({1}, {2}), tensor<int64_t>({1}, {4})}), Error);
  // neither
  CHECK_THROWS_AS(run_node(n, {tensor<float>({2}, {1, 2})}), Error);
  // a scale count that does not match the rank
  CHECK_THROWS_AS(run_node(n, {tensor<float>({2}, {1, 2}), none(), tensor<float>({2}, {2, 2})}), Error);
  // linear on strings
  CHECK_THROWS_AS(run_node(node("Resize", {"x", "", "scales"}, {"y"}, {attr("mode", "linear")}),
                           {tensor<std::string>({1}, {"a"}), none(), tensor<float>({1}, {2})}),
                  Error);
  // Upsample cannot shrink
  CHECK_THROWS_AS(run_node(node("Upsample", {"x", "s"}, {"y"}), {tensor<float>({2}, {1, 2}), tensor<float>({1}, {0.5f})}, 9), Error);
  // an unknown mode is a model error
  CHECK_THROWS_AS(run_node(node("Resize", {"x", "", "scales"}, {"y"}, {attr("mode", "area")}),
                           {tensor<float>({1}, {1}), none(), tensor<float>({1}, {2})}),
                  Error);
}

TEST_CASE("Resize checks its output against the memory cap before building per-axis tap tables") {
  // Found by fuzzing: a 2^40 target size beside a target size of 0 built a 2^40-entry table (an
  // allocation ASan refuses) for a result with no elements.
  const Node resize = node("Resize", {"x", "", "", "sizes"}, {"y"});
  const Tensor x = tensor<float>({1, 1}, {1});
  const Values out = run_node(resize, {x, Value(), Value(), tensor<int64_t>({2}, {0, int64_t(1) << 40})});
  CHECK(out[0].tensor().shape() == Shape{0, int64_t(1) << 40});
  const uint64_t saved = memory_cap();
  set_memory_cap(uint64_t(1) << 30);
  CHECK_THROWS_WITH_AS(run_node(resize, {x, Value(), Value(), tensor<int64_t>({2}, {1, int64_t(1) << 40})}),
                       doctest::Contains("exceed the memory cap"), Error);
  set_memory_cap(saved);
}

TEST_CASE("Resize and Upsample refuse a scale whose output size does not fit in 64 bits") {
  // Found by fuzzing (UBSan): the size was converted from a double beyond int64's range.
  const Tensor x = tensor<float>({1, 2}, {1, 2});
  CHECK_THROWS_WITH_AS(run_node(node("Resize", {"x", "", "s"}, {"y"}), {x, Value(), tensor<float>({2}, {1, 1e30f})}),
                       doctest::Contains("gives an output size of"), Error);
  CHECK_THROWS_WITH_AS(run_node(node("Upsample", {"x", "s"}, {"y"}), {x, tensor<float>({2}, {1, 1e30f})}, 9),
                       doctest::Contains("gives an output size of"), Error);
}

namespace {

// Bilinear half_pixel resampling of the last two axes of an [n, h, w] array in double, straight from
// the spec's formula: coordinate (o + 0.5) / scale - 0.5, clamped to the edges, two taps per axis.
std::vector<double> bilinear_oracle(const std::vector<float>& x, int64_t n, int64_t h, int64_t w, int64_t oh, int64_t ow) {
  auto taps = [](int64_t o, int64_t in, int64_t out, int64_t& i0, int64_t& i1, double& f) {
    const double c = std::clamp((double(o) + 0.5) * double(in) / double(out) - 0.5, 0.0, double(in - 1));
    i0 = int64_t(std::floor(c));
    i1 = std::min(i0 + 1, in - 1);
    f = c - double(i0);
  };
  std::vector<double> y(size_t(n * oh * ow));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t r = 0; r < oh; ++r)
      for (int64_t c = 0; c < ow; ++c) {
        int64_t r0, r1, c0, c1;
        double fr, fc;
        taps(r, h, oh, r0, r1, fr);
        taps(c, w, ow, c0, c1, fc);
        auto at = [&](int64_t i, int64_t j) { return double(x[size_t((b * h + i) * w + j)]); };
        y[size_t((b * oh + r) * ow + c)] = (1 - fr) * ((1 - fc) * at(r0, c0) + fc * at(r0, c1)) +
                                           fr * ((1 - fc) * at(r1, c0) + fc * at(r1, c1));
      }
  return y;
}

}  // namespace

TEST_CASE("Resize linear: large inputs match the bilinear formula, and two threads give the same bits") {
  // Up and down, sizes that are not multiples of anything; big enough to split across threads.
  for (auto [oh, ow] : {std::pair<int64_t, int64_t>{74, 90}, {19, 23}, {37, 45}}) {
    const int64_t n = 6, h = 37, w = 45;
    const std::vector<float> x = random_floats(size_t(n * h * w), 7);
    const Node resize = node("Resize", {"x", "", "", "sizes"}, {"y"}, {attr("mode", "linear")});
    const Values in = {tensor<float>({2, 3, h, w}, x), Value(), Value(), tensor<int64_t>({4}, {2, 3, oh, ow})};
    const Tensor one = run_node(resize, in)[0].tensor();
    set_thread_count(2);
    const Tensor two = run_node(resize, in)[0].tensor();
    set_thread_count(1);
    REQUIRE(one.shape() == Shape{2, 3, oh, ow});
    CHECK(std::memcmp(one.data<float>(), two.data<float>(), size_t(one.size()) * sizeof(float)) == 0);
    const std::vector<double> want = bilinear_oracle(x, n, h, w, oh, ow);
    double worst = 0;
    for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(double(one.data<float>()[i]) - want[i]));
    CHECK(worst <= 1.2e-7);  // a float rounding of values in [-1, 1]
  }
}
