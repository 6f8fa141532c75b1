// --target onnx on com.microsoft attention nodes whose attributes or extra inputs and outputs have
// no Attention-23 form. refeval's own kernels refuse these nodes when a model loads, so no model
// file reaches the converter with them; the converter keeps its guards for the day a kernel takes
// them, and here they run on graphs built in memory: the node stays as it was and --explain says why.
#include <doctest/doctest.h>

#include "optimize_test_util.h"
#include "shape_inference.h"

using namespace refeval;
using namespace refeval::build;
using refeval::testing::count_ops;
using refeval::testing::f32;
using refeval::testing::ramp;

namespace {

Node ms(const std::string& op, std::vector<std::string> in, std::vector<std::string> out, std::vector<Attribute> attrs) {
  return node(op, std::move(in), std::move(out), std::move(attrs), op, "com.microsoft");
}

Model ms_model(Node n, std::vector<ValueInfo> inputs, std::vector<ValueInfo> outputs, std::vector<Initializer> inits = {}) {
  return model(graph("g", {std::move(n)}, std::move(inputs), std::move(outputs), std::move(inits)), {{"", 17}, {"com.microsoft", 1}});
}

// The standard-ops pass with --explain: the "not fused" lines, after checking the node stayed.
std::string explained(const Model& m) {
  const optimize::Inference inference = optimize::infer(m);
  optimize::Explain explain;
  optimize::PassContext ctx{Registry::builtin(), &inference, &explain};
  Model out = m;
  CHECK(optimize::to_standard_ops_pass().run(out, ctx) == 0);
  CHECK(count_ops(out, m.graph.nodes.front().op_type) == 1);
  CHECK(out.opsets.count("com.microsoft") == 1);
  return testing::not_fused_lines(explain);
}

// MultiHeadAttention over q, k, v (1, 3, 8), 2 heads of 4; `extra` inputs after the value.
Model mha(std::vector<std::string> extra_inputs, std::vector<ValueInfo> extra_feeds, std::vector<std::string> outputs,
          std::vector<ValueInfo> output_infos) {
  std::vector<std::string> in = {"q", "k", "v"};
  in.insert(in.end(), extra_inputs.begin(), extra_inputs.end());
  std::vector<ValueInfo> feeds = {f32("q", {1, 3, 8}), f32("k", {1, 3, 8}), f32("v", {1, 3, 8})};
  feeds.insert(feeds.end(), extra_feeds.begin(), extra_feeds.end());
  return ms_model(ms("MultiHeadAttention", in, outputs, {attr("num_heads", int64_t(2))}), feeds, output_infos);
}

// com.microsoft Attention over x (1, 3, 8) with packed weights (8, width) and a bias.
Model attention(std::vector<Attribute> attrs, std::vector<std::string> extra_inputs, std::vector<ValueInfo> extra_feeds,
                std::vector<std::string> outputs, std::vector<ValueInfo> output_infos, int64_t width = 24) {
  std::vector<std::string> in = {"x", "w", "b"};
  in.insert(in.end(), extra_inputs.begin(), extra_inputs.end());
  std::vector<ValueInfo> feeds = {f32("x", {1, 3, 8})};
  feeds.insert(feeds.end(), extra_feeds.begin(), extra_feeds.end());
  attrs.push_back(attr("num_heads", int64_t(2)));
  return ms_model(ms("Attention", in, outputs, attrs), feeds, output_infos,
                  {{"w", ramp({8, width}, -0.5f, 0.045f)}, {"b", ramp({width}, -0.1f, 0.01f)}});
}

const ValueInfo kY = f32("y", {1, 3, 8});
const ValueInfo kPastLength = tensor_info("past_length", DType::Int32, {1});

}  // namespace

TEST_CASE("standard-ops: MultiHeadAttention with ORT's qk output or beam-search inputs stays, explained") {
  // output 3: the scores before the Softmax, which Attention-23 does not return
  CHECK(explained(mha({}, {}, {"y", "", "", "qk"}, {kY, f32("qk", {1, 2, 3, 3})})) ==
        "not fused: standard-ops at 'MultiHeadAttention': the qk output is not converted\n");
  // input 8: the past length of a past and present sharing one buffer (beam search's cache indirection is input 9)
  CHECK(explained(mha({"", "", "", "", "", "past_length"}, {kPastLength}, {"y"}, {kY})) ==
        "not fused: standard-ops at 'MultiHeadAttention': past_sequence_length / cache_indirection (buffer sharing, beam search) are not converted\n");
}

TEST_CASE("standard-ops: com.microsoft Attention with a shared buffer, rotation or unequal present stays, explained") {
  const std::string at = "not fused: standard-ops at 'Attention': ";
  CHECK(explained(attention({attr("do_rotary", int64_t(1))}, {}, {}, {"y"}, {kY})) == at + "past_present_share_buffer / do_rotary are not converted\n");
  // input 6: the past length when past and present share one buffer
  CHECK(explained(attention({}, {"", "", "", "past_length"}, {kPastLength}, {"y"}, {kY})) ==
        at + "past_sequence_length (buffer sharing) is not converted\n");
  // query and key of 8, value of 4: the present stacks keys and values, so their widths must agree
  CHECK(explained(attention({attr("qkv_hidden_sizes", std::vector<int64_t>{8, 8, 4})}, {}, {}, {"y", "present"},
                            {f32("y", {1, 3, 4}), f32("present", {2, 1, 2, 3, 4})}, 20)) == at + "present needs equal key and value sizes\n");
}

TEST_CASE("standard-ops: RotaryEmbedding over packed batches stays, explained") {
  // is_packed_batching: the rows of every sequence laid end to end, which RotaryEmbedding-23 has no form for
  const Model m = ms_model(ms("RotaryEmbedding", {"x", "pos", "cos", "sin"}, {"y"}, {attr("is_packed_batching", int64_t(1))}),
                           {f32("x", {1, 3, 8}), tensor_info("pos", DType::Int64, {1, 3})}, {f32("y", {1, 3, 8})},
                           {{"cos", ramp({16, 4}, -0.5f, 0.05f)}, {"sin", ramp({16, 4}, 0.5f, -0.05f)}});
  CHECK(explained(m) == "not fused: standard-ops at 'RotaryEmbedding': is_packed_batching=1 has no standard form\n");
}
