// The pool family.
#include "refeval/registry.h"

namespace refeval::ops {

void register_pool(Registry& reg) {
}

}  // namespace refeval::ops
