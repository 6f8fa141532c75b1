// The rnn family: RNN, GRU, LSTM.
#include "refeval/registry.h"

namespace refeval::ops {

void register_recurrent(Registry& reg);

void register_rnn(Registry& reg) { register_recurrent(reg); }

}  // namespace refeval::ops
