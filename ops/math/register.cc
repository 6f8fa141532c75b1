// The math family: elementwise arithmetic, unary functions, activations, comparisons, bitwise
// operators, variadic reductions, casts.
#include "refeval/registry.h"

namespace refeval::ops {

void register_arithmetic(Registry& reg);
void register_unary(Registry& reg);
void register_linear_activations(Registry& reg);
void register_smooth_activations(Registry& reg);
void register_compare(Registry& reg);
void register_bitwise(Registry& reg);
void register_variadic(Registry& reg);
void register_pow(Registry& reg);
void register_tanh(Registry& reg);
void register_mod(Registry& reg);
void register_clip(Registry& reg);
void register_where(Registry& reg);
void register_cast(Registry& reg);
void register_bitcast(Registry& reg);

void register_math(Registry& reg) {
  register_arithmetic(reg);
  register_unary(reg);
  register_linear_activations(reg);
  register_smooth_activations(reg);
  register_compare(reg);
  register_bitwise(reg);
  register_variadic(reg);
  register_pow(reg);
  register_tanh(reg);
  register_mod(reg);
  register_clip(reg);
  register_where(reg);
  register_cast(reg);
  register_bitcast(reg);
}

}  // namespace refeval::ops
