// The nn family.
#include "refeval/registry.h"

namespace refeval::ops {

void register_nn(Registry& reg) {
}

}  // namespace refeval::ops
