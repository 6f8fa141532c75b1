// Every built-in operator family, registered explicitly (no static self-registration, which a
// static link can silently drop). A family's register function lists one line per operator.
#include "refeval/registry.h"

namespace refeval {
namespace ops {
void register_math(Registry& reg);
void register_linalg(Registry& reg);
void register_reduce(Registry& reg);
void register_nn(Registry& reg);
void register_tensor(Registry& reg);
void register_control(Registry& reg);
void register_sequence(Registry& reg);
void register_conv(Registry& reg);
void register_pool(Registry& reg);
void register_quant(Registry& reg);
void register_vision(Registry& reg);
void register_loss(Registry& reg);
void register_signal(Registry& reg);
void register_rnn(Registry& reg);
void register_attention(Registry& reg);
void register_string(Registry& reg);
void register_ml(Registry& reg);
void register_random(Registry& reg);
void register_training(Registry& reg);
void register_image(Registry& reg);
void register_contrib(Registry& reg);
}  // namespace ops

void register_builtin_ops(Registry& reg) {
  ops::register_math(reg);
  ops::register_linalg(reg);
  ops::register_reduce(reg);
  ops::register_nn(reg);
  ops::register_tensor(reg);
  ops::register_control(reg);
  ops::register_sequence(reg);
  ops::register_conv(reg);
  ops::register_pool(reg);
  ops::register_quant(reg);
  ops::register_vision(reg);
  ops::register_loss(reg);
  ops::register_signal(reg);
  ops::register_rnn(reg);
  ops::register_attention(reg);
  ops::register_string(reg);
  ops::register_ml(reg);
  ops::register_random(reg);
  ops::register_training(reg);
  ops::register_image(reg);
  ops::register_contrib(reg);
}

}  // namespace refeval
