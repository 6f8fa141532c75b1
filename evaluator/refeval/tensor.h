// Tensor: a dense, row-major, n-dimensional array of one element type. A Tensor is a cheap handle:
// copies share storage, and operators never write into their inputs, so sharing is safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "refeval/dtype.h"
#include "refeval/error.h"

namespace refeval {

using Shape = std::vector<int64_t>;

// Number of elements; throws if a dimension is negative or the product overflows.
int64_t shape_size(const Shape& shape);
std::string shape_to_string(const Shape& shape);  // numpy style: "(2, 3)", "(3,)", "()"

// Every allocation of tensor memory is checked against this cap (bytes; 0 means no cap), so a
// declared shape that is absurdly large is refused with an error instead of crashing.
void set_memory_cap(uint64_t bytes);
uint64_t memory_cap();

class Tensor {
 public:
  Tensor() = default;  // an undefined tensor (dtype Undefined); only `defined()` is meaningful
  // Allocates zero-initialised storage (empty strings for STRING).
  Tensor(DType dtype, Shape shape);
  // Storage left unwritten (its bytes are whatever the allocator gives; STRING is still
  // initialised): for outputs and scratch a kernel overwrites in full, where zeroing megabytes
  // first costs a pass over memory of its own.
  static Tensor uninitialized(DType dtype, Shape shape) { return Tensor(dtype, std::move(shape), false); }

  template <class T>
  static Tensor from_vector(Shape shape, const std::vector<T>& values);
  // A tensor over bytes it does not allocate (a mapped model file's, refeval/file_backed.h):
  // `owner` keeps them alive. Any element type but STRING.
  static Tensor view(DType dtype, Shape shape, std::shared_ptr<void> owner, void* data);
  template <class T>
  static Tensor scalar(T value) { return from_vector<T>({}, {value}); }

  bool defined() const { return dtype_ != DType::Undefined; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  size_t rank() const { return shape_.size(); }
  int64_t dim(size_t i) const { return shape_[i]; }
  int64_t size() const { return size_; }
  size_t nbytes() const { return size_t(size_) * dtype_size(dtype_); }

  // Typed access; throws if T is not this tensor's storage type.
  template <class T> T* data() { check_type(dtype_of<T>); return static_cast<T*>(data_); }
  template <class T> const T* data() const { check_type(dtype_of<T>); return static_cast<const T*>(data_); }
  template <class T> std::vector<T> to_vector() const {
    const T* p = data<T>(); return std::vector<T>(p, p + size_);
  }
  void* raw_data() { return data_; }
  const void* raw_data() const { return data_; }

  // A view with another shape of the same size; shares storage.
  Tensor reshaped(Shape shape) const;
  // A deep copy with its own storage.
  Tensor clone() const;

 private:
  Tensor(DType dtype, Shape shape, bool zeroed);
  void check_type(DType wanted) const;
  DType dtype_ = DType::Undefined;
  Shape shape_;
  int64_t size_ = 0;
  std::shared_ptr<void> storage_;
  void* data_ = nullptr;
};

template <class T>
Tensor Tensor::from_vector(Shape shape, const std::vector<T>& values) {
  Tensor t(dtype_of<T>, std::move(shape));
  if (int64_t(values.size()) != t.size())
    fail_runtime("Tensor::from_vector: " + std::to_string(values.size()) +
                 " values for shape " + shape_to_string(t.shape()));
  T* out = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return t;
}

}  // namespace refeval
