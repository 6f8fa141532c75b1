// Transpose, DepthToSpace, SpaceToDepth: permutations over every width class, errors.
#include <algorithm>
#include <string>

#include "test_util.h"
#include "isa_util.h"

#include "refeval/threads.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

TEST_CASE("Transpose reverses the axes by default and honours perm") {
  const Tensor x = tensor<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  check_equal(run_node(node("Transpose", {"x"}, {"y"}), {x})[0], tensor<int32_t>({3, 2}, {1, 4, 2, 5, 3, 6}));
  const Tensor x3 = tensor<int8_t>({2, 1, 2}, {1, 2, 3, 4});
  check_equal(run_node(node("Transpose", {"x"}, {"y"}, {attr("perm", std::vector<int64_t>{2, 0, 1})}), {x3})[0],
              tensor<int8_t>({2, 2, 1}, {1, 3, 2, 4}));
}

TEST_CASE("Transpose moves elements of every width: string, float16, complex128, bool") {
  check_equal(run_node(node("Transpose", {"x"}, {"y"}), {tensor<std::string>({1, 2}, {"ab", "c"})})[0],
              tensor<std::string>({2, 1}, {"ab", "c"}));
  check_equal(run_node(node("Transpose", {"x"}, {"y"}), {tensor<float16>({2, 1}, {float16(1.5f), float16(-2.0f)})})[0],
              tensor<float16>({1, 2}, {float16(1.5f), float16(-2.0f)}));
  using c128 = std::complex<double>;
  check_equal(run_node(node("Transpose", {"x"}, {"y"}), {tensor<c128>({2, 2}, {{1, 1}, {2, 2}, {3, 3}, {4, 4}})})[0],
              tensor<c128>({2, 2}, {{1, 1}, {3, 3}, {2, 2}, {4, 4}}));
  check_equal(run_node(node("Transpose", {"x"}, {"y"}), {tensor<bool>({0, 3}, {})})[0], tensor<bool>({3, 0}, {}));
}

TEST_CASE("Transpose refuses a perm that is not a permutation") {
  const Tensor x = tensor<float>({2, 3}, {0, 1, 2, 3, 4, 5});
  CHECK_THROWS_WITH_AS(run_node(node("Transpose", {"x"}, {"y"}, {attr("perm", std::vector<int64_t>{0, 0})}), {x}),
                       doctest::Contains("not a permutation"), Error);
  CHECK_THROWS_AS(run_node(node("Transpose", {"x"}, {"y"}, {attr("perm", std::vector<int64_t>{0})}), {x}), Error);
  CHECK_THROWS_AS(run_node(node("Transpose", {"x"}, {"y"}, {attr("perm", std::vector<int64_t>{0, 5})}), {x}), Error);
}

TEST_CASE("DepthToSpace in both modes inverts SpaceToDepth (DCR)") {
  std::vector<float> v(16);
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i);
  const Tensor x = tensor<float>({1, 4, 2, 2}, v);
  auto d2s = run_node(node("DepthToSpace", {"x"}, {"y"}, {attr("blocksize", int64_t(2))}), {x})[0];
  CHECK(d2s.tensor().shape() == Shape{1, 1, 4, 4});
  // DCR: output (0, 0, 0, 1) comes from channel 1 (the second block column) at (0, 0).
  CHECK(d2s.tensor().data<float>()[1] == 4.0f);
  auto crd = run_node(node("DepthToSpace", {"x"}, {"y"}, {attr("blocksize", int64_t(2)), attr("mode", "CRD")}), {x})[0];
  CHECK(crd.tensor().data<float>()[1] == 4.0f);  // with one output channel CRD and DCR agree
  auto back = run_node(node("SpaceToDepth", {"x"}, {"y"}, {attr("blocksize", int64_t(2))}), {d2s})[0];
  check_equal(back, x);
  CHECK_THROWS_AS(run_node(node("DepthToSpace", {"x"}, {"y"}, {attr("blocksize", int64_t(3))}), {x}), Error);
  CHECK_THROWS_AS(run_node(node("DepthToSpace", {"x"}, {"y"}, {attr("blocksize", int64_t(2)), attr("mode", "XYZ")}), {x}), Error);
  CHECK_THROWS_AS(run_node(node("SpaceToDepth", {"x"}, {"y"}, {attr("blocksize", int64_t(3))}), {x}), Error);
}

