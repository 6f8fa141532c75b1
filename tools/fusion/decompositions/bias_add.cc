// com.microsoft BiasAdd (v1): output = X + bias + skip, X and skip [N, S, C], bias [C].
#include "decompositions/decompositions.h"

namespace refeval::fusion {

void decompose_bias_add(GraphWriter& w, int64_t) {
  w.output(0, w.op("Add", {w.op("Add", {w.in(0), w.in(1)}), w.in(2)}));
}

}  // namespace refeval::fusion
