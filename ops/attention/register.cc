// The attention family.
#include "refeval/registry.h"

namespace refeval::ops {

void register_attention(Registry& reg) {
}

}  // namespace refeval::ops
