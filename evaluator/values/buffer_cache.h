// Reuse of large tensor buffers (tensor.cc). A fresh buffer of megabytes comes from the system
// as untouched pages: a page fault and a page the kernel zeroes per 4 KB, on every run of a model
// (MobileNetV2's 4.8 MB Clip output took 1.0 ms, ONNX Runtime's 0.13). Freed buffers of 256 KB and
// more are kept, by exact size, for the next tensor of that size, up to 128 MB held in all; models
// run the same sizes again and again, so nearly every large allocation after the first run is a
// reuse. Thread-safe.
#pragma once

#include <cstddef>

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

}  // namespace refeval::buffer_cache
