// The conv family.
#include "refeval/registry.h"

namespace refeval::ops {

void register_conv(Registry& reg) {
}

}  // namespace refeval::ops
