// The control family.
#include "refeval/registry.h"

namespace refeval::ops {

void register_control(Registry& reg) {
}

}  // namespace refeval::ops
