// com.microsoft GatherBlockQuantized: uint8 data with 2, 4 and 8 bits (packed zero points with an
// odd block count), int4 / uint4 on any gather and quantize axes, float8 / float4 data with
// broadcast scales and whole-axis blocks, negative indices, float16 / bfloat16 scales, and errors
// (out-of-range indices among them), against a plain-loop oracle.
#include <random>

#include "refeval/compute_vector.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {

std::mt19937 rng(5);
int integer(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

struct Problem {
  Shape shape;                 // logical data shape
  std::vector<int> q;          // logical values, row-major
  Shape scale_shape;
  std::vector<double> scale;   // one per block
  std::vector<int> zero;       // one per block, or empty (then `default_zero`)
  int default_zero = 0;
  int64_t g = 0, qa = 1, block = 16;
};

int64_t product(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

// Dequantizes every element with the scale of its block, then gathers whole slices along g.
std::vector<double> oracle(const Problem& p, const std::vector<int64_t>& indices) {
  const size_t r = p.shape.size();
  std::vector<double> deq(p.q.size());
  for (size_t e = 0; e < deq.size(); ++e) {
    std::vector<int64_t> coord(r);
    int64_t rest = int64_t(e);
    for (size_t a = r; a-- > 0;) coord[a] = rest % p.shape[a], rest /= p.shape[a];
    int64_t s = 0;
    for (size_t a = 0; a < r; ++a) {
      const int64_t c = int64_t(a) == p.qa ? coord[a] / p.block : (p.scale_shape[a] == 1 ? 0 : coord[a]);
      s = s * p.scale_shape[a] + c;
    }
    const int z = p.zero.empty() ? p.default_zero : p.zero[size_t(s)];
    deq[e] = (p.q[e] - z) * p.scale[size_t(s)];
  }
  const int64_t outer = product(p.shape, 0, size_t(p.g)), n = p.shape[size_t(p.g)], inner = product(p.shape, size_t(p.g) + 1, r);
  std::vector<double> out;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t idx : indices) {
      const int64_t row = idx < 0 ? idx + n : idx;
      for (int64_t i = 0; i < inner; ++i) out.push_back(deq[size_t((o * n + row) * inner + i)]);
    }
  return out;
}

Shape out_shape(const Problem& p, const Shape& ind) {
  Shape s(p.shape.begin(), p.shape.begin() + p.g);
  s.insert(s.end(), ind.begin(), ind.end());
  s.insert(s.end(), p.shape.begin() + p.g + 1, p.shape.end());
  return s;
}

// A random problem: values in [lo, hi], scales in [0.5, 1.5) (exact in float16), zero points
// when `with_zero`.
Problem random_problem(Shape shape, int64_t g, int64_t qa, int64_t block, int lo, int hi, bool with_zero) {
  Problem p;
  p.shape = shape, p.g = g, p.qa = qa, p.block = block;
  p.scale_shape = shape;
  p.scale_shape[size_t(qa)] = (shape[size_t(qa)] + block - 1) / block;
  for (int64_t i = 0; i < shape_size(shape); ++i) p.q.push_back(integer(lo, hi));
  for (int64_t i = 0; i < shape_size(p.scale_shape); ++i) {
    p.scale.push_back(0.5 + integer(0, 255) / 256.0);
    if (with_zero) p.zero.push_back(integer(lo, hi));
  }
  return p;
}

// Packs values along the last axis, 8 / bits per byte, low-order bits first; every row padded.
Tensor pack_last(const std::vector<int>& v, Shape shape, int bits) {
  const int per = 8 / bits;
  const int64_t cols = shape.back(), bytes = (cols + per - 1) / per, rows = int64_t(v.size()) / cols;
  std::vector<uint8_t> out(size_t(rows * bytes), 0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) out[size_t(r * bytes + c / per)] |= uint8_t(v[size_t(r * cols + c)] << ((c % per) * bits));
  shape.back() = bytes;
  return tensor<uint8_t>(shape, out);
}

template <class T>
Tensor small_ints(const Shape& shape, const std::vector<int>& v) {
  std::vector<T> out;
  for (int x : v) out.push_back(T::wrap(x));
  return Tensor::from_vector<T>(shape, out);
}

template <class S>
Tensor scales_as(const Problem& p) {
  std::vector<S> v;
  for (double s : p.scale) v.push_back(S(float(s)));
  return Tensor::from_vector<S>(p.scale_shape, v);
}

Value gbq(const Values& in, std::vector<Attribute> attrs) {
  std::vector<std::string> names{"data", "indices", "scales", "zero_points"};
  names.resize(in.size());
  return run_node(node("GatherBlockQuantized", names, {"y"}, std::move(attrs), "gbq", "com.microsoft"), in)[0];
}

std::vector<Attribute> axes(const Problem& p, int64_t bits = 4) {
  return {attr("gather_axis", p.g), attr("quantize_axis", p.qa), attr("block_size", p.block), attr("bits", bits)};
}

}  // namespace

