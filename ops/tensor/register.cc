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
}

}  // namespace refeval::ops
