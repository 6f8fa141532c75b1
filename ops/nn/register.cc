// The nn family: Softmax-like ops and the normalizations.
#include "refeval/registry.h"

namespace refeval::ops {

void register_softmax(Registry& reg);
void register_layer_normalization(Registry& reg);
void register_rms_normalization(Registry& reg);
void register_batch_normalization(Registry& reg);
void register_group_normalization(Registry& reg);
void register_mean_variance_normalization(Registry& reg);
void register_lp_normalization(Registry& reg);
void register_lrn(Registry& reg);

void register_nn(Registry& reg) {
  register_softmax(reg);
  register_layer_normalization(reg);
  register_rms_normalization(reg);
  register_batch_normalization(reg);
  register_group_normalization(reg);
  register_mean_variance_normalization(reg);
  register_lp_normalization(reg);
  register_lrn(reg);
}

}  // namespace refeval::ops
