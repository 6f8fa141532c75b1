// The loss family.
#include "refeval/registry.h"

namespace refeval::ops {

void register_negative_log_likelihood_loss(Registry& reg);
void register_softmax_cross_entropy_loss(Registry& reg);

void register_loss(Registry& reg) {
  register_negative_log_likelihood_loss(reg);
  register_softmax_cross_entropy_loss(reg);
}

}  // namespace refeval::ops
