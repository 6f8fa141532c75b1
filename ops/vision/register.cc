// The vision family: resampling (Resize, Upsample, GridSample, AffineGrid), RoiAlign and
// NonMaxSuppression.
#include "refeval/registry.h"

namespace refeval::ops {

void register_resize(Registry& reg);
void register_grid_sample(Registry& reg);
void register_affine_grid(Registry& reg);
void register_roi_align(Registry& reg);
void register_non_max_suppression(Registry& reg);

void register_vision(Registry& reg) {
  register_resize(reg);
  register_grid_sample(reg);
  register_affine_grid(reg);
  register_roi_align(reg);
  register_non_max_suppression(reg);
}

}  // namespace refeval::ops
