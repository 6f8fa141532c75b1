// Every built-in operator family, registered explicitly (no static self-registration, which a
// static link can silently drop). A family's register function lists one line per operator.
#include "refeval/registry.h"

namespace refeval {
namespace ops {
void register_math(Registry& reg);
}  // namespace ops

void register_builtin_ops(Registry& reg) {
  ops::register_math(reg);
}

}  // namespace refeval
