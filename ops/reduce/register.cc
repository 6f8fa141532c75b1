// The reduce family: Reduce*, ArgMax / ArgMin, CumSum / CumProd.
#include "refeval/registry.h"

namespace refeval::ops {

void register_reduce_ops(Registry& reg);
void register_argmax(Registry& reg);
void register_cumulative(Registry& reg);

void register_reduce(Registry& reg) {
  register_reduce_ops(reg);
  register_argmax(reg);
  register_cumulative(reg);
}

}  // namespace refeval::ops
