// The ml family.
#include "refeval/registry.h"

namespace refeval::ops {

void register_ml(Registry& reg) {
}

}  // namespace refeval::ops