TEST_CASE("GatherBlockQuantized: hand-computed uint8 4-bit rows") {
  // Rows of 16 values, one block each. Row 0 holds 1, 2, 1, 2, ... (bytes 0x21), row 1 holds 15
  // (bytes 0xff). Default zero point 8; scales 0.5 and 2.
  std::vector<uint8_t> bytes(16, 0x21);
  for (int i = 0; i < 8; ++i) bytes[size_t(8 + i)] = 0xff;
  const Tensor data = tensor<uint8_t>({2, 8}, bytes), scales = tensor<float>({2, 1}, {0.5f, 2});
  const Value y = gbq({data, tensor<int64_t>({2}, {1, -2}), scales}, {attr("block_size", int64_t(16))});
  std::vector<float> want(16, 14);                      // (15 - 8) * 2
  for (int i = 0; i < 16; ++i) want.push_back(i % 2 ? -3 : -3.5f);  // (2 - 8) / 2, (1 - 8) / 2
  check_equal(y, tensor<float>({2, 16}, want));
}

TEST_CASE("GatherBlockQuantized uint8: 2, 4 and 8 bits, packed zero points, float16 and bfloat16 scales") {
  for (int bits : {2, 4, 8})
    for (bool zero : {false, true}) {
      CAPTURE(bits);
      CAPTURE(zero);
      // 48 columns in blocks of 16: three blocks, an odd count, so 4-bit zero points pad each row
      Problem p = random_problem({5, 48}, 0, 1, 16, 0, (1 << bits) - 1, zero);
      p.default_zero = 1 << (bits - 1);
      const std::vector<int64_t> idx{4, 0, -1, 2, -5, 4};
      Values in{pack_last(p.q, p.shape, bits), tensor<int64_t>({2, 3}, idx), scales_as<float>(p)};
      if (zero) in.push_back(pack_last(p.zero, p.scale_shape, bits));
      const Shape os = out_shape(p, {2, 3});
      check_equal(gbq(in, axes(p, bits)), from_doubles(DType::Float, os, oracle(p, idx)), {1e-6, 1e-7});
      in[2] = scales_as<float16>(p);
      check_equal(gbq(in, axes(p, bits)), from_doubles(DType::Float16, os, oracle(p, idx)), {1e-3, 1e-7});
      in[2] = scales_as<bfloat16>(p);
      check_equal(gbq(in, axes(p, bits)), from_doubles(DType::BFloat16, os, oracle(p, idx)), {1e-2, 1e-7});
    }
  // rank 3, int32 indices, 80 columns in blocks of 32 (the last one partial) with 2-bit data
  Problem p = random_problem({3, 2, 80}, 0, 2, 32, 0, 3, true);
  const std::vector<int64_t> idx{2, -3};
  check_equal(gbq({pack_last(p.q, p.shape, 2), tensor<int32_t>({2}, {2, -3}), scales_as<float>(p), pack_last(p.zero, p.scale_shape, 2)},
                  axes(p, 2)),
              from_doubles(DType::Float, out_shape(p, {2}), oracle(p, idx)), {1e-6, 1e-7});
}

TEST_CASE("GatherBlockQuantized int4 / uint4: any gather and quantize axes") {
  struct Case { Shape shape; int64_t g, qa; bool is_signed, zero; Shape ind; std::vector<int64_t> idx; };
  const Case cases[] = {
      {{5, 33}, 0, 1, true, true, {3}, {0, 4, -5}},              // partial last block along axis 1
      {{5, 32}, 0, 1, false, false, {2, 2}, {1, 2, 3, -1}},
      {{32, 6}, 1, 0, true, true, {3}, {5, 0, -6}},              // gather columns, quantize rows
      {{2, 3, 20}, 1, 2, false, true, {2}, {2, -1}},
      {{20, 3}, 0, 0, true, true, {2}, {19, 3}},                 // gather and quantize the same axis
      {{2, 17, 3}, -1, -2, false, true, {1}, {1}},               // negative axes
  };
  for (const auto& c : cases) {
    CAPTURE(shape_to_string(c.shape));
    const int64_t g = c.g < 0 ? c.g + int64_t(c.shape.size()) : c.g, qa = c.qa < 0 ? c.qa + int64_t(c.shape.size()) : c.qa;
    Problem p = random_problem(c.shape, g, qa, 16, c.is_signed ? -8 : 0, c.is_signed ? 7 : 15, c.zero);
    auto ints = [&](const Shape& s, const std::vector<int>& v) {
      return c.is_signed ? small_ints<int4>(s, v) : small_ints<uint4>(s, v);
    };
    Values in{ints(p.shape, p.q), tensor<int64_t>(c.ind, c.idx), scales_as<float16>(p)};
    if (c.zero) in.push_back(ints(p.scale_shape, p.zero));
    const std::vector<Attribute> a{attr("gather_axis", c.g), attr("quantize_axis", c.qa), attr("block_size", int64_t(16))};
    check_equal(gbq(in, a), from_doubles(DType::Float16, out_shape(p, c.ind), oracle(p, c.idx)), {1e-3, 1e-7});
  }
}

