// The tensor family.
#include "refeval/registry.h"

namespace refeval::ops {

void register_tensor(Registry& reg) {
}

}  // namespace refeval::ops
