// RNN, GRU, LSTM: hand-computed recurrences (directions, sequence_lens, layout, activations)
// and the attribute / shape errors the backend tests do not reach.
#include <cmath>

#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {

const std::vector<std::string> kRnnInputs = {"X", "W", "R", "B", "seq", "h0"};

Node rnn(std::vector<Attribute> attrs, std::vector<std::string> inputs = kRnnInputs) {
  return node("RNN", std::move(inputs), {"Y", "Y_h"}, std::move(attrs), "rnn");
}


// Runs n with its inputs past `in` (or Absent in it) left out, as a model would write them.
Values run_with(Node n, const Values& in, int64_t opset = kLatestOnnxOpset) {
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (i >= in.size() || in[i].is_absent()) n.inputs[i] = "";
  return run_node(n, in, opset);
}

}  // namespace

TEST_CASE("RNN with Relu, W = R = 1: h_t = relu(x_t + h_{t-1})") {
  // X is (seq 2, batch 2, input 1): batch 0 = [1, 2], batch 1 = [3, 9] with sequence_lens [2, 1].
  const Tensor X = tensor<float>({2, 2, 1}, {1, 3, 2, 9});
  const Tensor one = tensor<float>({1, 1, 1}, {1});
  const Tensor lens = tensor<int32_t>({2}, {2, 1});
  struct Case { const char* what; const char* direction; std::vector<float> y, yh; };
  const Case cases[] = {
      // batch 1 stops after its one step: Y past its end is zero, Y_h is its state at step 1.
      {"forward", "forward", {1, 3, 3, 0}, {3, 3}},
      // reverse starts at each sequence's own last element.
      {"reverse", "reverse", {3, 3, 2, 0}, {3, 3}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    auto out = run_with(rnn({attr("hidden_size", int64_t(1)), attr("activations", std::vector<std::string>{"Relu"}),
                             attr("direction", c.direction)}),
                        {X, one, one, Value(), lens});
    check_equal(out[0], tensor<float>({2, 1, 2, 1}, c.y));
    check_equal(out[1], tensor<float>({1, 2, 1}, c.yh));
  }
}

TEST_CASE("bidirectional RNN stacks both directions; layout 1 puts batch first") {
  const Tensor X = tensor<double>({2, 1, 1}, {1, 2});
  const Tensor W = tensor<double>({2, 1, 1}, {1, 1}), R = tensor<double>({2, 1, 1}, {1, 1});
  auto out = run_with(rnn({attr("activations", std::vector<std::string>{"Affine", "Affine"}),
                           attr("activation_alpha", std::vector<float>{1, 1}), attr("direction", "bidirectional")}),
                      {X, W, R});
  // forward: 1, 3; reverse: t=1 -> 2, t=0 -> 1 + 2 = 3.
  check_equal(out[0], tensor<double>({2, 2, 1, 1}, {1, 3, 3, 2}));
  check_equal(out[1], tensor<double>({2, 1, 1}, {3, 3}));
  // The same sequence batch-first: X (batch 1, seq 2, 1); Y (batch, seq, dirs, hidden).
  auto out1 = run_with(rnn({attr("activations", std::vector<std::string>{"Affine", "Affine"}),
                            attr("direction", "bidirectional"), attr("layout", int64_t(1))}),
                       {X.reshaped({1, 2, 1}), W, R});
  check_equal(out1[0], tensor<double>({1, 2, 2, 1}, {1, 3, 3, 2}));
  check_equal(out1[1], tensor<double>({1, 2, 1}, {3, 3}));
}

TEST_CASE("activation functions and their alpha/beta defaults") {
  // One step from h0 = 0 with W = 1: h_1 = f(x).
  struct Case { const char* name; std::vector<float> alpha, beta; float x, expected; };
  const Case cases[] = {
      {"LeakyRelu", {}, {}, -2, -0.02f},           // default alpha 0.01
      {"LeakyRelu", {0.5f}, {}, -2, -1},
      {"ThresholdedRelu", {}, {}, 0.5f, 0},        // default alpha 1
      {"HardSigmoid", {}, {}, 1, 0.7f},            // 0.2 x + 0.5
      {"ScaledTanh", {2}, {0}, 3, 0},              // 2 tanh(0 x)
      {"Softsign", {}, {}, 1, 0.5f},
      {"Elu", {}, {}, -1000, -1},
      {"Softplus", {}, {}, 0, std::log(2.0f)},
      {"sigmoid", {}, {}, 0, 0.5f},                // names are case-insensitive
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    std::vector<Attribute> attrs = {attr("activations", std::vector<std::string>{c.name})};
    if (!c.alpha.empty()) attrs.push_back(attr("activation_alpha", c.alpha));
    if (!c.beta.empty()) attrs.push_back(attr("activation_beta", c.beta));
    const Tensor one = tensor<float>({1, 1, 1}, {1});
    auto out = run_with(rnn(attrs), {tensor<float>({1, 1, 1}, {c.x}), one, one});
    check_equal(out[1], tensor<float>({1, 1, 1}, {c.expected}));
  }
}

TEST_CASE("GRU and LSTM one step with zero weights") {
  const Tensor X = tensor<float>({1, 1, 1}, {5});
  SUBCASE("GRU: z = 0.5, h~ = tanh(0) -> h = 0.5 h0") {
    for (int64_t lbr : {0, 1}) {
      auto out = run_with(node("GRU", {"X", "W", "R", "", "", "h0"}, {"Y", "Y_h"}, {attr("hidden_size", int64_t(1)), attr("linear_before_reset", lbr)}),
                          {X, tensor<float>({1, 3, 1}, {0, 0, 0}), tensor<float>({1, 3, 1}, {0, 0, 0}), Value(), Value(),
                           tensor<float>({1, 1, 1}, {4})});
      check_equal(out[1], tensor<float>({1, 1, 1}, {2}));
    }
  }
  SUBCASE("LSTM: c = 0.5 c0 + 0.5 tanh(0); input_forget makes f = 1 - i") {
    const Tensor W = tensor<float>({1, 4, 1}, {0, 0, 0, 0}), R = W;
    const Tensor c0 = tensor<float>({1, 1, 1}, {2});
    auto out = run_with(node("LSTM", {"X", "W", "R", "", "", "", "c0"}, {"Y", "Y_h", "Y_c"}),
                        {X, W, R, Value(), Value(), Value(), c0});
    check_equal(out[2], tensor<float>({1, 1, 1}, {1}));
    check_equal(out[1], tensor<float>({1, 1, 1}, {0.5f * std::tanh(1.0f)}));
    // Peephole on the forget gate (P = [i, o, f]) pushes f = sigmoid(2 * 10) to ~1.
    auto peep = run_with(node("LSTM", {"X", "W", "R", "", "", "", "c0", "P"}, {"Y", "Y_h", "Y_c"}),
                         {X, W, R, Value(), Value(), Value(), c0, tensor<float>({1, 3}, {0, 0, 10})});
    check_equal(peep[2], tensor<float>({1, 1, 1}, {2}));
  }
}

TEST_CASE("recurrent ops check attributes and shapes") {
  const Tensor one = tensor<float>({1, 1, 1}, {1});
  CHECK_THROWS_WITH_AS(run_with(rnn({attr("activations", std::vector<std::string>{"Gelu"})}), {one, one, one}),
                       doctest::Contains("unknown activation function 'Gelu'"), Error);
  CHECK_THROWS_WITH_AS(run_with(rnn({attr("direction", "bidirectional")}), {one, one, one}),
                       doctest::Contains("W has shape (1, 1, 1), expected (2, 1, 1)"), Error);
  CHECK_THROWS_WITH_AS(run_with(rnn({}), {one, one, one, Value(), tensor<int32_t>({1}, {2})}),
                       doctest::Contains("sequence_lens[0] = 2 is outside [0, 1]"), Error);
  CHECK_THROWS_WITH_AS(run_with(rnn({attr("direction", "sideways")}), {one, one, one}), doctest::Contains("direction"), Error);
  CHECK_THROWS_AS(run_with(rnn({}), {tensor<int32_t>({1, 1, 1}, {1}), one, one}), Error);
}
