// The image family.
#include "refeval/registry.h"

namespace refeval::ops {

void register_image(Registry& reg) {
}

}  // namespace refeval::ops
