// The linalg family: matrix products, Einsum, Det.
#include "refeval/registry.h"

namespace refeval::ops {

void register_matmul(Registry& reg);
void register_gemm(Registry& reg);

void register_linalg(Registry& reg) {
  register_matmul(reg);
  register_gemm(reg);
}

}  // namespace refeval::ops
