// The signal family: DFT, STFT, the cosine-sum windows and MelWeightMatrix.
#include "refeval/registry.h"

namespace refeval::ops {

void register_dft(Registry& reg);
void register_stft(Registry& reg);
void register_windows(Registry& reg);
void register_mel_weight_matrix(Registry& reg);

void register_signal(Registry& reg) {
  register_dft(reg);
  register_stft(reg);
  register_windows(reg);
  register_mel_weight_matrix(reg);
}

}  // namespace refeval::ops
