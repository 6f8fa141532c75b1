// The random family.
#include "refeval/registry.h"

namespace refeval::ops {

void register_random(Registry& reg) {
}

}  // namespace refeval::ops
