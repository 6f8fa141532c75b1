#include "refeval/limits.h"

#include <atomic>

namespace refeval {
namespace {
std::atomic<uint64_t> g_loop_cap{kDefaultLoopIterationCap};
}  // namespace

void set_loop_iteration_cap(uint64_t iterations) { g_loop_cap = iterations; }
uint64_t loop_iteration_cap() { return g_loop_cap; }

}  // namespace refeval
