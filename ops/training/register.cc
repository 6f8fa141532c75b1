// The ai.onnx.preview.training family: the optimizers Adagrad, Adam and Momentum, and Gradient.
#include "refeval/registry.h"

namespace refeval::ops {

void register_adagrad(Registry& reg);
void register_adam(Registry& reg);
void register_momentum(Registry& reg);
void register_gradient(Registry& reg);

void register_training(Registry& reg) {
  register_adagrad(reg);
  register_adam(reg);
  register_momentum(reg);
  register_gradient(reg);
}

}  // namespace refeval::ops
