#include "refeval/limits.h"

#include <atomic>

#include <fmt/format.h>

#include "refeval/error.h"
#include "refeval/tensor.h"

namespace refeval {
namespace {
std::atomic<uint64_t> g_loop_cap{kDefaultLoopIterationCap};
}  // namespace

void set_loop_iteration_cap(uint64_t iterations) { g_loop_cap = iterations; }
uint64_t loop_iteration_cap() { return g_loop_cap; }

void check_scratch(int64_t count, size_t element_size, const std::string& what) {
  uint64_t bytes = 0;
  if (count < 0 || __builtin_mul_overflow(uint64_t(count), uint64_t(element_size), &bytes))
    throw Error(ErrorKind::Resource, fmt::format("{}: {} elements do not fit in memory", what, count));
  const uint64_t cap = memory_cap();
  if (cap && bytes > cap)
    throw Error(ErrorKind::Resource,
                fmt::format("{}: {} elements ({} bytes) exceed the memory cap of {} bytes", what, count, bytes, cap));
}

}  // namespace refeval
