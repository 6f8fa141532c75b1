#include "refeval/tensor.h"

#include <sys/mman.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "buffer_cache.h"

namespace refeval {
namespace {

constexpr size_t kHugePage = size_t(2) << 20, kHugePageThreshold = size_t(2) << 20;
std::atomic<uint64_t> g_memory_cap{0};
constexpr size_t kAlignment = 64;  // cache line; also enough for Eigen's vectorised loads
}  // namespace

void set_memory_cap(uint64_t bytes) { g_memory_cap = bytes; }
uint64_t memory_cap() { return g_memory_cap; }

int64_t shape_size(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw Error(ErrorKind::Runtime, fmt::format("negative dimension in shape {}", shape_to_string(shape)));
    if (d != 0 && n > INT64_MAX / d)
      throw Error(ErrorKind::Resource, fmt::format("shape {} has more elements than fit in 64 bits", shape_to_string(shape)));
    n *= d;
  }
  return n;
}

std::string shape_to_string(const Shape& shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  return fmt::format("({})", fmt::join(shape, ", "));
}

Tensor::Tensor(DType dtype, Shape shape) : Tensor(dtype, std::move(shape), true) {}

Tensor::Tensor(DType dtype, Shape shape, bool zeroed) : dtype_(dtype), shape_(std::move(shape)) {
  if (dtype == DType::Undefined) fail_runtime("cannot allocate a tensor of undefined element type");
  size_ = shape_size(shape_);
  const size_t elem = dtype_size(dtype);
  if (size_ > 0 && uint64_t(size_) > UINT64_MAX / elem / 2)
    throw Error(ErrorKind::Resource, fmt::format("tensor of shape {} is too large to allocate", shape_to_string(shape_)));
  const uint64_t bytes = uint64_t(size_) * elem;
  const uint64_t cap = g_memory_cap;
  if (cap && bytes > cap)
    throw Error(ErrorKind::Resource, fmt::format("tensor of {} {} ({} bytes) exceeds the memory cap of {} bytes",
                             dtype_short_name(dtype), shape_to_string(shape_), bytes, cap));
  if (dtype == DType::String) {
    auto* strings = new std::string[size_ > 0 ? size_ : 1];
    storage_ = std::shared_ptr<void>(strings, [](void* p) { delete[] static_cast<std::string*>(p); });
  } else {
    // Tensors of several megabytes (weights, large activations) sit on 2 MB pages where the
    // kernel offers them (transparent huge pages on madvise): a GEMM streaming a weight matrix
    // row by row touches a new 4 KB page per row otherwise, and TLB misses dominate.
    // Only the 2 MB-aligned interior is advised, so no memory is spent on alignment.
    const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    if (rounded <= buffer_cache::kMaxSmallBytes) {  // buffer and reference count from the small lists
      const size_t held = rounded ? rounded : kAlignment;
      void* p = buffer_cache::take_small(held);
      if (zeroed) std::memset(p, 0, bytes);
      storage_ = std::shared_ptr<void>(p, [held](void* q) { buffer_cache::give_small(q, held); },
                                       buffer_cache::SmallAllocator<char>());
      data_ = storage_.get();
      return;
    }
    const bool reusable = rounded >= buffer_cache::kMinBytes;
    void* p = reusable ? buffer_cache::take(rounded) : nullptr;
    if (!p) {
      p = std::aligned_alloc(kAlignment, rounded ? rounded : kAlignment);
      if (!p) throw Error(ErrorKind::Resource, fmt::format("out of memory allocating {} bytes for a tensor of shape {}", bytes, shape_to_string(shape_)));
      if (bytes >= kHugePageThreshold) {
        const uintptr_t begin = (uintptr_t(p) + kHugePage - 1) / kHugePage * kHugePage;
        const uintptr_t end = (uintptr_t(p) + rounded) / kHugePage * kHugePage;
        if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
      }
    }
    if (zeroed) std::memset(p, 0, bytes);
    if (reusable) storage_ = std::shared_ptr<void>(p, [rounded](void* q) { buffer_cache::give(q, rounded); });
    else storage_ = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  }
  data_ = storage_.get();
}

Tensor Tensor::view(DType dtype, Shape shape, std::shared_ptr<void> owner, void* data) {
  if (dtype == DType::String || dtype == DType::Undefined) fail_runtime("a tensor view needs a fixed-size element type");
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.size_ = shape_size(t.shape_);
  t.storage_ = std::move(owner);
  t.data_ = data;
  return t;
}

Tensor Tensor::reshaped(Shape shape) const {
  if (shape_size(shape) != size_)
    fail_runtime(fmt::format("cannot reshape {} elements to {}", size_, shape_to_string(shape)));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::clone() const {
  if (!defined()) return {};
  Tensor t(dtype_, shape_);
  if (dtype_ == DType::String) {
    const auto* src = static_cast<const std::string*>(data_);
    auto* dst = static_cast<std::string*>(t.data_);
    for (int64_t i = 0; i < size_; ++i) dst[i] = src[i];
  } else {
    std::memcpy(t.data_, data_, nbytes());
  }
  return t;
}

void Tensor::check_type(DType wanted) const {
  if (wanted != dtype_)
    fail_runtime(fmt::format("tensor holds {} but was read as {}", dtype_short_name(dtype_), dtype_short_name(wanted)));
}

}  // namespace refeval
