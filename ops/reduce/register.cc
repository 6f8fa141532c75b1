// The reduce family.
#include "refeval/registry.h"

namespace refeval::ops {

void register_reduce(Registry& reg) {
}

}  // namespace refeval::ops
