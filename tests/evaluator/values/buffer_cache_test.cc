// Large tensor buffers are reused (evaluator/values/buffer_cache.h): a tensor freed and one of the
// same size allocated after it share the buffer, which comes back zeroed like a fresh one.
#include <cstdint>
#include <thread>

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

TEST_CASE("buffer cache: small tensors reuse freed buffers, zeroed unless asked not to be") {
  for (int i = 0; i < 100; ++i) {  // buffers (and reference counts) written and freed come back zeroed
    Tensor t(DType::Float, {3, 5});
    CHECK(t.data<float>()[7] == 0.f);
    t.data<float>()[7] = 9.f;
  }
  void* p = buffer_cache::take_small(100);  // 128 bytes: freed, it is the next one taken of that size
  buffer_cache::give_small(p, 100);
  CHECK(buffer_cache::take_small(128) == p);
  buffer_cache::give_small(p, 128);
  Tensor again(DType::Float, {15});
  CHECK(again.data<float>()[14] == 0.f);
  CHECK(reinterpret_cast<uintptr_t>(again.raw_data()) % 64 == 0);
  Tensor raw = Tensor::uninitialized(DType::Int64, {2, 300});  // 4800 bytes: past the small lists
  CHECK(raw.shape() == Shape{2, 300});
  CHECK(raw.dtype() == DType::Int64);
  raw.data<int64_t>()[599] = 1;
  // A small tensor made on one thread may be freed on another, and threads' lists are freed when
  // they end.
  Tensor moved;
  std::thread([&] { moved = Tensor::from_vector<float>({2}, {1, 2}); Tensor scratch(DType::Float, {40}); }).join();
  CHECK(moved.data<float>()[1] == 2.f);
  moved = Tensor();
  std::thread([] { Tensor a(DType::Float, {1000}), b(DType::Int8, {1}); }).join();
}
