#include "refeval/value.h"

namespace refeval {
namespace {
[[noreturn]] void wrong_kind(const Value& v, const char* wanted) {
  fail_runtime(std::string("expected a ") + wanted + " value but got " + v.kind_name());
}
}  // namespace

const Tensor& Value::tensor() const {
  if (auto* t = std::get_if<Tensor>(&v_)) return *t;
  wrong_kind(*this, "tensor");
}
const Sequence& Value::sequence() const {
  if (auto* s = std::get_if<Sequence>(&v_)) return *s;
  wrong_kind(*this, "sequence");
}
const Map& Value::map() const {
  if (auto* m = std::get_if<Map>(&v_)) return *m;
  wrong_kind(*this, "map");
}
const Optional& Value::optional() const {
  if (auto* o = std::get_if<Optional>(&v_)) return *o;
  wrong_kind(*this, "optional");
}

std::string Value::kind_name() const {
  static const char* names[] = {"absent", "tensor", "sequence", "map", "optional"};
  return names[v_.index()];
}

}  // namespace refeval
