// Types and shapes of every value, from ONNX's own shape inference (Debian's libonnx) with data
// propagation, so dims are symbols ("batch", "seq") or sizes exactly as ONNX defines them, and a
// value computed from shapes (Shape -> Gather -> Concat) is known element by element. Operators
// ONNX does not know (com.microsoft) leave their outputs untyped; nothing is guessed.
#pragma once

#include "graph_index.h"
#include "refeval/ir.h"

namespace refeval::optimize {

// Large initializers are declared as typed inputs for the inference (their values are not
// needed), so a 600 MB model costs little. The inference runs in a forked child process, since
// libonnx 1.12 crashes on some valid models: then nothing is known (empty Inference) and the
// passes that need shapes do nothing. Never throws for a graph ONNX cannot fully infer.
// `earlier`, an inference of the model before a pass, types the outputs of nodes ONNX has no
// schema for.
Inference infer(const Model& model, const Inference* earlier = nullptr);

}  // namespace refeval::optimize
