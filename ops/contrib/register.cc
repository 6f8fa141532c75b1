// ONNX Runtime's contrib operators (domain com.microsoft), written with the same public API a
// custom operator uses (refeval/op_run.h), so they double as examples of it. Semantics:
// shared/docs/ort-profiling-and-fusions.md section D.
#include "refeval/registry.h"

namespace refeval::ops {

void register_contrib(Registry& reg) {
  (void)reg;
}

}  // namespace refeval::ops
