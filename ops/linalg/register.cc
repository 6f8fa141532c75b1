// The linalg family.
#include "refeval/registry.h"

namespace refeval::ops {

void register_linalg(Registry& reg) {
}

}  // namespace refeval::ops
