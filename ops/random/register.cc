// The random family: random tensors, Bernoulli, Multinomial, Dropout. How seeding keeps runs
// reproducible: random_common.h.
#include "refeval/registry.h"

namespace refeval::ops {

void register_random_tensors(Registry& reg);
void register_bernoulli(Registry& reg);
void register_multinomial(Registry& reg);
void register_dropout(Registry& reg);

void register_random(Registry& reg) {
  register_random_tensors(reg);
  register_bernoulli(reg);
  register_multinomial(reg);
  register_dropout(reg);
}

}  // namespace refeval::ops
