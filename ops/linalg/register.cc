// The linalg family: matrix products, Einsum, Det.
#include "refeval/registry.h"

namespace refeval::ops {

void register_matmul(Registry& reg);
void register_gemm(Registry& reg);
void register_matmul_integer(Registry& reg);
void register_einsum(Registry& reg);
void register_det(Registry& reg);

void register_linalg(Registry& reg) {
  register_matmul(reg);
  register_gemm(reg);
  register_matmul_integer(reg);
  register_einsum(reg);
  register_det(reg);
}

}  // namespace refeval::ops
