// The sequence family.
#include "refeval/registry.h"

namespace refeval::ops {

void register_sequence(Registry& reg) {
}

}  // namespace refeval::ops
