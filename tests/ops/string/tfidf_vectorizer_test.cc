// TfIdfVectorizer: the three modes, weights, skips and string pools.
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {
Node tfidf(const char* mode, std::vector<Attribute> extra) {
  std::vector<Attribute> a = {attr("mode", mode), attr("min_gram_length", int64_t(1)), attr("max_gram_length", int64_t(2)),
                              attr("max_skip_count", int64_t(1)), attr("ngram_counts", std::vector<int64_t>{0, 2}),
                              attr("ngram_indexes", std::vector<int64_t>{0, 1, 2})};
  a.insert(a.end(), extra.begin(), extra.end());
  return node("TfIdfVectorizer", {"x"}, {"y"}, a);
}
}  // namespace

TEST_CASE("TfIdfVectorizer counts unigrams and skip-bigrams") {
  // pool: unigrams 1, 2; bigram (1, 2). Row: 1 2 1 3 2 -> unigram 1 twice, 2 twice;
  // bigram (1,2): skip 0 at 0-1, skip 1 at 2-4  -> 2.
  const Tensor x = tensor<int64_t>({5}, {1, 2, 1, 3, 2});
  const auto pool = attr("pool_int64s", std::vector<int64_t>{1, 2, 1, 2});
  const auto weights = attr("weights", std::vector<float>{0.5f, 2.0f, 3.0f});
  struct Case { const char* mode; bool weighted; std::vector<float> expected; };
  const Case cases[] = {
      {"TF", false, {2, 2, 2}},
      {"IDF", false, {1, 1, 1}},
      {"IDF", true, {0.5f, 2, 3}},
      {"TFIDF", true, {1, 4, 6}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.mode);
    std::vector<Attribute> extra{pool};
    if (c.weighted) extra.push_back(weights);
    check_equal(run_node(tfidf(c.mode, extra), {x}, 9)[0], tensor<float>({3}, c.expected));
  }
}

TEST_CASE("TfIdfVectorizer on a batch of strings") {
  // rows are counted separately; a bigram never spans two rows
  const auto pool = attr("pool_strings", std::vector<std::string>{"a", "b", "a", "b"});
  check_equal(run_node(tfidf("TF", {pool}), {tensor<std::string>({2, 2}, {"x", "a", "b", "a"})}, 9)[0],
              tensor<float>({2, 3}, {1, 0, 0, 1, 1, 0}));
  // both pools, or a pool that does not match ngram_counts, are model errors
  CHECK_THROWS_AS(run_node(tfidf("TF", {pool, attr("pool_int64s", std::vector<int64_t>{1})}), {tensor<int64_t>({1}, {1})}, 9), Error);
  CHECK_THROWS_AS(run_node(tfidf("TF", {attr("pool_int64s", std::vector<int64_t>{1, 2, 3})}), {tensor<int64_t>({1}, {1})}, 9), Error);
}
