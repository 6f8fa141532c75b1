// Process-wide choices about operator numerics, set once like the thread count (refeval/threads.h):
// the CLI's global options and the Python module's setters reach every evaluator of the process.
#pragma once

namespace refeval {

// Off by default: an operator whose `accuracy_level` only permits a runtime to compute with less
// precision computes the exact math. On (--emulate-accuracy-level): com.microsoft MatMulNBits
// nodes with accuracy_level 4 reproduce ONNX Runtime's CPU int8 path (A quantized to int8 per
// block), so refeval's outputs can be compared with ORT's on such models.
void set_emulate_accuracy_level(bool on);
bool emulate_accuracy_level();

}  // namespace refeval
