// Operators whose output or scratch size comes from input DATA (a shape tensor, a length, a
// depth) refuse a huge size with a clear error under the memory cap, instead of exhausting memory
// or crashing: every such allocation goes through the cap (tensors, or scratch_vector).
#include <cstdint>
#include <string>
#include <vector>

#include "refeval/limits.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {

constexpr int64_t kHuge = int64_t(1) << 40;  // 1 T elements: far above the 1 MiB cap below

struct HugeCase {
  const char* what;
  Node n;
  Values inputs;
  int64_t opset = kLatestOnnxOpset;
};

// Sets a small memory cap for the test and restores "no cap" after it.
struct SmallMemoryCap {
  SmallMemoryCap() { set_memory_cap(1 << 20); }
  ~SmallMemoryCap() { set_memory_cap(0); }
};

Tensor i64(Shape s, std::vector<int64_t> v) { return tensor<int64_t>(std::move(s), std::move(v)); }
Tensor f32(Shape s, std::vector<float> v) { return tensor<float>(std::move(s), std::move(v)); }

}  // namespace

TEST_CASE("a huge size read from input data is refused by the memory cap, naming what was too large") {
  const SmallMemoryCap cap;
  const std::vector<HugeCase> cases = {
      {"Range", node("Range", {"s", "l", "d"}, {"y"}), {i64({}, {0}), i64({}, {kHuge}), i64({}, {1})}},
      {"ConstantOfShape", node("ConstantOfShape", {"shape"}, {"y"}), {i64({2}, {kHuge, kHuge})}},
      {"Expand", node("Expand", {"x", "shape"}, {"y"}), {f32({1}, {1}), i64({1}, {kHuge})}},
      {"Tile", node("Tile", {"x", "repeats"}, {"y"}), {f32({1}, {1}), i64({1}, {kHuge})}},
      {"OneHot", node("OneHot", {"i", "depth", "values"}, {"y"}), {i64({1}, {0}), i64({}, {kHuge}), f32({2}, {0, 1})}},
      {"Pad", node("Pad", {"x", "pads"}, {"y"}), {f32({1}, {1}), i64({2}, {0, kHuge})}},
      {"CenterCropPad", node("CenterCropPad", {"x", "shape"}, {"y"}), {f32({1}, {1}), i64({1}, {kHuge})}},
      {"Resize sizes", node("Resize", {"x", "", "", "sizes"}, {"y"}), {f32({1, 1}, {1}), Value(), Value(), i64({2}, {1 << 20, 1 << 20})}},
      {"Resize scales", node("Resize", {"x", "", "scales"}, {"y"}), {f32({1, 1}, {1}), Value(), f32({2}, {1e6f, 1e6f})}},
      {"Upsample", node("Upsample", {"x", "scales"}, {"y"}), {f32({1, 1}, {1}), f32({2}, {1e6f, 1e6f})}, 9},
      {"AffineGrid", node("AffineGrid", {"theta", "size"}, {"y"}),
       {f32({1, 2, 3}, {1, 0, 0, 0, 1, 0}), i64({4}, {1, 1, 1 << 20, 1 << 20})}},
      {"MaxUnpool", node("MaxUnpool", {"x", "i", "shape"}, {"y"}, {attr("kernel_shape", std::vector<int64_t>{1, 1})}),
       {f32({1, 1, 1, 1}, {1}), i64({1, 1, 1, 1}, {0}), i64({4}, {1, 1, 1 << 20, 1 << 20})}},
      {"HannWindow", node("HannWindow", {"size"}, {"y"}), {i64({}, {kHuge})}},
      {"BlackmanWindow", node("BlackmanWindow", {"size"}, {"y"}), {i64({}, {kHuge})}},
      {"DFT length", node("DFT", {"x", "len"}, {"y"}), {f32({1, 1, 1}, {1}), i64({}, {kHuge})}},
      {"MelWeightMatrix", node("MelWeightMatrix", {"bins", "len", "rate", "lo", "hi"}, {"y"}),
       {i64({}, {1 << 20}), i64({}, {1 << 20}), i64({}, {16000}), f32({}, {0}), f32({}, {8000})}},
      {"RandomNormal (attribute shape)", node("RandomNormal", {}, {"y"}, {attr("shape", std::vector<int64_t>{kHuge})}), {}},
      {"RoiAlign (attribute sizes)",
       node("RoiAlign", {"x", "rois", "b"}, {"y"}, {attr("output_height", int64_t(1) << 20), attr("output_width", int64_t(1) << 20)}),
       {f32({1, 1, 1, 1}, {1}), f32({1, 4}, {0, 0, 1, 1}), i64({1}, {0})}},
  };
  for (const HugeCase& c : cases) {
    CAPTURE(c.what);
    try {
      run_node(c.n, c.inputs, c.opset);
      FAIL("no error");
    } catch (const Error& e) {
      CAPTURE(e.what());
      CHECK(e.kind() == ErrorKind::Resource);
    }
  }
}

TEST_CASE("scratch_vector allocates within the cap and refuses beyond it") {
  const SmallMemoryCap cap;
  CHECK(scratch_vector<double>(4, "four", 1.5) == std::vector<double>(4, 1.5));
  CHECK_THROWS_WITH_AS(scratch_vector<double>(1 << 20, "the window"), doctest::Contains("the window"), Error);
  CHECK_THROWS_WITH_AS(scratch_vector<double>(-1, "a length"), doctest::Contains("do not fit"), Error);
  CHECK_THROWS_WITH_AS(scratch_vector<double>(INT64_MAX, "a length"), doctest::Contains("do not fit"), Error);
}
