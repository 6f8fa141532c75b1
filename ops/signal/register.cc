// The signal family.
#include "refeval/registry.h"

namespace refeval::ops {

void register_signal(Registry& reg) {
}

}  // namespace refeval::ops
