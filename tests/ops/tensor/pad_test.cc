// Pad and CenterCropPad: every mode, negative pads, axes, legacy attribute versions, errors.
#include <algorithm>
#include <limits>
#include <string>

#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {
Tensor ints(std::vector<int64_t> v) { return tensor<int64_t>({int64_t(v.size())}, v); }
}  // namespace

TEST_CASE("Pad modes on a 1-D tensor, pads larger than the input included") {
  const Tensor x = tensor<int32_t>({3}, {1, 2, 3});
  struct Case { const char* mode; std::vector<int64_t> pads; std::vector<int32_t> expected; };
  const Case cases[] = {
      {"constant", {2, 1}, {0, 0, 1, 2, 3, 0}},
      {"edge", {2, 1}, {1, 1, 1, 2, 3, 3}},
      {"reflect", {2, 1}, {3, 2, 1, 2, 3, 2}},
      {"reflect", {4, 0}, {1, 2, 3, 2, 1, 2, 3}},  // reflects back and forth like numpy
      {"wrap", {2, 4}, {2, 3, 1, 2, 3, 1, 2, 3, 1}},
      {"constant", {-1, 1}, {2, 3, 0}},           // a negative pad crops
      {"edge", {-1, 1}, {2, 3, 3}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.mode);
    CAPTURE(c.pads[0]);
    auto out = run_node(node("Pad", {"x", "p"}, {"y"}, {attr("mode", c.mode)}), {x, ints(c.pads)});
    check_equal(out[0], tensor<int32_t>({int64_t(c.expected.size())}, c.expected));
  }
}

TEST_CASE("Pad with axes, a constant value, strings, and the v2 attribute form") {
  const Tensor x = tensor<float>({2, 2}, {1, 2, 3, 4});
  auto out = run_node(node("Pad", {"x", "p", "v", "a"}, {"y"}), {x, ints({1, 0}), tensor<float>({}, {9}), ints({-1})});
  check_equal(out[0], tensor<float>({2, 3}, {9, 1, 2, 9, 3, 4}));
  auto s = run_node(node("Pad", {"x", "p", "v"}, {"y"}), {tensor<std::string>({1}, {"a"}), ints({1, 0}), tensor<std::string>({}, {"-"})});
  check_equal(s[0], tensor<std::string>({2}, {"-", "a"}));
  auto v2 = run_node(node("Pad", {"x"}, {"y"}, {attr("pads", std::vector<int64_t>{0, 1, 0, 0}), attr("value", 1.5f)}), {x}, 2);
  check_equal(v2[0], tensor<float>({2, 3}, {1.5f, 1, 2, 1.5f, 3, 4}));
}

TEST_CASE("Pad errors") {
  const Tensor x = tensor<float>({2}, {1, 2});
  CHECK_THROWS_AS(run_node(node("Pad", {"x", "p"}, {"y"}), {x, ints({1})}), Error);
  CHECK_THROWS_AS(run_node(node("Pad", {"x", "p"}, {"y"}), {x, ints({-2, -1})}), Error);
  CHECK_THROWS_AS(run_node(node("Pad", {"x", "p"}, {"y"}, {attr("mode", "wrap")}), {x, ints({1, 1})}, 18), Error);  // wrap is 19+
  CHECK_THROWS_AS(run_node(node("Pad", {"x", "p"}, {"y"}, {attr("mode", "edge")}), {tensor<float>({0}, {}), ints({1, 1})}), Error);
  CHECK_THROWS_AS(run_node(node("Pad", {"x", "p", "v"}, {"y"}), {x, ints({1, 1}), tensor<double>({}, {0})}), Error);
  // Pads near INT64_MIN once overflowed when negated (UBSan, found by fuzzing): now a crop error.
  CHECK_THROWS_WITH_AS(run_node(node("Pad", {"x", "p"}, {"y"}), {x, ints({0, std::numeric_limits<int64_t>::min()})}),
                       doctest::Contains("crop more than axis 0 holds"), Error);
}

