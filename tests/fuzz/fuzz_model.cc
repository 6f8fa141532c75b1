// libFuzzer target: arbitrary bytes as a model file -> load -> plan -> run. Any input must end in
// a refeval::Error or outputs; never a crash, hang or sanitizer report. Inputs with a declared
// tensor type are fed zeros (symbolic dimensions 1), so mutated attributes and initializers
// reach the operators too.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "refeval/evaluator.h"
#include "refeval/limits.h"
#include "refeval/model_io.h"
#include "refeval/tensor.h"

namespace {

// Zero tensors for every input of known tensor type; false when some input cannot be made.
bool zero_feeds(const refeval::ReferenceEvaluator& ev, std::map<std::string, refeval::Value>& feeds) {
  for (const auto& name : ev.input_names()) {
    const refeval::ValueType* t = ev.declared_type(name);
    if (!t || t->kind != refeval::ValueType::Kind::Tensor || !t->has_shape) return false;
    refeval::Shape shape;
    for (const auto& d : t->dims) shape.push_back(d.fixed() ? d.value : 1);
    feeds.emplace(name, refeval::Value(refeval::Tensor(t->dtype, shape)));
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  refeval::set_memory_cap(64 << 20);
  refeval::set_loop_iteration_cap(1000);
  try {
    refeval::ReferenceEvaluator ev(
        refeval::parse_model(std::string(reinterpret_cast<const char*>(data), size), "/nonexistent", "fuzz"));
    std::map<std::string, refeval::Value> feeds;
    if (zero_feeds(ev, feeds)) ev.run({}, feeds);
  } catch (const refeval::Error&) {
  }
  return 0;
}
