// Large tensor buffers are reused (evaluator/values/buffer_cache.h): a tensor freed and one of the
// same size allocated after it share the buffer, which comes back zeroed like a fresh one.
#include <doctest/doctest.h>

#include "../../../evaluator/values/buffer_cache.h"
#include "refeval/tensor.h"

using namespace refeval;

TEST_CASE("buffer cache: a freed large buffer serves the next tensor of its size, zeroed") {
  const Shape large{1, 96, 112, 112};  // 4.8 MB of float, MobileNetV2's largest activation
  const void* first = nullptr;
  {
    Tensor t(DType::Float, large);
    first = t.raw_data();
    t.data<float>()[12345] = 7.f;
  }
  CHECK(buffer_cache::held_bytes() >= size_t(shape_size(large)) * 4);
  Tensor again(DType::Float, large);
  CHECK(again.raw_data() == first);
  CHECK(again.data<float>()[12345] == 0.f);
  Tensor other(DType::Float, {1, 96, 112, 111});  // another size: never handed a buffer of the wrong size
  CHECK(other.raw_data() != first);
}

TEST_CASE("buffer cache: small buffers are left to malloc") {
  const size_t before = buffer_cache::held_bytes();
  { Tensor small(DType::Float, {1000}); }
  CHECK(buffer_cache::held_bytes() == before);
}
