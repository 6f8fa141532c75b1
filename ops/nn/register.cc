// The nn family: Softmax-like ops and the normalizations.
#include "refeval/registry.h"

namespace refeval::ops {

void register_softmax(Registry& reg);
void register_layer_normalization(Registry& reg);

void register_nn(Registry& reg) {
  register_softmax(reg);
  register_layer_normalization(reg);
}

}  // namespace refeval::ops
