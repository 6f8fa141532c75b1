// What refeval's own allocations hold besides the values of a run, for memory profiles
// (`refeval profile --memory`): buffers kept for reuse and the weights' packed copies.
#pragma once

#include <cstdint>

namespace refeval {

struct AllocatorStats {
  int64_t free_list_bytes = 0;      // freed large buffers kept for the next tensor of their size
  int64_t packed_weight_bytes = 0;  // MatMul/Gemm weights laid out again for the kernels (a second copy)
  int64_t peak_rss_bytes = 0;       // the process's peak resident set so far
};

AllocatorStats allocator_stats();

}  // namespace refeval
