// check-fusion's input sets: floating inputs vary, everything else keeps its value and shape.
#include "input_sets.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::fusion;
using refeval::testing::tensor;

TEST_CASE("input sets vary floating inputs only, keep shapes, and are reproducible") {
  const std::map<std::string, Value> given{{"x", tensor<float>({2, 2}, {1, 2, 3, 4})},
                                           {"w", tensor<float>({2}, {5, 6})},
                                           {"ids", tensor<int64_t>({2}, {7, 8})}};
  const auto sets = make_input_sets(given, {"w"}, {.seed = 3, .random_sets = 2, .edge_cases = true});
  std::vector<std::string> names;
  for (const auto& s : sets) names.push_back(s.name);
  CHECK(names == std::vector<std::string>{"given", "random 1", "random 2", "zeros", "negative", "large", "tiny"});
  for (const auto& s : sets) {
    CAPTURE(s.name);
    CHECK(s.feeds.at("x").tensor().shape() == Shape{2, 2});
    refeval::testing::check_equal(s.feeds.at("w"), given.at("w"));     // fixed (a weight)
    refeval::testing::check_equal(s.feeds.at("ids"), given.at("ids")); // integers are never varied
  }
  refeval::testing::check_equal(sets[3].feeds.at("x"), tensor<float>({2, 2}, {0, 0, 0, 0}));
  for (float v : sets[4].feeds.at("x").tensor().to_vector<float>()) CHECK(v < 0);
  for (float v : sets[6].feeds.at("x").tensor().to_vector<float>()) CHECK(std::abs(v) <= 1e-6f);
  const auto again = make_input_sets(given, {"w"}, {.seed = 3, .random_sets = 2, .edge_cases = true});
  refeval::testing::check_equal(again[1].feeds.at("x"), sets[1].feeds.at("x"), {0, 0});
  CHECK(!compare_values(sets[1].feeds.at("x"), sets[2].feeds.at("x")).equal);
}