TEST_CASE("movement ops carry sub-byte and 8-bit float elements (one per byte in memory)") {
  const Tensor a = tensor<int4>({1, 2}, {int4::wrap(-8), int4::wrap(7)});
  check_equal(run_node(node("Concat", {"a", "b"}, {"c"}, {attr("axis", int64_t(0))}), {a, a})[0],
              tensor<int4>({2, 2}, {int4::wrap(-8), int4::wrap(7), int4::wrap(-8), int4::wrap(7)}));
  check_equal(run_node(node("Transpose", {"x"}, {"y"}), {a})[0], tensor<int4>({2, 1}, {int4::wrap(-8), int4::wrap(7)}));
  const Tensor f8 = tensor<float8e4m3fn>({2}, {float8e4m3fn(1.0f), float8e4m3fn(-2.0f)});
  check_equal(run_node(node("Gather", {"x", "i"}, {"y"}), {f8, tensor<int64_t>({1}, {1})})[0], tensor<float8e4m3fn>({1}, {float8e4m3fn(-2.0f)}));
}

namespace {

// x transposed by perm with plain index arithmetic: out index -> source index, element by element.
template <class T>
std::vector<T> transpose_oracle(const std::vector<T>& x, const Shape& shape, const std::vector<int64_t>& perm) {
  const size_t r = shape.size();
  Shape out(r);
  for (size_t i = 0; i < r; ++i) out[i] = shape[size_t(perm[i])];
  std::vector<T> y(x.size());
  std::vector<int64_t> idx(r, 0);
  for (size_t flat = 0; flat < y.size(); ++flat) {
    int64_t rem = int64_t(flat), src = 0;
    for (size_t d = r; d-- > 0;) idx[d] = rem % out[d], rem /= out[d];
    for (size_t d = 0; d < r; ++d) {
      int64_t stride = 1;
      for (size_t e = size_t(perm[d]) + 1; e < r; ++e) stride *= shape[e];
      src += idx[d] * stride;
    }
    y[flat] = x[size_t(src)];
  }
  return y;
}

template <class T>
void check_all_perms(const Shape& shape, T (*make)(size_t)) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<T> x(size_t(n), T{});
  for (size_t i = 0; i < x.size(); ++i) x[i] = make(i);
  std::vector<int64_t> perm(shape.size());
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = int64_t(i);
  do {
    const Tensor y = run_node(node("Transpose", {"x"}, {"y"}, {attr("perm", perm)}), {tensor<T>(shape, x)})[0].tensor();
    const std::vector<T> want = transpose_oracle(x, shape, perm);
    bool same = true;
    for (size_t i = 0; i < want.size() && same; ++i) same = y.data<T>()[i] == want[i];
    if (!same) FAIL_CHECK("perm " << perm[0] << perm[1] << (perm.size() > 2 ? perm[2] : 9) << (perm.size() > 3 ? perm[3] : 9));
  } while (std::next_permutation(perm.begin(), perm.end()));
}

}  // namespace

TEST_CASE("Transpose in cache tiles matches index arithmetic for every perm, ragged tiles and every width") {
  // Sizes not multiples of any tile, a size-1 axis, and a 2-D case large enough to split across
  // threads (the tiled path runs when the source's last axis leaves the end). Under every
  // instruction set: with AVX2, whole tiles of 4-byte elements move as 8 x 8 register blocks.
  testing::for_each_isa([&](Isa) {
    check_all_perms<float>({3, 17, 1, 70}, [](size_t i) { return float(i) * 0.5f; });
    check_all_perms<uint8_t>({5, 67, 131}, [](size_t i) { return uint8_t(i * 7); });
    check_all_perms<double>({9, 4, 33}, [](size_t i) { return double(i) - 100.0; });
    check_all_perms<std::string>({3, 19}, [](size_t i) { return std::to_string(i); });
    check_all_perms<int32_t>({300, 517}, [](size_t i) { return int32_t(i * 2654435761u); });
    set_thread_count(2);
    check_all_perms<int32_t>({300, 517}, [](size_t i) { return int32_t(i * 2654435761u); });
    check_all_perms<float>({6, 130, 70}, [](size_t i) { return float(i); });
    check_all_perms<float>({2, 3, 37, 64}, [](size_t i) { return float(i) + 0.25f; });  // a decode step's K^T
    set_thread_count(1);
  });
}
