// Floating tensors as compute vectors (refeval/compute_vector.h), as operators read them.
#include <doctest/doctest.h>

#include "refeval/compute_vector.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;

TEST_CASE("to_compute widens any floating type; tensor_from_compute rounds once to the storage type") {
  const Tensor h = Tensor::from_vector<float16>({3}, {float16(1.5f), float16(-2.0f), float16(0.1f)});
  const std::vector<double> d = to_doubles(h);
  CHECK(d == std::vector<double>{1.5, -2.0, double(float(float16(0.1f)))});
  CHECK(to_compute<float>(h)[1] == -2.0f);
  const Tensor back = tensor_from_compute(DType::Float16, {3}, d);
  CHECK(to_doubles(back) == d);  // float16 -> double -> float16 is exact
  check_equal(from_doubles(DType::Double, {}, {0.25}), tensor<double>({}, {0.25}));
  CHECK_THROWS_WITH_AS(to_doubles(tensor<int64_t>({1}, {1})), doctest::Contains("int64"), Error);
}

TEST_CASE("expand_to broadcasts a parameter unidirectionally, dims aligned right") {
  // (3,) to (2, 3): rows repeat; (2, 1) to (2, 3): columns repeat.
  CHECK(expand_to(tensor<float>({3}, {1, 2, 3}), {2, 3}, "gamma") == std::vector<double>{1, 2, 3, 1, 2, 3});
  CHECK(expand_to(tensor<float>({2, 1}, {1, 2}), {2, 3}, "gamma") == std::vector<double>{1, 1, 1, 2, 2, 2});
  CHECK(expand_to<float>(tensor<double>({}, {7}), {2}, "s") == std::vector<float>{7, 7});
  CHECK_THROWS_WITH_AS(expand_to(tensor<float>({2}, {1, 2}), {2, 3}, "gamma"),
                       doctest::Contains("gamma of shape (2,) does not broadcast to (2, 3)"), Error);
  CHECK_THROWS_WITH_AS(expand_to(tensor<float>({1, 1, 3}, {1, 2, 3}), {2, 3}, "beta"), doctest::Contains("beta"), Error);
}

TEST_CASE("broadcast_strides gives 0 on broadcast axes") {
  CHECK(broadcast_strides({2, 1, 4}, {3, 2, 5, 4}, "mask") == std::vector<int64_t>{0, 4, 0, 1});
}
