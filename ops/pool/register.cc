// The pool family.
#include "refeval/registry.h"

namespace refeval::ops {

void register_average_pool(Registry& reg);
void register_max_pool(Registry& reg);
void register_lp_pool(Registry& reg);
void register_global_pools(Registry& reg);
void register_max_unpool(Registry& reg);
void register_max_roi_pool(Registry& reg);

void register_pool(Registry& reg) {
  register_average_pool(reg);
  register_max_pool(reg);
  register_lp_pool(reg);
  register_global_pools(reg);
  register_max_unpool(reg);
  register_max_roi_pool(reg);
}

}  // namespace refeval::ops
