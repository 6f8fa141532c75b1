// GridSample, AffineGrid, RoiAlign and NonMaxSuppression: identities, padding modes, integer
// element types and edge cases the backend tests leave out.
#include <limits>

#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

TEST_CASE("AffineGrid with the identity theta feeds GridSample an identity map") {
  const Tensor theta = tensor<float>({1, 2, 3}, {1, 0, 0, 0, 1, 0});
  for (int64_t align : {0, 1}) {
    CAPTURE(align);
    const Value grid = run_node(node("AffineGrid", {"t", "s"}, {"g"}, {attr("align_corners", align)}),
                                {theta, tensor<int64_t>({4}, {1, 1, 2, 3})}, 20)[0];
    const Tensor x = tensor<float>({1, 1, 2, 3}, {1, 2, 3, 4, 5, 6});
    for (const char* mode : {"linear", "nearest"}) {
      CAPTURE(mode);
      const Value y = run_node(node("GridSample", {"x", "g"}, {"y"}, {attr("align_corners", align), attr("mode", mode)}), {x, grid}, 22)[0];
      check_equal(y, x);
    }
  }
}

TEST_CASE("GridSample: padding modes outside the image") {
  const Tensor x = tensor<double>({1, 1, 1, 2}, {10, 20});
  // one sample far to the right of a 1x2 image (x = 3 in normalised units), align_corners = 1
  const Tensor grid = tensor<double>({1, 1, 1, 2}, {3, 0});
  struct Case { const char* pad; double expected; };
  const Case cases[] = {{"zeros", 0}, {"border", 20}, {"reflection", 10}};
  for (const auto& c : cases) {
    CAPTURE(c.pad);
    const Node n = node("GridSample", {"x", "g"}, {"y"}, {attr("align_corners", int64_t(1)), attr("padding_mode", c.pad)});
    check_equal(run_node(n, {x, grid}, 22)[0], tensor<double>({1, 1, 1, 1}, {c.expected}));
  }
  // version 16 spells the modes bilinear/bicubic and is 4-D only
  CHECK_THROWS_AS(run_node(node("GridSample", {"x", "g"}, {"y"}, {attr("mode", "linear")}), {x, grid}, 16), Error);
  CHECK_THROWS_AS(run_node(node("GridSample", {"x", "g"}, {"y"}), {tensor<float>({1, 1, 2}, {1, 2}), tensor<float>({1, 1, 1}, {0})}, 16), Error);
}

TEST_CASE("RoiAlign of a constant image is the constant; bad batch indices are refused") {
  const Tensor x = tensor<float>({1, 1, 4, 4}, std::vector<float>(16, 3.0f));
  const Tensor rois = tensor<float>({1, 4}, {0, 0, 3, 3});
  const Node n = node("RoiAlign", {"x", "r", "b"}, {"y"}, {attr("output_height", int64_t(2)), attr("output_width", int64_t(2))});
  check_equal(run_node(n, {x, rois, tensor<int64_t>({1}, {0})}, 16)[0], tensor<float>({1, 1, 2, 2}, {3, 3, 3, 3}));
  CHECK_THROWS_AS(run_node(n, {x, rois, tensor<int64_t>({1}, {1})}, 16), Error);
  // A huge or infinite box with the adaptive grid would need unbounded samples: refused, not hung.
  const float inf = std::numeric_limits<float>::infinity();
  CHECK_THROWS_WITH_AS(run_node(n, {x, tensor<float>({1, 4}, {0, 0, 1e9f, 1e9f}), tensor<int64_t>({1}, {0})}, 16),
                       doctest::Contains("samples per bin"), Error);
  CHECK_THROWS_WITH_AS(run_node(n, {x, tensor<float>({1, 4}, {0, 0, inf, 3}), tensor<int64_t>({1}, {0})}, 16),
                       doctest::Contains("samples per bin"), Error);
}

TEST_CASE("NonMaxSuppression: limits and thresholds") {
  // two overlapping boxes (IoU 0.6) and one apart, one class
  const Tensor boxes = tensor<float>({1, 3, 4}, {0, 0, 1, 1, 0, 0.25f, 1, 1.25f, 0, 5, 1, 6});
  const Tensor scores = tensor<float>({1, 1, 3}, {0.9f, 0.8f, 0.7f});
  const Node n = node("NonMaxSuppression", {"b", "s", "m", "iou", "st"}, {"y"});
  struct Case { const char* what; int64_t max_out; float iou, score; Tensor expected; };
  const Case cases[] = {
      {"no limit reached", 5, 0.5f, 0.0f, tensor<int64_t>({2, 3}, {0, 0, 0, 0, 0, 2})},
      {"iou above the overlap keeps all", 5, 0.7f, 0.0f, tensor<int64_t>({3, 3}, {0, 0, 0, 0, 0, 1, 0, 0, 2})},
      {"max_output_boxes_per_class 1", 1, 0.5f, 0.0f, tensor<int64_t>({1, 3}, {0, 0, 0})},
      {"score threshold is strict", 5, 0.5f, 0.8f, tensor<int64_t>({1, 3}, {0, 0, 0})},
      {"zero boxes", 0, 0.5f, 0.0f, tensor<int64_t>({0, 3}, {})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    check_equal(run_node(n, {boxes, scores, tensor<int64_t>({1}, {c.max_out}), tensor<float>({1}, {c.iou}), tensor<float>({1}, {c.score})}, 11)[0],
                c.expected);
  }
}

TEST_CASE("GridSample samples strings by nearest and refuses to interpolate them") {
  const Tensor x = tensor<std::string>({1, 1, 1, 2}, {"a", "b"});
  // x = -1 (left pixel centre with align_corners), x = 1 (right), x = 5 (outside: zero padding gives "")
  const Tensor grid = tensor<float>({1, 1, 3, 2}, {-1, 0, 1, 0, 5, 0});
  const Node n = node("GridSample", {"x", "g"}, {"y"}, {attr("mode", "nearest"), attr("align_corners", int64_t(1))});
  check_equal(run_node(n, {x, grid}, 22)[0], tensor<std::string>({1, 1, 1, 3}, {"a", "b", ""}));
  CHECK_THROWS_AS(run_node(node("GridSample", {"x", "g"}, {"y"}), {x, grid}, 22), Error);
}
