// How refeval generate reads a decoder's conventions from its inputs and outputs, on the namings
// and layouts different exporters write.
#include <doctest/doctest.h>

#include "generate/decoder_signature.h"
#include "generate/generator.h"
#include "refeval/builder.h"
#include "refeval/error.h"

using namespace refeval;
using namespace refeval::build;
using namespace refeval::generate;

namespace {

// A graph with these inputs and outputs (no nodes: only the signature is read).
Graph io(std::vector<ValueInfo> inputs, std::vector<ValueInfo> outputs) { return graph("g", {}, inputs, outputs); }
ValueInfo ids() { return tensor_info("input_ids", DType::Int64, {"batch", "sequence"}); }
ValueInfo logits() { return tensor_info("logits", DType::Float, {"batch", "sequence", 96}); }

}  // namespace

TEST_CASE("generate: Optimum / GenAI names, BNSH cache") {
  const Graph g = io({ids(), tensor_info("attention_mask", DType::Int64, {"batch", "total"}),
                      tensor_info("position_ids", DType::Int64, {"batch", "sequence"}),
                      tensor_info("past_key_values.0.key", DType::Float, {"batch", 2, "past", 16}),
                      tensor_info("past_key_values.0.value", DType::Float, {"batch", 2, "past", 16})},
                     {logits(), tensor_info("present.0.key", DType::Float, {"batch", 2, "total", 16}),
                      tensor_info("present.0.value", DType::Float, {"batch", 2, "total", 16})});
  const DecoderSignature s = find_signature(g);
  CHECK(s.attention_mask == "attention_mask");
  CHECK(s.position_ids == "position_ids");
  REQUIRE(s.kv.size() == 2);
  CHECK(s.kv[0].present == "present.0.key");
  CHECK(s.kv[1].present == "present.0.value");
  CHECK(s.kv[0].length_axis == 2);
  CHECK_FALSE(s.static_cache);
  CHECK(s.describe() == "decoder: input_ids, attention_mask, position_ids -> logits; 2 KV cache tensors "
                        "(past_key_values.0.key -> present.0.key ...), BNSH float");
}

TEST_CASE("generate: other namings and layouts") {
  SUBCASE("past_key_N / past_value_N, BSNH (the heads after the sequence)") {
    const DecoderSignature s = find_signature(io(
        {ids(), tensor_info("past_key_0", DType::Float16, {"batch", "past", 4, 16}),
         tensor_info("past_value_0", DType::Float16, {"batch", "past", 4, 16})},
        {logits(), tensor_info("present_key_0", DType::Float16, {"batch", "total", 4, 16}),
         tensor_info("present_value_0", DType::Float16, {"batch", "total", 4, 16})}));
    CHECK(s.kv[0].present == "present_key_0");
    CHECK(s.kv[0].length_axis == 1);
    CHECK(s.describe().find("BSNH float16") != std::string::npos);
  }
  SUBCASE("stacked past_N (2, B, N, P, H), as ORT's GPT-2 helper writes it") {
    const DecoderSignature s = find_signature(io({ids(), tensor_info("past_0", DType::Float, {2, "batch", 12, "past", 64})},
                                                 {logits(), tensor_info("present_0", DType::Float, {2, "batch", 12, "total", 64})}));
    CHECK(s.kv[0].stacked);
    CHECK(s.kv[0].length_axis == 3);
  }
  SUBCASE("a static cache: past and present of the same declared length") {
    const DecoderSignature s = find_signature(
        io({ids(), tensor_info("cache_position", DType::Int64, {"batch"}),
            tensor_info("past_key_values.0.key", DType::Float, {"batch", 2, 128, 16})},
           {logits(), tensor_info("present.0.key", DType::Float, {"batch", 2, 128, 16})}));
    CHECK(s.static_cache);
    CHECK(s.static_length == 128);
    CHECK(s.cache_position_per_row);
    CHECK(s.kv[0].length_axis == 2);
  }
  SUBCASE("HF's cache_position of the new tokens (S,)") {
    const DecoderSignature s = find_signature(
        io({ids(), tensor_info("cache_position", DType::Int64, {"sequence"}),
            tensor_info("past_key_values.0.key", DType::Float, {"batch", 2, "max", 16})},
           {logits(), tensor_info("present.0.key", DType::Float, {"batch", 2, "max", 16})}));
    CHECK_FALSE(s.cache_position_per_row);
    CHECK(s.static_cache);
    CHECK_FALSE(s.static_length);
  }
}

TEST_CASE("generate: what is not a decoder is one clear error") {
  auto error_of = [](const Graph& g) {
    try {
      find_signature(g);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const ValueInfo past = tensor_info("past_key_values.0.key", DType::Float, {"batch", 2, "past", 16});
  const ValueInfo present = tensor_info("present.0.key", DType::Float, {"batch", 2, "total", 16});
  CHECK(error_of(io({tensor_info("X", DType::Float, {3})}, {logits()})) == "not a decoder: no input 'input_ids'");
  CHECK(error_of(io({ids(), past}, {tensor_info("y", DType::Float, {1}), present})) == "not a decoder: no output 'logits'");
  CHECK(error_of(io({ids()}, {logits()})) ==
        "not a decoder with a KV cache: no 'past_*' input paired with a 'present*' output");
  CHECK(error_of(io({ids(), past}, {logits()})) == "past input 'past_key_values.0.key' has no matching output 'present.0.key'");
  CHECK(error_of(io({ids(), past, tensor_info("token_type_ids", DType::Int64, {"batch", "sequence"})}, {logits(), present})) ==
        "input 'token_type_ids' is none of a decoder's inputs (input_ids, attention_mask, position_ids, cache_position, "
        "use_cache_branch, past_*)");
  CHECK(error_of(io({ids(), tensor_info("past_key_values.0.key", DType::Float, {"batch", 32})}, {logits(), present})).find(
            "expected rank 4 (B, N, P, H) or 5") != std::string::npos);
}

TEST_CASE("generate: prompts") {
  const Tensor one = parse_prompt("5 17 33");
  CHECK(one.shape() == Shape{1, 3});
  CHECK(one.to_vector<int64_t>() == std::vector<int64_t>{5, 17, 33});
  const Tensor two = parse_prompt("1 2; 3 4");
  CHECK(two.shape() == Shape{2, 2});
  CHECK(two.to_vector<int64_t>() == std::vector<int64_t>{1, 2, 3, 4});
  CHECK_THROWS_WITH_AS(parse_prompt("1 2; 3"), doctest::Contains("every row needs the same number"), Error);
  CHECK_THROWS_WITH_AS(parse_prompt("1 -2"), doctest::Contains("'-' is not part of a token id"), Error);
  const Tensor r = random_prompt(2, 4, 10, 7);
  CHECK(r.shape() == Shape{2, 4});
  CHECK(r.to_vector<int64_t>() == random_prompt(2, 4, 10, 7).to_vector<int64_t>());
  for (int64_t id : r.to_vector<int64_t>()) CHECK((id >= 0 && id < 10));
}
