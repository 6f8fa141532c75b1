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
#include "load/wire_strip.h"

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

// The wire-level reader that cuts a large file's weights out before protobuf parses it
// (load_model; its equivalence with protobuf is model_io_test's): on any bytes it ends, every
// range it gives lies in the input, and it only removes bytes.
void check_stripped(const uint8_t* data, size_t size) {
  const auto stripped = refeval::wire::strip_initializer_bytes(data, size, 1);
  if (!stripped) return;
  uint64_t cut = 0;
  for (const auto& r : stripped->raw_data) {
    if (!r) continue;
    if (r->offset < 0 || r->length < 0 || uint64_t(r->offset + r->length) > size) __builtin_trap();
    cut += uint64_t(r->length);
  }
  if (stripped->model.size() + cut > size) __builtin_trap();  // enclosing lengths only shrink
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  check_stripped(data, size);
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
