// Run-time limits that keep a bad or hostile model from hanging the evaluator. (The memory cap,
// which every tensor allocation checks, lives with the tensor: refeval/tensor.h.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace refeval {

// The most iterations one Loop node may run (0: no limit). A trip count above it, or a
// condition-driven loop that reaches it, is an ErrorKind::Resource error naming the node.
inline constexpr uint64_t kDefaultLoopIterationCap = 100'000'000;
void set_loop_iteration_cap(uint64_t iterations);
uint64_t loop_iteration_cap();

// Scratch memory an operator sizes from input data (a window length, a DFT length) before any
// output tensor exists: an ErrorKind::Resource error naming `what` when `count` elements of
// `element_size` bytes exceed the memory cap or 64 bits, so the cap guards it as it guards tensors.
void check_scratch(int64_t count, size_t element_size, const std::string& what);

}  // namespace refeval
