// Vectors whose storage starts on a cache line (64 bytes), for the packed operands that kernels
// read with 256- and 512-bit loads. std::vector's storage is only 16-byte aligned: a 64-byte load
// from it straddles two cache lines three times in four, and whether it does changed with the
// heap's layout, so a product's time moved with unrelated allocations (MatMulInteger 128 x 768 x
// 768 took 0.52 or 0.88 ms depending on which command-line options were given).
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>
#include <vector>

namespace refeval {

template <class T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr size_t kAlignment = 64;
  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}
  T* allocate(size_t n) {
    const size_t bytes = (n * sizeof(T) + kAlignment - 1) / kAlignment * kAlignment;
    if (void* p = std::aligned_alloc(kAlignment, bytes ? bytes : kAlignment)) return static_cast<T*>(p);
    throw std::bad_alloc();
  }
  void deallocate(T* p, size_t) { std::free(p); }
  template <class U>
  bool operator==(const CacheLineAllocator<U>&) const { return true; }
};

template <class T>
using AlignedVector = std::vector<T, CacheLineAllocator<T>>;

}  // namespace refeval