TEST_CASE("GatherBlockQuantized float8 / float4 data: whole-axis blocks and broadcast scales") {
  // float8e4m3fn integers in [-6, 6] (exact), one scale per row over the whole axis (block_size 0)
  std::vector<float8e4m3fn> f8;
  std::vector<int> q;
  for (int i = 0; i < 3 * 20; ++i) {
    q.push_back(i % 13 - 6);
    f8.push_back(float8e4m3fn(float(q.back())));
  }
  Problem p;
  p.shape = {3, 20}, p.q = q, p.scale_shape = {3, 1}, p.scale = {0.25, 0.5, 1}, p.g = 0, p.qa = 1, p.block = 20;
  const std::vector<int64_t> idx{2, 0};
  check_equal(gbq({Tensor::from_vector<float8e4m3fn>(p.shape, f8), tensor<int64_t>({2}, idx), scales_as<float>(p)},
                  {attr("block_size", int64_t(0))}),
              from_doubles(DType::Float, {2, 20}, oracle(p, idx)), {0, 0});
  // float4e2m1 values, blocks of 16 along axis 1; scales (1, 2) broadcast over the rows
  std::vector<float4e2m1> f4;
  const float grid[] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -1, -6};
  std::vector<double> vals;
  for (int i = 0; i < 4 * 32; ++i) {
    f4.push_back(float4e2m1(grid[i % 10]));
    vals.push_back(grid[i % 10]);
  }
  const Tensor scales = tensor<float>({1, 2}, {0.5f, 3});
  const Value y = gbq({Tensor::from_vector<float4e2m1>({4, 32}, f4), tensor<int32_t>({1}, {-1}), scales}, {attr("block_size", int64_t(16))});
  std::vector<float> want;
  for (int c = 0; c < 32; ++c) want.push_back(float(vals[size_t(3 * 32 + c)] * (c < 16 ? 0.5 : 3)));
  check_equal(y, tensor<float>({1, 32}, want), {0, 0});
}

