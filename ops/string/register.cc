// The string family.
#include "refeval/registry.h"

namespace refeval::ops {

void register_string(Registry& reg) {
}

}  // namespace refeval::ops
