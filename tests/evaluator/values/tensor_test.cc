// A tensor refuses what it cannot hold: a bad shape, an undefined or mismatched element type, a
// size beyond memory. Each refusal is an Error of the kind the CLI maps to its exit code.
#include "refeval/tensor.h"
#include "refeval/value.h"
#include "test_util.h"

using namespace refeval;
using refeval::testing::tensor;

TEST_CASE("a shape with a negative dimension or more elements than 64 bits hold is refused") {
  CHECK_THROWS_WITH_AS(Tensor(DType::Float, {2, -3}), "negative dimension in shape (2, -3)", Error);
  CHECK_THROWS_WITH_AS(shape_size({int64_t(1) << 40, int64_t(1) << 40}),
                       "shape (1099511627776, 1099511627776) has more elements than fit in 64 bits", Error);
}

TEST_CASE("a tensor needs a defined element type, and a view a fixed-size one") {
  CHECK_THROWS_WITH_AS(Tensor(DType::Undefined, {2}), "cannot allocate a tensor of undefined element type", Error);
  CHECK_THROWS_WITH_AS(Tensor::view(DType::String, {1}, nullptr, nullptr), "a tensor view needs a fixed-size element type", Error);
}

TEST_CASE("the bytes of a tensor beyond the address space, the memory cap or malloc are a resource error") {
  // 2^61 doubles are 2^64 bytes: not even a size_t.
  try {
    Tensor(DType::Double, {int64_t(1) << 61});
    FAIL("allocated 2^64 bytes");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::Resource);
    CHECK(std::string(e.what()) == "tensor of shape (2305843009213693952,) is too large to allocate");
  }
  const uint64_t cap = memory_cap();
  set_memory_cap(1000);
  CHECK_THROWS_WITH_AS(Tensor(DType::Float, {500}), "tensor of float (500,) (2000 bytes) exceeds the memory cap of 1000 bytes", Error);
  // No cap: 2^59 bytes (512 PiB) is asked of the allocator, which has no such memory.
  set_memory_cap(0);
  CHECK_THROWS_WITH_AS(Tensor(DType::UInt8, {int64_t(1) << 59}),
                       "out of memory allocating 576460752303423488 bytes for a tensor of shape (576460752303423488,)", Error);
  set_memory_cap(cap);
}

TEST_CASE("elements read as another type, values that do not fill the shape, a reshape to another count") {
  const Tensor t = tensor<float>({2, 2}, {1, 2, 3, 4});
  CHECK_THROWS_WITH_AS(t.data<int32_t>(), "tensor holds float but was read as int32", Error);
  CHECK_THROWS_WITH_AS(Tensor::from_vector<float>({2, 2}, {1, 2, 3}), "Tensor::from_vector: 3 values for shape (2, 2)", Error);
  CHECK_THROWS_WITH_AS(t.reshaped({3}), "cannot reshape 4 elements to (3,)", Error);
}

TEST_CASE("a value read as another kind names both") {
  const Value v(tensor<float>({1}, {1}));
  CHECK_THROWS_WITH_AS(v.sequence(), "expected a sequence value but got tensor", Error);
  CHECK_THROWS_WITH_AS(Value().tensor(), "expected a tensor value but got absent", Error);
}
