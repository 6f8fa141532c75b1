// Run-time limits that keep a bad or hostile model from hanging the evaluator. (The memory cap,
// which every tensor allocation checks, lives with the tensor: refeval/tensor.h.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace refeval {

// The most iterations one Loop node may run (0: no limit). A trip count above it, or a
// condition-driven loop that reaches it, is an ErrorKind::Resource error naming the node.
inline constexpr uint64_t kDefaultLoopIterationCap = 100'000'000;
void set_loop_iteration_cap(uint64_t iterations);
uint64_t loop_iteration_cap();

// Scratch memory an operator sizes from input data (a window length, a DFT length, a resize
// target) goes through the memory cap as tensors do: an ErrorKind::Resource error naming `what`
// when `count` elements of `element_size` bytes are negative, overflow 64 bits or exceed the cap.
// Operators allocate with scratch_vector; check_scratch guards an allocation made elsewhere.
void check_scratch(int64_t count, size_t element_size, const std::string& what);

// `count` copies of `fill`, checked by check_scratch first:
//   std::vector<double> w = scratch_vector<double>(size, "the window");
template <class T>
std::vector<T> scratch_vector(int64_t count, const std::string& what, const T& fill = T()) {
  check_scratch(count, sizeof(T), what);
  return std::vector<T>(size_t(count), fill);
}

}  // namespace refeval
