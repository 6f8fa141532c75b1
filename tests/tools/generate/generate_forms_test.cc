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

TEST_CASE("generate: a BSNH past whose present declares no distinguishing dim") {
  // Where past and present declare nothing that differs, the length is the past's symbolic axis of
  // the two after the batch: (B, past, 4, 16) is BSNH, its cache grown on axis 1.
  SUBCASE("the presents declared without a shape (a tensor type of unknown rank)") {
    const DecoderSignature s = signature_of({batch, named("past"), fixed(4), fixed(16)}, ValueType::tensor_of_unknown_rank(DType::Float));
    CHECK(s.kv[0].length_axis == 1);
    CHECK_FALSE(s.static_cache);
    CHECK(s.describe().find("), BSNH float") != std::string::npos);
  }
  SUBCASE("a static cache of symbolic length, past and present both (B, max, 4, 16)") {
    const DecoderSignature s = signature_of({batch, named("max"), fixed(4), fixed(16)},
                                            ValueType::tensor(DType::Float, {batch, named("max"), fixed(4), fixed(16)}));
    CHECK(s.kv[0].length_axis == 1);
    CHECK(s.static_cache);
    CHECK_FALSE(s.static_length);
    CHECK(s.describe().find("), BSNH float, static cache") != std::string::npos);
  }
}

TEST_CASE("generate: new_tokens 0 through the API is a usage error") {
  // The CLI's --new-tokens refuses 0 itself; Python's refeval.generate(model, ids, new_tokens=0)
  // reaches Generator::run, which must not return an empty generation as if it had run.
  ReferenceEvaluator ev(load_model(std::string(REFEVAL_SOURCE_DIR) + "/tests/data/ort/decoders_optimum/b1/model.onnx"));
  Generator gen(ev, find_signature(ev.model().graph));
  GenerateOptions opt;
  opt.prompt = parse_prompt("1 2 3");
  opt.new_tokens = 0;
  try {
    gen.run(opt);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::Usage);
    CHECK(std::string(e.what()) == "--new-tokens must be at least 1");
  }
  opt.new_tokens = 1;
  CHECK(gen.run(opt).tokens.at(0).size() == 1);
}
