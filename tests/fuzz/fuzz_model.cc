// libFuzzer target: arbitrary bytes as a model file -> load -> plan. Any input must end in a
// refeval::Error or a planned model; never a crash, hang or sanitizer report.
#include <cstddef>
#include <cstdint>
#include <string>

#include "refeval/evaluator.h"
#include "refeval/model_io.h"
#include "refeval/tensor.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  refeval::set_memory_cap(64 << 20);
  try {
    refeval::ReferenceEvaluator ev(refeval::parse_model(std::string(reinterpret_cast<const char*>(data), size), "/nonexistent", "fuzz"));
  } catch (const refeval::Error&) {
  }
  return 0;
}