TEST_CASE("GatherBlockQuantized errors name the problem") {
  const Tensor data = tensor<uint8_t>({3, 16}, std::vector<uint8_t>(48, 0x88)), scales = tensor<float>({3, 2}, std::vector<float>(6, 1));
  const Tensor ind = tensor<int64_t>({1}, {0});
  const std::vector<Attribute> b16{attr("block_size", int64_t(16))};
  CHECK_NOTHROW(gbq({data, ind, scales}, b16));
  CHECK_THROWS_WITH_AS(gbq({data, tensor<int64_t>({2}, {0, 3}), scales}, b16),
                       doctest::Contains("indices value 3 is outside [-3, 2] for gather axis 0 of size 3"), Error);
  CHECK_THROWS_WITH_AS(gbq({data, tensor<int32_t>({1}, {-4}), scales}, b16), doctest::Contains("indices value -4 is outside [-3, 2]"), Error);
  CHECK_THROWS_WITH_AS(gbq({data, tensor<float>({1}, {0}), scales}, b16), doctest::Contains("indices has element type float, expected int32 or int64"), Error);
  CHECK_THROWS_WITH_AS(gbq({data, ind, scales}, {attr("block_size", int64_t(24))}), doctest::Contains("block_size must be a power of 2 and at least 16"), Error);
  CHECK_THROWS_WITH_AS(gbq({data, ind, scales}, {attr("block_size", int64_t(0))}), doctest::Contains("block_size 0 (one block per axis) is only allowed for float8/float4"), Error);
  CHECK_THROWS_WITH_AS(gbq({data, ind, scales}, {attr("block_size", int64_t(16)), attr("bits", int64_t(3))}), doctest::Contains("bits must be 2, 4 or 8, got 3"), Error);
  CHECK_THROWS_WITH_AS(gbq({data, ind, scales}, {attr("block_size", int64_t(16)), attr("gather_axis", int64_t(1))}),
                       doctest::Contains("uint8 data needs gather_axis 0 and quantize_axis 1 (the last), got 1 and 1"), Error);
  CHECK_THROWS_WITH_AS(gbq({data, ind, scales}, {attr("block_size", int64_t(16)), attr("quantize_axis", int64_t(2))}),
                       doctest::Contains("quantize_axis 2 is outside [-2, 1] for data of rank 2"), Error);
  CHECK_THROWS_WITH_AS(gbq({data, ind, tensor<float>({3, 1}, {1, 1, 1})}, b16),
                       doctest::Contains("scales has shape (3, 1), expected (3, 2) (data (3, 32) in blocks of 16 along axis 1)"), Error);
  CHECK_THROWS_WITH_AS(gbq({data, ind, tensor<int32_t>({3, 2}, {1, 1, 1, 1, 1, 1})}, b16), doctest::Contains("int32"), Error);
  CHECK_THROWS_WITH_AS(gbq({data, ind, scales, tensor<uint8_t>({3, 2}, std::vector<uint8_t>(6, 0))}, b16),
                       doctest::Contains("zero_points has shape (3, 2), expected (3, 1)"), Error);
  CHECK_THROWS_WITH_AS(gbq({data, ind, scales, tensor<int8_t>({3, 1}, {0, 0, 0})}, b16),
                       doctest::Contains("zero_points has element type int8, expected uint8"), Error);
  const Tensor i4 = small_ints<int4>({3, 16}, std::vector<int>(48, 1));
  CHECK_THROWS_WITH_AS(gbq({i4, ind, tensor<float>({3, 1}, {1, 1, 1})}, {attr("block_size", int64_t(16)), attr("bits", int64_t(8))}),
                       doctest::Contains("bits must be 4 for int4 data, got 8"), Error);
  const Tensor f8 = Tensor::from_vector<float8e4m3fn>({3, 16}, std::vector<float8e4m3fn>(48, float8e4m3fn(1.0f)));
  CHECK_THROWS_WITH_AS(gbq({f8, ind, tensor<float>({3, 1}, {1, 1, 1}), tensor<float8e4m3fn>({3, 1}, std::vector<float8e4m3fn>(3))}, b16),
                       doctest::Contains("zero_points must be absent for float8/float4 data"), Error);
  CHECK_THROWS_WITH_AS(gbq({tensor<float>({3, 16}, std::vector<float>(48, 1)), ind, tensor<float>({3, 1}, {1, 1, 1})}, b16),
                       doctest::Contains("data has element type float, expected int4, uint4, uint8"), Error);
}

TEST_CASE("GatherBlockQuantized refusals: one exact line each") {
  const std::string A = "node 'gbq' (com.microsoft:GatherBlockQuantized): ";
  const Tensor ind = tensor<int64_t>({1}, {0});
  const std::vector<Attribute> b16{attr("block_size", int64_t(16))};
  // uint8 data of rank 1 (gather and quantize axes would be the same), int4 data of rank 0, an axis out of range, block size 8
  CHECK_THROWS_WITH_AS(gbq({tensor<uint8_t>({16}, std::vector<uint8_t>(16, 0)), ind, tensor<float>({2}, {1, 1})},
                           {attr("block_size", int64_t(16)), attr("quantize_axis", int64_t(0))}),
                       (A + "uint8 data must have rank >= 2 (gather and quantize axes differ)").c_str(), Error);
  CHECK_THROWS_WITH_AS(gbq({small_ints<int4>({}, std::vector<int>{1}), ind, tensor<float>({1}, {1})}, b16), (A + "data must have rank >= 1").c_str(),
                       Error);
  CHECK_THROWS_WITH_AS(gbq({small_ints<int4>({2, 16}, std::vector<int>(32, 1)), ind, tensor<float>({2, 1}, {1, 1})},
                           {attr("block_size", int64_t(16)), attr("gather_axis", int64_t(-3))}),
                       (A + "gather_axis -3 is outside [-2, 1] for data of rank 2").c_str(), Error);
  CHECK_THROWS_WITH_AS(gbq({tensor<uint8_t>({2, 8}, std::vector<uint8_t>(16, 0)), ind, tensor<float>({2, 1}, {1, 1})}, {attr("block_size", int64_t(8))}),
                       (A + "block_size must be a power of 2 and at least 16 (or 0 for float8/float4 data), got 8").c_str(), Error);
}
