// The quant family.
#include "refeval/registry.h"

namespace refeval::ops {

void register_quantize_linear(Registry& reg);
void register_dequantize_linear(Registry& reg);
void register_dynamic_quantize_linear(Registry& reg);
void register_qlinear_matmul(Registry& reg);

void register_quant(Registry& reg) {
  register_quantize_linear(reg);
  register_dequantize_linear(reg);
  register_dynamic_quantize_linear(reg);
  register_qlinear_matmul(reg);
}

}  // namespace refeval::ops
