// The training family.
#include "refeval/registry.h"

namespace refeval::ops {

void register_training(Registry& reg) {
}

}  // namespace refeval::ops
