// com.microsoft EmbedLayerNormalization: word + position (+ segment) embeddings, LayerNorm,
// mask_index and embedding_sum outputs, explicit position_ids, agreement with Gather + Add +
// LayerNormalization, and id range errors.
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {
const Tensor kWord = tensor<float>({3, 2}, {1, 0, 0, 1, 2, 2});
const Tensor kPos = tensor<float>({2, 2}, {0, 0, 1, 1});
const Tensor kSeg = tensor<float>({2, 2}, {0, 0, 10, -10});
const Tensor kGamma = tensor<float>({2}, {1, 2}), kBeta = tensor<float>({2}, {0.5f, 0});
const Tensor kIds = tensor<int32_t>({1, 2}, {2, 0});

Values embed(std::vector<std::string> ins, Values feeds, std::vector<std::string> outs = {"y", "mask_index", "sum"}) {
  return run_node(node("EmbedLayerNormalization", std::move(ins), std::move(outs), {}, "eln", "com.microsoft"), feeds);
}
}  // namespace

TEST_CASE("EmbedLayerNormalization: embeddings summed, normalised, mask counted") {
  // e = word[2] + pos[0] = (2, 2) -> constant row -> beta; word[0] + pos[1] + seg[1] = (12, -9)
  // -> mean 1.5, std 10.5 -> (1, -1) * gamma + beta
  const Values out = embed({"ids", "seg_ids", "word", "pos", "seg", "gamma", "beta", "mask"},
                           {kIds, tensor<int32_t>({1, 2}, {0, 1}), kWord, kPos, kSeg, kGamma, kBeta, tensor<int32_t>({1, 2}, {1, 0})});
  REQUIRE(out.size() == 3);
  check_equal(out[0], tensor<float>({1, 2, 2}, {0.5f, 0, 1.5f, -2}));
  check_equal(out[1], tensor<int32_t>({1}, {1}));
  check_equal(out[2], tensor<float>({1, 2, 2}, {2, 2, 12, -9}));
}

TEST_CASE("EmbedLayerNormalization: explicit position_ids (1, S) replace 0..S-1") {
  const Values out = embed({"ids", "", "word", "pos", "", "gamma", "beta", "", "pos_ids"},
                           {kIds, Value(), kWord, kPos, Value(), kGamma, kBeta, Value(), tensor<int32_t>({1, 2}, {1, 0})}, {"y", "", "sum"});
  check_equal(out[1], tensor<float>({1, 2, 2}, {3, 3, 1, 0}));
}

TEST_CASE("EmbedLayerNormalization equals Gather + Add + LayerNormalization-17") {
  const Tensor ids = tensor<int32_t>({2, 2}, {1, 2, 0, 1}), gamma = tensor<float>({2}, {0.5f, -1}), beta = tensor<float>({2}, {0, 1});
  const Value y = embed({"ids", "", "word", "pos", "", "gamma", "beta"}, {ids, Value(), kWord, tensor<float>({2, 2}, {0.1f, 0.7f, -0.3f, 0.2f}), Value(), gamma, beta}, {"y"})[0];
  const Value words = run_node(node("Gather", {"t", "i"}, {"y"}), {kWord, ids})[0];
  const Value positions = run_node(node("Gather", {"t", "i"}, {"y"}), {tensor<float>({2, 2}, {0.1f, 0.7f, -0.3f, 0.2f}), tensor<int64_t>({1, 2}, {0, 1})})[0];
  const Value sum = run_node(node("Add", {"a", "b"}, {"c"}), {words, positions})[0];
  check_equal(y, run_node(node("LayerNormalization", {"x", "g", "b"}, {"y"}, {attr("epsilon", 1e-12f)}), {sum, gamma, beta}, 17)[0]);
}

TEST_CASE("EmbedLayerNormalization errors name the id and the table") {
  CHECK_THROWS_WITH_AS(embed({"ids", "", "word", "pos", "", "gamma", "beta"}, {tensor<int32_t>({1, 2}, {0, 3}), Value(), kWord, kPos, Value(), kGamma, kBeta}),
                       doctest::Contains("input_ids element 1 is 3, outside the table's 3 rows"), Error);
  CHECK_THROWS_WITH_AS(embed({"ids", "", "word", "pos", "", "gamma", "beta"}, {kIds, Value(), kWord, tensor<float>({2, 3}, {0, 0, 0, 0, 0, 0}), Value(), kGamma, kBeta}),
                       doctest::Contains("position_embedding has shape (2, 3), expected 2 columns"), Error);
  CHECK_THROWS_WITH_AS(embed({"ids", "", "word", "pos", "", "gamma", "beta"}, {tensor<int32_t>({1, 3}, {0, 0, 0}), Value(), kWord, kPos, Value(), kGamma, kBeta}),
                       doctest::Contains("position_ids element 2 is 2, outside the table's 2 rows"), Error);
}

TEST_CASE("EmbedLayerNormalization refusals: one exact line each") {
  const std::string A = "node 'eln' (com.microsoft:EmbedLayerNormalization): ";
  CHECK_THROWS_WITH_AS(embed({"ids", "seg", "word", "pos", "", "gamma", "beta"}, {kIds, tensor<int32_t>({1, 2}, {0, 1}), kWord, kPos, Value(), kGamma, kBeta}),
                       (A + "segment_ids needs segment_embedding (input 4)").c_str(), Error);
  CHECK_THROWS_WITH_AS(embed({"ids", "", "word", "pos", "", "gamma"}, {kIds, Value(), kWord, kPos, Value(), kGamma}),
                       (A + "gamma and beta are required").c_str(), Error);
  CHECK_THROWS_WITH_AS(embed({"ids", "", "word", "pos", "", "gamma", "beta"}, {tensor<int32_t>({1, 2}, {-1, 0}), Value(), kWord, kPos, Value(), kGamma, kBeta}),
                       (A + "input_ids element 0 is -1, outside the table's 3 rows").c_str(), Error);
  CHECK_THROWS_WITH_AS(run_node(node("EmbedLayerNormalization", {"ids", "", "word", "pos", "", "gamma", "beta"}, {"y"}, {attr("epsilon", -1.0f)}, "eln",
                                     "com.microsoft"),
                                {kIds, Value(), kWord, kPos, Value(), kGamma, kBeta}),
                       (A + "epsilon -1 is negative").c_str(), Error);
}
