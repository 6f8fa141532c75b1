// refeval generate on declared shapes and calls no other test gives: presents whose dims are left
// unknown or undeclared, a BSNH static cache of symbolic length, and the API's new_tokens 0.
#include <doctest/doctest.h>

#include "generate/decoder_signature.h"
#include "generate/generator.h"
#include "refeval/builder.h"
#include "refeval/error.h"
#include "refeval/model_io.h"

using namespace refeval;
using namespace refeval::build;
using namespace refeval::generate;

namespace {

// A one-layer decoder's inputs and outputs (no nodes: only the signature is read), its past key
// and value declared `past`, its presents `present`.
DecoderSignature signature_of(const std::vector<Dim>& past, const ValueType& present) {
  std::vector<ValueInfo> inputs{tensor_info("input_ids", DType::Int64, {"batch", "sequence"})};
  std::vector<ValueInfo> outputs{tensor_info("logits", DType::Float, {"batch", "sequence", 96})};
  for (const char* kind : {"key", "value"}) {
    inputs.push_back({std::string("past_key_values.0.") + kind, ValueType::tensor(DType::Float, past)});
    outputs.push_back({std::string("present.0.") + kind, present});
  }
  return find_signature(graph("g", {}, inputs, outputs));
}

const Dim batch{-1, "batch"}, unknown{};
Dim fixed(int64_t n) { return {n, ""}; }
Dim named(const char* name) { return {-1, name}; }

}  // namespace

TEST_CASE("generate: presents of rank 4 whose dims are unknown: the layout is the past's") {
  // As onnx.helper.make_tensor_value_info(name, FLOAT, [None] * 4) declares an output: the rank
  // and nothing else. An unknown dim is no difference from the past's: BNSH (B, 4, past, 16) stays
  // BNSH with a growing cache, not BSNH of static length 4 (the heads).
  const ValueType present = ValueType::tensor(DType::Float, {unknown, unknown, unknown, unknown});
  const DecoderSignature bnsh = signature_of({batch, fixed(4), named("past"), fixed(16)}, present);
  CHECK(bnsh.kv[0].length_axis == 2);
  CHECK_FALSE(bnsh.static_cache);
  CHECK(bnsh.describe() == "decoder: input_ids -> logits; 2 KV cache tensors (past_key_values.0.key -> present.0.key ...), BNSH float");
  const DecoderSignature bsnh = signature_of({batch, named("past"), fixed(4), fixed(16)}, present);
  CHECK(bsnh.kv[0].length_axis == 1);
  CHECK_FALSE(bsnh.static_cache);
}
