// How many threads the evaluator may use (default 1). Today the GEMM of MatMul, Gemm and the
// convolutions (OpenBLAS) runs on them; work is split across output blocks only, never across a
// reduction, so results are bit-identical for every thread count.
#pragma once

namespace refeval {

// n >= 1, or 0 for every core of the machine.
void set_thread_count(int n);
int thread_count();

}  // namespace refeval
