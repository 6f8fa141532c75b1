// The sequence family: sequences and optionals.
#include "refeval/registry.h"

namespace refeval::ops {

void register_sequence_basic(Registry& reg);
void register_split_to_sequence(Registry& reg);
void register_concat_from_sequence(Registry& reg);
void register_sequence_map(Registry& reg);
void register_optional(Registry& reg);

void register_sequence(Registry& reg) {
  register_sequence_basic(reg);
  register_split_to_sequence(reg);
  register_concat_from_sequence(reg);
  register_sequence_map(reg);
  register_optional(reg);
}

}  // namespace refeval::ops
