// The math family: elementwise arithmetic, unary functions, comparisons, casts, matrix products.
#include "refeval/registry.h"

namespace refeval::ops {

void register_arithmetic(Registry& reg);

void register_math(Registry& reg) {
  register_arithmetic(reg);
}

}  // namespace refeval::ops
