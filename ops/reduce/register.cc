// The reduce family: Reduce*, ArgMax / ArgMin, CumSum / CumProd.
#include "refeval/registry.h"

namespace refeval::ops {

void register_reduce_ops(Registry& reg);

void register_reduce(Registry& reg) {
  register_reduce_ops(reg);
}

}  // namespace refeval::ops
