// Reuse of large tensor buffers (tensor.cc). A fresh buffer of megabytes comes from the system
// as untouched pages: a page fault and a page the kernel zeroes per 4 KB, on every run of a model
// (MobileNetV2's 4.8 MB Clip output took 1.0 ms, ONNX Runtime's 0.13). Freed buffers of 256 KB and
// more are kept, by exact size, for the next tensor of that size, up to 128 MB held in all; models
// run the same sizes again and again, so nearly every large allocation after the first run is a
// reuse. Thread-safe.
#pragma once

#include <cstddef>
#include <new>

namespace refeval::buffer_cache {

// Buffers smaller than this go straight to malloc/free.
constexpr size_t kMinBytes = size_t(256) << 10;

// A kept buffer of exactly `bytes` (as passed to give), or nullptr.
void* take(size_t bytes);
// Keeps `p` (allocated with std::aligned_alloc for `bytes`) for reuse, or frees it when the cache
// is full.
void give(void* p, size_t bytes);
// Bytes held now (for tests).
size_t held_bytes();
// Frees every kept buffer: after a session let go of weights (whose sizes runs do not reuse).
void free_held();

// Small buffers (up to kMaxSmallBytes, in steps of 64 bytes, 64-byte aligned): a tensor of a few
// elements and its reference count, made and freed for nearly every node of a small model.
// glibc's aligned_alloc skips its per-thread cache, so every such tensor cost a trip through
// malloc's bins (40% of a chain of tiny Adds). Freed ones wait in per-thread lists (at most
// kSmallPerSize of each size) for the next of their size; a buffer may be freed on another
// thread than the one that took it.
constexpr size_t kMaxSmallBytes = 4096, kSmallPerSize = 32;
void* take_small(size_t bytes);         // never null (throws std::bad_alloc)
void give_small(void* p, size_t bytes);  // bytes as passed to take_small

// A std allocator over take_small / give_small, for shared_ptr control blocks.
template <class T>
struct SmallAllocator {
  using value_type = T;
  SmallAllocator() = default;
  template <class U> SmallAllocator(const SmallAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(take_small(n * sizeof(T))); }
  void deallocate(T* p, size_t n) { give_small(p, n * sizeof(T)); }
  template <class U> bool operator==(const SmallAllocator<U>&) const { return true; }
};

}  // namespace refeval::buffer_cache
