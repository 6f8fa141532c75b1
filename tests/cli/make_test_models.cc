// Writes the models the CLI tests of check-fusion and --custom-ops use into a folder:
//   refeval_test_models DIR
#include <string>

#include <fmt/format.h>

#include "refeval/model_io.h"
#include "tools/fusion/fusion_models.h"

using namespace refeval;
using namespace refeval::testing;

int main(int argc, char** argv) {
  if (argc != 2) {
    fmt::print(stderr, "usage: refeval_test_models DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  save_model(gelu_model("none"), dir + "/gelu_erf.onnx");
  save_model(gelu_model("tanh"), dir + "/gelu_tanh.onnx");
  save_model(gelu_erf_unfused(), dir + "/gelu_erf_unfused.onnx");
  save_model(layer_norm_model(), dir + "/layer_norm.onnx");
  save_model(layer_norm_unfused(false), dir + "/layer_norm_unfused.onnx");
  save_model(layer_norm_unfused(true), dir + "/layer_norm_eps_outside_sqrt.onnx");
  save_model(causal_attention_model(), dir + "/attention.onnx");
  save_model(causal_attention_unfused(0), dir + "/attention_unfused.onnx");
  save_model(causal_attention_unfused(1), dir + "/attention_mask_off_by_one.onnx");
  save_model(fast_gelu_unfused(0.044715f), dir + "/fast_gelu_unfused.onnx");
  save_model(fast_gelu_unfused(0.05f), dir + "/fast_gelu_wrong_coefficient.onnx");
  save_model(gpt2_attention_unfused(0), dir + "/gpt2_attention_unfused.onnx");
  save_model(gpt2_attention_unfused(1), dir + "/gpt2_attention_mask_shifted.onnx");
  for (int64_t opset : {6, 13, 14, 21}) save_model(relu_model(opset), fmt::format("{}/relu_{}.onnx", dir, opset));
  return 0;
}
