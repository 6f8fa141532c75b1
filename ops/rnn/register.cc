// The rnn family.
#include "refeval/registry.h"

namespace refeval::ops {

void register_rnn(Registry& reg) {
}

}  // namespace refeval::ops
