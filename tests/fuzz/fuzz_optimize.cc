// libFuzzer target: arbitrary bytes as a model -> `show`'s ONNX text and DOT -> refeval optimize
// at every level (shape inference, every pattern and graph pass) -> the result planned and
// written back. Any input must end in a refeval::Error or an optimized model; never a crash,
// hang or sanitizer report.
#include <cstddef>
#include <cstdint>
#include <string>

#include "dot_format.h"
#include "optimizer.h"
#include "text_format.h"
#include "refeval/evaluator.h"
#include "refeval/limits.h"
#include "refeval/model_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  refeval::set_memory_cap(64 << 20);
  refeval::set_loop_iteration_cap(1000);
  try {
    const refeval::Model m = refeval::parse_model(std::string(reinterpret_cast<const char*>(data), size), "/nonexistent", "fuzz");
    refeval::show::model_text(m, {true, true, 16});
    refeval::show::graph_dot(m.graph, {});
    for (refeval::optimize::Level level : {refeval::optimize::Level::Basic, refeval::optimize::Level::Extended}) {
      refeval::optimize::OptimizeOptions options;
      options.level = level;
      options.model_type = "gpt2";
      const refeval::Model out = refeval::optimize::optimize(m, refeval::Registry::builtin(), options).model;
      refeval::serialize_model(out);
      refeval::ReferenceEvaluator ev(out);
    }
  } catch (const refeval::Error&) {
  }
  return 0;
}
