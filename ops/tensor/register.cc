// The tensor family: shape manipulation, data movement, indexing, constants.
#include "refeval/registry.h"

namespace refeval::ops {

void register_reshape(Registry& reg);
void register_transpose(Registry& reg);
void register_concat(Registry& reg);
void register_slice(Registry& reg);
void register_split(Registry& reg);
void register_gather(Registry& reg);
void register_squeeze(Registry& reg);
void register_shape(Registry& reg);
void register_constant(Registry& reg);
void register_expand(Registry& reg);
void register_range(Registry& reg);
void register_identity(Registry& reg);
void register_flatten(Registry& reg);
void register_eye_like(Registry& reg);
void register_compress(Registry& reg);
void register_depth_to_space(Registry& reg);
void register_gather_elements(Registry& reg);
void register_gather_nd(Registry& reg);
void register_non_zero(Registry& reg);
void register_one_hot(Registry& reg);
void register_pad(Registry& reg);
void register_reverse_sequence(Registry& reg);
void register_scatter(Registry& reg);
void register_tile(Registry& reg);
void register_trilu(Registry& reg);
void register_top_k(Registry& reg);
void register_unique(Registry& reg);
void register_center_crop_pad(Registry& reg);

void register_tensor(Registry& reg) {
  register_reshape(reg);
  register_transpose(reg);
  register_concat(reg);
  register_slice(reg);
  register_split(reg);
  register_gather(reg);
  register_squeeze(reg);
  register_shape(reg);
  register_constant(reg);
  register_expand(reg);
  register_range(reg);
  register_identity(reg);
  register_flatten(reg);
  register_eye_like(reg);
  register_compress(reg);
  register_depth_to_space(reg);
  register_gather_elements(reg);
  register_gather_nd(reg);
  register_non_zero(reg);
  register_one_hot(reg);
  register_pad(reg);
  register_reverse_sequence(reg);
  register_scatter(reg);
  register_tile(reg);
  register_trilu(reg);
  register_top_k(reg);
  register_unique(reg);
  register_center_crop_pad(reg);
}

}  // namespace refeval::ops
