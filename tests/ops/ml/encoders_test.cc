// ai.onnx.ml encoders and converters: ArrayFeatureExtractor, Binarizer, CastMap, CategoryMapper,
// DictVectorizer, FeatureVectorizer, Imputer, LabelEncoder, Normalizer, OneHotEncoder, Scaler,
// ZipMap, including maps and sequences of maps.
#include <cmath>

#include "ml_test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;

namespace {
Tensor strings(Shape s, std::vector<std::string> v) { return tensor<std::string>(std::move(s), std::move(v)); }
using I64s = std::vector<int64_t>;
using F32s = std::vector<float>;
using Strs = std::vector<std::string>;

struct Case {
  const char* what;
  Node n;
  Values inputs;
  Values expected;
  int64_t opset = 1;
};

void run_cases(const std::vector<Case>& cases) {
  for (const auto& c : cases) {
    CAPTURE(c.what);
    const Values out = run_node(c.n, c.inputs, c.opset);
    REQUIRE(out.size() >= c.expected.size());
    for (size_t i = 0; i < c.expected.size(); ++i) check_equal(out[i], c.expected[i]);
  }
}
}  // namespace

TEST_CASE("ArrayFeatureExtractor, Binarizer, Scaler, Normalizer, Imputer") {
  run_cases({
      {"last-axis selection of a matrix", ml_node("ArrayFeatureExtractor", {"x", "i"}, {"z"}),
       {tensor<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6}), tensor<int64_t>({2}, {2, 0})}, {tensor<int32_t>({2, 2}, {3, 1, 6, 4})}},
      {"a 1-D input gives [1, k], strings too", ml_node("ArrayFeatureExtractor", {"x", "i"}, {"z"}),
       {strings({3}, {"a", "b", "c"}), tensor<int64_t>({1}, {1})}, {strings({1, 1}, {"b"})}},
      {"Binarizer keeps the type", ml_node("Binarizer", {"x"}, {"y"}, {attr("threshold", 1.5f)}),
       {tensor<int64_t>({3}, {1, 2, -5})}, {tensor<int64_t>({3}, {0, 1, 0})}},
      {"Scaler per column, float output", ml_node("Scaler", {"x"}, {"y"}, {attr("offset", F32s{1, 2}), attr("scale", F32s{2, 0.5f})}),
       {tensor<double>({2, 2}, {1, 2, 3, 4})}, {tensor<float>({2, 2}, {0, 0, 4, 1})}},
      {"Normalizer L1", ml_node("Normalizer", {"x"}, {"y"}, {attr("norm", "L1")}),
       {tensor<float>({1, 3}, {1, -1, 2})}, {tensor<float>({1, 3}, {0.25f, -0.25f, 0.5f})}},
      {"Normalizer L2 on int32", ml_node("Normalizer", {"x"}, {"y"}, {attr("norm", "L2")}),
       {tensor<int32_t>({2, 2}, {3, 4, 0, 5})}, {tensor<float>({2, 2}, {0.6f, 0.8f, 0, 1})}},
      {"Normalizer MAX", ml_node("Normalizer", {"x"}, {"y"}, {attr("norm", "MAX")}),
       {tensor<float>({2}, {2, 4})}, {tensor<float>({2}, {0.5f, 1})}},
      {"Imputer replaces NaN per column", ml_node("Imputer", {"x"}, {"y"}, {attr("imputed_value_floats", F32s{7, 8}), attr("replaced_value_float", NAN)}),
       {tensor<float>({2, 2}, {NAN, 1, 2, NAN})}, {tensor<float>({2, 2}, {7, 1, 2, 8})}},
      {"Imputer replaces an integer value", ml_node("Imputer", {"x"}, {"y"}, {attr("imputed_value_int64s", I64s{9}), attr("replaced_value_int64", int64_t(-1))}),
       {tensor<int64_t>({3}, {-1, 0, -1})}, {tensor<int64_t>({3}, {9, 0, 9})}},
  });
  CHECK_THROWS_WITH_AS(run_node(ml_node("ArrayFeatureExtractor", {"x", "i"}, {"z"}), {tensor<float>({2}, {1, 2}), tensor<int64_t>({1}, {2})}, 1),
                       doctest::Contains("out of range"), Error);
}

