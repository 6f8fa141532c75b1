#include "refeval/memory_stats.h"

#include <sys/resource.h>

#include "buffer_cache.h"

namespace refeval {
namespace ops {
uint64_t packed_weight_bytes();  // ops/linalg/gemm_kernels.cc
}

AllocatorStats allocator_stats() {
  AllocatorStats s;
  s.free_list_bytes = int64_t(buffer_cache::held_bytes());
  s.packed_weight_bytes = int64_t(ops::packed_weight_bytes());
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) == 0) s.peak_rss_bytes = int64_t(usage.ru_maxrss) * 1024;  // Linux: KiB
  return s;
}

}  // namespace refeval
