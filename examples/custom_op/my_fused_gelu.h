// MyFusedGelu (domain example.fused, version 1): Y = Gelu(X + bias), the bias a 1-D tensor over
// X's last dimension. Attribute `approximate`: "none" (default, the erf form
// 0.5 z (1 + erf(z / sqrt 2))) or "tanh" (0.5 z (1 + tanh(sqrt(2 / pi) (z + 0.044715 z^3)))).
// It replaces the five nodes Add, Div, Erf, Add, Mul, Mul of an exported GELU after a bias add.
#pragma once

#include "refeval/registry.h"

namespace example {

inline constexpr const char* kDomain = "example.fused";

void register_my_fused_gelu(refeval::Registry& registry);

}  // namespace example
