// How many threads the evaluator may use (default 1): one pool (evaluator/run/threads.cc) runs
// the GEMM of MatMul, Gemm and the convolutions, depthwise convolutions and large elementwise
// work. Work is split across outputs only, never across a reduction, so results are bit-identical
// for every thread count and whichever thread runs a part.
#pragma once

#include <cstdint>
#include <functional>

namespace refeval {

// n >= 1, or 0 for every core of the machine.
void set_thread_count(int n);
int thread_count();

// body(begin, end) over [0, n): when n >= 2 * grain, in chunks of at least `grain` (a few per
// thread) that the threads claim as they finish, else in one call on this thread. For work whose every element is computed on its own
// (elementwise ops, rows of a softmax): the split never changes a bit.
// Work too small to split calls body directly, without wrapping it in a std::function (an
// allocation per elementwise node).
void parallel_for_split(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body);
template <class F>
void parallel_for(int64_t n, int64_t grain, F&& body) {
  if (n / (grain > 1 ? grain : 1) < 2 || thread_count() <= 1) {
    if (n > 0) body(int64_t(0), n);
    return;
  }
  parallel_for_split(n, grain, body);
}

}  // namespace refeval
