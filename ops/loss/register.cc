// The loss family.
#include "refeval/registry.h"

namespace refeval::ops {

void register_loss(Registry& reg) {
}

}  // namespace refeval::ops