TEST_CASE("CategoryMapper, LabelEncoder, OneHotEncoder") {
  const auto cats = std::vector<Attribute>{attr("cats_strings", Strs{"a", "b"}), attr("cats_int64s", I64s{10, 20})};
  run_cases({
      {"strings to integers, default for unknown", ml_node("CategoryMapper", {"x"}, {"y"}, cats),
       {strings({3}, {"b", "z", "a"})}, {tensor<int64_t>({3}, {20, -1, 10})}},
      {"integers to strings", ml_node("CategoryMapper", {"x"}, {"y"}, {cats[0], cats[1], attr("default_string", "?")}),
       {tensor<int64_t>({2}, {10, 5})}, {strings({2}, {"a", "?"})}},
      {"LabelEncoder v1: strings to indices", ml_node("LabelEncoder", {"x"}, {"y"}, {attr("classes_strings", Strs{"x", "y"})}),
       {strings({3}, {"y", "x", "q"})}, {tensor<int64_t>({3}, {1, 0, -1})}},
      {"LabelEncoder v1: indices to strings", ml_node("LabelEncoder", {"x"}, {"y"}, {attr("classes_strings", Strs{"x", "y"})}),
       {tensor<int64_t>({2}, {1, 7})}, {strings({2}, {"y", "_Unused"})}},
      {"LabelEncoder v2: floats to strings, NaN key", ml_node("LabelEncoder", {"x"}, {"y"}, {attr("keys_floats", F32s{1.5f, NAN}), attr("values_strings", Strs{"one", "nan"})}),
       {tensor<float>({3}, {NAN, 1.5f, 2})}, {strings({3}, {"nan", "one", "_Unused"})}, 2},
      {"LabelEncoder v2: default_float is -0.0", ml_node("LabelEncoder", {"x"}, {"y"}, {attr("keys_int64s", I64s{3}), attr("values_floats", F32s{0.5f})}),
       {tensor<int64_t>({2}, {3, 4})}, {tensor<float>({2}, {0.5f, -0.0f})}, 2},
      {"LabelEncoder v4: tensors of int16 to double with default_tensor",
       ml_node("LabelEncoder", {"x"}, {"y"}, {attr("keys_tensor", tensor<int16_t>({2}, {1, 2})), attr("values_tensor", tensor<double>({2}, {0.1, 0.2})),
                                              attr("default_tensor", tensor<double>({1}, {9.0}))}),
       {tensor<int16_t>({3}, {2, 5, 1})}, {tensor<double>({3}, {0.2, 9.0, 0.1})}, 4},
      {"OneHotEncoder on int64 with an unknown value", ml_node("OneHotEncoder", {"x"}, {"y"}, {attr("cats_int64s", I64s{1, 3})}),
       {tensor<int64_t>({1, 3}, {3, 2, 1})}, {tensor<float>({1, 3, 2}, {0, 1, 0, 0, 1, 0})}},
      {"OneHotEncoder on strings", ml_node("OneHotEncoder", {"x"}, {"y"}, {attr("cats_strings", Strs{"a", "b", "c"})}),
       {strings({2}, {"c", "a"})}, {tensor<float>({2, 3}, {0, 0, 1, 1, 0, 0})}},
  });
  CHECK_THROWS_WITH_AS(run_node(ml_node("OneHotEncoder", {"x"}, {"y"}, {attr("cats_int64s", I64s{1}), attr("zeros", int64_t(0))}), {tensor<int64_t>({1}, {2})}, 1),
                       doctest::Contains("unknown category"), Error);
  CHECK_THROWS_AS(run_node(ml_node("LabelEncoder", {"x"}, {"y"}, {attr("keys_int64s", I64s{3})}), {tensor<int64_t>({1}, {3})}, 2), Error);
}

TEST_CASE("maps: CastMap, DictVectorizer, ZipMap, FeatureVectorizer") {
  const Map int_to_float = make_map<int64_t, float>({3, 0, 1}, {30.5f, 0.5f, 10});
  const Map int_to_string = make_map<int64_t, std::string>({1, 0}, {"2.5", "7"});
  const Map str_to_double = make_map<std::string, double>({"b", "z", "a"}, {2, 26, 1});
  run_cases({
      {"CastMap dense sorts by key", ml_node("CastMap", {"m"}, {"y"}), {int_to_float}, {tensor<float>({1, 3}, {0.5f, 10, 30.5f})}},
      {"CastMap sparse to int64", ml_node("CastMap", {"m"}, {"y"}, {attr("cast_to", "TO_INT64"), attr("map_form", "SPARSE"), attr("max_map", int64_t(5))}),
       {int_to_float}, {tensor<int64_t>({1, 5}, {0, 10, 0, 30, 0})}},
      {"CastMap strings to floats", ml_node("CastMap", {"m"}, {"y"}), {int_to_string}, {tensor<float>({1, 2}, {7, 2.5f})}},
      {"CastMap floats to strings", ml_node("CastMap", {"m"}, {"y"}, {attr("cast_to", "TO_STRING")}),
       {make_map<int64_t, float>({0}, {1.5f})}, {strings({1, 1}, {"1.500000"})}},
      {"DictVectorizer with a string vocabulary", ml_node("DictVectorizer", {"m"}, {"y"}, {attr("string_vocabulary", Strs{"a", "c", "b"})}),
       {str_to_double}, {tensor<double>({1, 3}, {1, 0, 2})}},
      {"DictVectorizer over a sequence of maps", ml_node("DictVectorizer", {"m"}, {"y"}, {attr("int64_vocabulary", I64s{1, 3})}),
       {Sequence{DType::Undefined, {int_to_float, make_map<int64_t, float>({1}, {-1})}}}, {tensor<float>({2, 2}, {10, 30.5f, -1, 0})}},
      {"ZipMap with int64 labels", ml_node("ZipMap", {"x"}, {"y"}, {attr("classlabels_int64s", I64s{5, 6})}),
       {tensor<float>({2, 2}, {0.25f, 0.75f, 1, 0})},
       {Sequence{DType::Undefined, {make_map<int64_t, float>({5, 6}, {0.25f, 0.75f}), make_map<int64_t, float>({5, 6}, {1, 0})}}}},
      {"FeatureVectorizer truncates and pads", ml_node("FeatureVectorizer", {"a", "b"}, {"y"}, {attr("inputdimensions", I64s{1, 3})}),
       {tensor<int32_t>({2, 2}, {1, 2, 3, 4}), tensor<double>({2, 2}, {5, 6, 7, 8})}, {tensor<float>({2, 4}, {1, 5, 6, 0, 3, 7, 8, 0})}},
  });
  auto zipped = run_node(ml_node("ZipMap", {"x"}, {"y"}, {attr("classlabels_strings", Strs{"p", "q"})}), {tensor<float>({1, 2}, {0.5f, 0.5f})}, 1)[0];
  REQUIRE(zipped.is_sequence());
  CHECK(zipped.sequence().items.at(0).map().keys.data<std::string>()[1] == "q");
  CHECK_THROWS_WITH_AS(run_node(ml_node("CastMap", {"m"}, {"y"}, {attr("map_form", "SPARSE"), attr("max_map", int64_t(2))}), {int_to_float}, 1),
                       doctest::Contains("outside [0, max_map"), Error);
}
