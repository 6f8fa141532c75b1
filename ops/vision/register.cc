// The vision family.
#include "refeval/registry.h"

namespace refeval::ops {

void register_vision(Registry& reg) {
}

}  // namespace refeval::ops
