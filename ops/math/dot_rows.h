// score[j] = q · keys[j] for n rows of e values: one query row's attention scores without a
// one-row matrix product (Attention-23 and the com.microsoft attention family). Each dot product
// is eight running sums in T (a vector register of floats), added pairwise, then the tail: a
// fixed order, whatever n and the thread count.
#pragma once

#include <cstdint>

namespace refeval::ops {

template <class T, class S>
void dot_rows(const T* q, const T* keys, int64_t n, int64_t e, S* score) {
  constexpr int64_t kLanes = 8;
  for (int64_t j = 0; j < n; ++j) {
    const T* k = keys + j * e;
    T acc[kLanes] = {};
    int64_t d = 0;
    for (; d + kLanes <= e; d += kLanes)
      for (int64_t l = 0; l < kLanes; ++l) acc[l] += q[d + l] * k[d + l];
    T sum = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (; d < e; ++d) sum += q[d] * k[d];
    score[j] = S(sum);
  }
}

}  // namespace refeval::ops
