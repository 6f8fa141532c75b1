// The conv family.
#include "refeval/registry.h"

namespace refeval::ops {

void register_conv_op(Registry& reg);
void register_conv_transpose(Registry& reg);
void register_conv_integer(Registry& reg);
void register_deform_conv(Registry& reg);
void register_col2im(Registry& reg);
void register_causal_conv_with_state(Registry& reg);

void register_conv(Registry& reg) {
  register_conv_op(reg);
  register_conv_transpose(reg);
  register_conv_integer(reg);  // ConvInteger and QLinearConv
  register_deform_conv(reg);
  register_col2im(reg);
  register_causal_conv_with_state(reg);
}

}  // namespace refeval::ops
