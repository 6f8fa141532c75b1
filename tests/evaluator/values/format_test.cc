// Values are printed as Python's ReferenceEvaluator prints them.
#include "refeval/format.h"
#include "test_util.h"

using namespace refeval;
using refeval::testing::tensor;

TEST_CASE("floats print like Python's repr of a double") {
  struct Case { double v; const char* text; };
  const Case cases[] = {
      {2.0, "2.0"},  {-0.0, "-0.0"}, {0.1, "0.1"}, {double(1.9f), "1.899999976158142"},
      {1e-5, "1e-05"}, {1e16, "1e+16"}, {123456789012345678.0, "1.2345678901234568e+17"},
      {0.0001, "0.0001"}, {1e15, "1000000000000000.0"},
      {std::numeric_limits<double>::infinity(), "inf"}, {-std::numeric_limits<double>::infinity(), "-inf"},
      {std::nan(""), "nan"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.text);
    CHECK(python_float(c.v) == c.text);
  }
}

TEST_CASE("tensor summaries below level 4 and values at level 4") {
  const Tensor ints = tensor<int64_t>({2, 3}, {5, -1, 7, 0, 2, 3});
  CHECK(describe(ints, 3) == "int64:(2, 3) in [-1, 7]");
  CHECK(describe(ints, 4) == "int64:(2, 3):5,-1,7,0,2...");
  CHECK(describe(tensor<bool>({2}, {true, false}), 4) == "bool:(2,):[True, False]");
  CHECK(describe(tensor<bool>({2}, {true, false}), 3) == "bool:(2,) in [False, True]");
  CHECK(describe(Tensor(DType::Float, {0, 3}), 3) == "float32:(0, 3) (empty)");
  CHECK(describe(Tensor(DType::Float, {0, 3}), 4) == "float32:(0, 3):[]");
  CHECK(describe(tensor<float>({}, {0.5f}), 4) == "float32:():[0.5]");
  CHECK(describe(tensor<std::string>({2}, {"b", "a"}), 4) == "object:(2,):['b', 'a']");
  CHECK(describe(tensor<float>({3}, {1.0f, std::nanf(""), 0.0f}), 3) == "float32:(3,) in [nan, nan]");
}

TEST_CASE("sequences join their items; an empty optional is None") {
  Sequence s;
  s.items = {tensor<float>({2}, {0, 1}), tensor<float>({3}, {2, 3, 4})};
  CHECK(describe(s, 3) == "float32:(2,) in [0.0, 1.0], float32:(3,) in [2.0, 4.0]");
  CHECK(describe(Optional{}, 3) == "None");
}
