// The quant family.
#include "refeval/registry.h"

namespace refeval::ops {

void register_quant(Registry& reg) {
}

}  // namespace refeval::ops