TEST_CASE("Pad checks its output against the memory cap before building per-axis maps") {
  // Found by fuzzing: an empty axis beside a 2^40 pad once built a 2^40-entry coordinate map
  // (seconds of work, or an allocation beyond the cap) for an output with no elements.
  const Tensor empty = tensor<float>({0, 1}, {});
  const Values out = run_node(node("Pad", {"x", "p"}, {"y"}), {empty, ints({0, 0, 0, int64_t(1) << 40})});
  CHECK(out[0].tensor().shape() == Shape{0, (int64_t(1) << 40) + 1});
  const uint64_t saved = memory_cap();
  set_memory_cap(uint64_t(1) << 30);
  const Tensor x = tensor<float>({1}, {1});
  CHECK_THROWS_WITH_AS(run_node(node("Pad", {"x", "p"}, {"y"}), {x, ints({0, int64_t(1) << 40})}),
                       doctest::Contains("exceeds the memory cap"), Error);
  set_memory_cap(saved);
}

TEST_CASE("CenterCropPad crops and pads around the centre") {
  const Tensor x = tensor<int64_t>({5}, {1, 2, 3, 4, 5});
  check_equal(run_node(node("CenterCropPad", {"x", "s"}, {"y"}), {x, ints({2})}, 18)[0], tensor<int64_t>({2}, {2, 3}));
  check_equal(run_node(node("CenterCropPad", {"x", "s"}, {"y"}), {x, ints({8})}, 18)[0], tensor<int64_t>({8}, {0, 1, 2, 3, 4, 5, 0, 0}));
  const Tensor m = tensor<int64_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  check_equal(run_node(node("CenterCropPad", {"x", "s"}, {"y"}, {attr("axes", std::vector<int64_t>{-1})}), {m, ints({1})}, 18)[0],
              tensor<int64_t>({2, 1}, {2, 5}));
  CHECK_THROWS_AS(run_node(node("CenterCropPad", {"x", "s"}, {"y"}), {m, ints({1})}, 18), Error);
}

TEST_CASE("Pad on 3-D inputs, every mode, mixed positive and negative pads, against index arithmetic") {
  // Each output coordinate maps on its own: o - begin into the cropped axis [lo, dim - crop_end),
  // outside it by the mode's rule (numpy's), the constant 7 in constant mode.
  auto source = [](int64_t j, int64_t e, const std::string& mode) -> int64_t {
    if (j >= 0 && j < e) return j;
    if (mode == "constant") return -1;
    if (mode == "edge") return std::clamp<int64_t>(j, 0, e - 1);
    if (mode == "wrap") return ((j % e) + e) % e;
    if (e == 1) return 0;
    const int64_t period = 2 * (e - 1);
    j = ((j % period) + period) % period;
    return j >= e ? period - j : j;
  };
  const Shape xs{2, 3, 11};
  std::vector<int32_t> x(66);
  for (size_t i = 0; i < x.size(); ++i) x[i] = int32_t(i * 37 % 101);
  const std::vector<std::vector<int64_t>> pad_sets = {
      {0, 1, 3, 1, 0, 2}, {1, 0, -2, 0, 2, 5}, {0, -1, 4, 0, 1, -3}, {0, 0, 0, 0, 0, 0}, {1, 2, 12, 0, 0, 13}};
  for (const std::string mode : {"constant", "edge", "reflect", "wrap"}) {
    for (const auto& pads : pad_sets) {
      CAPTURE(mode);
      CAPTURE(pads[2]);
      CAPTURE(pads[5]);
      Shape out(3);
      std::vector<int64_t> lo(3), kept(3);
      for (size_t d = 0; d < 3; ++d) {
        lo[d] = std::max<int64_t>(0, -pads[d]);
        kept[d] = xs[d] - lo[d] - std::max<int64_t>(0, -pads[d + 3]);
        out[d] = kept[d] + std::max<int64_t>(0, pads[d]) + std::max<int64_t>(0, pads[d + 3]);
      }
      std::vector<int32_t> want;
      for (int64_t a = 0; a < out[0]; ++a)
        for (int64_t b = 0; b < out[1]; ++b)
          for (int64_t c = 0; c < out[2]; ++c) {
            const int64_t o[3] = {a, b, c};
            int64_t src = 0;
            bool constant = false;
            for (size_t d = 0; d < 3; ++d) {
              const int64_t j = source(o[d] - std::max<int64_t>(0, pads[d]), kept[d], mode);
              if (j < 0) constant = true;
              src = src * xs[d] + j + lo[d];
            }
            want.push_back(constant ? 7 : x[size_t(src)]);
          }
      const Values in = {tensor<int32_t>(xs, x), ints(pads), tensor<int32_t>({}, {7})};
      check_equal(run_node(node("Pad", {"x", "p", "v"}, {"y"}, {attr("mode", mode)}), in)[0], tensor<int32_t>(out, want));
    }
  }
}
