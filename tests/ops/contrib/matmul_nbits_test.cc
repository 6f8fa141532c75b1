// com.microsoft MatMulNBits against an oracle written here (bits read from B one by one, weights
// dequantized and multiplied in double): bits 2/4/8, block sizes 16 to 128, partial last blocks,
// 2-D and 1-D scales, packed / unpacked / absent zero points, bias, g_idx, float16 and bfloat16,
// 1-D and 3-D A; bit-identical results across thread counts and batch sizes; the accuracy_level 4
// emulation against a hand-written int8 oracle and against ONNX Runtime's own outputs; errors.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <tuple>
#include <random>

#include <fmt/format.h>

#include "refeval/builder.h"
#include "refeval/compute_vector.h"
#include "refeval/evaluator.h"
#include "refeval/model_io.h"
#include "refeval/numerics.h"
#include "refeval/threads.h"
#include "test_util.h"
#include "isa_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {

enum class Zp { None, Packed, Unpacked };

// A MatMulNBits problem with random weights; `q` and `zp` hold the quantized integers the tensors
// were packed from, so the oracle can check its own unpacking.
struct Problem {
  Shape a_shape;
  int64_t K = 0, N = 0, bits = 4, bs = 32;
  Zp zp = Zp::None;
  bool bias = false, g_idx = false, flat = false;  // flat: 1-D scales and zero points
  DType dtype = DType::Float;
  int64_t level = 0;
  uint32_t seed = 1;

  int64_t kb() const { return (K + bs - 1) / bs; }
};

struct Inputs {
  Tensor a, b, scales, zero_points, g_idx, bias;
};

// `dtype` tensor from doubles, each value rounded once.
Tensor typed(DType dtype, Shape shape, const std::vector<double>& v) { return from_doubles(dtype, std::move(shape), v); }

Inputs make_inputs(const Problem& p) {
  std::mt19937 rng(p.seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  const int64_t kb = p.kb(), blob = p.bs * p.bits / 8, levels = int64_t(1) << p.bits;
  Inputs in;
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < p.a_shape.size(); ++d) rows *= p.a_shape[d];
  std::vector<double> a(size_t(rows * p.K));
  for (auto& v : a) v = unit(rng);
  in.a = typed(p.dtype, p.a_shape, a);
  // B: every value of every block (also beyond K in a partial block) drawn, packed low bits first.
  std::vector<uint8_t> b(size_t(p.N * kb * blob), 0);
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t blk = 0; blk < kb; ++blk)
      for (int64_t i = 0; i < p.bs; ++i) {
        const int64_t q = int64_t(rng() % uint32_t(levels)), bit = i * p.bits;
        b[size_t((n * kb + blk) * blob + bit / 8)] |= uint8_t(q << (bit % 8));
      }
  in.b = tensor<uint8_t>({p.N, kb, blob}, b);
  const Shape pshape = p.flat ? Shape{p.N * kb} : Shape{p.N, kb};
  std::vector<double> scales(size_t(p.N * kb));
  for (auto& s : scales) s = 0.01 + 0.05 * (unit(rng) + 1.0);
  in.scales = typed(p.dtype, pshape, scales);
  if (p.zp == Zp::Packed) {
    const int64_t row = (kb * p.bits + 7) / 8;
    std::vector<uint8_t> zp(size_t(p.N * row), 0);
    for (int64_t n = 0; n < p.N; ++n)
      for (int64_t blk = 0; blk < kb; ++blk) {
        const int64_t z = int64_t(rng() % uint32_t(levels)), bit = blk * p.bits;
        zp[size_t(n * row + bit / 8)] |= uint8_t(z << (bit % 8));
      }
    in.zero_points = tensor<uint8_t>(p.flat ? Shape{p.N * row} : Shape{p.N, row}, zp);
  } else if (p.zp == Zp::Unpacked) {
    std::vector<double> zp(size_t(p.N * kb));
    for (auto& z : zp) z = (unit(rng) + 1.0) * double(levels) / 2;  // fractional zero points
    in.zero_points = typed(p.dtype, pshape, zp);
  }
  if (p.g_idx) {
    std::vector<int32_t> g(size_t(p.K));
    for (auto& v : g) v = int32_t(rng() % uint32_t(kb));
    in.g_idx = tensor<int32_t>({p.K}, g);
  }
  if (p.bias) {
    std::vector<double> bias(size_t(p.N));
    for (auto& v : bias) v = unit(rng);
    in.bias = typed(p.dtype, {p.N}, bias);
  }
  return in;
}

Node nbits_node(const Problem& p, bool with_zp, bool with_g, bool with_bias) {
  std::vector<std::string> names = {"A", "B", "scales", with_zp ? "zp" : "", with_g ? "g_idx" : "", with_bias ? "bias" : ""};
  while (names.back().empty()) names.pop_back();
  return node("MatMulNBits", names, {"Y"},
              {attr("K", p.K), attr("N", p.N), attr("bits", p.bits), attr("block_size", p.bs), attr("accuracy_level", p.level)}, "mm",
              "com.microsoft");
}

Tensor run(const Problem& p, const Inputs& in) {
  const bool zp = in.zero_points.defined(), g = in.g_idx.defined(), bias = in.bias.defined();
  return run_node(nbits_node(p, zp, g, bias), {in.a, in.b, in.scales, zp ? Value(in.zero_points) : Value(),
                                               g ? Value(in.g_idx) : Value(), bias ? Value(in.bias) : Value()}, 1)[0]
      .tensor();
}

// Bit `bit` onwards of a byte array, `bits` wide: the oracle reads B as one bit stream.
int64_t read_bits(const Tensor& t, int64_t bit, int64_t bits) {
  const uint8_t* p = t.data<uint8_t>();
  int64_t v = 0;
  for (int64_t j = 0; j < bits; ++j) v |= int64_t((p[(bit + j) / 8] >> ((bit + j) % 8)) & 1) << j;
  return v;
}

// W[n][k] in double: B's k-th value of column n, minus its block's zero point, times its scale.
std::vector<double> oracle_weights(const Problem& p, const Inputs& in) {
  const int64_t kb = p.kb(), row = (kb * p.bits + 7) / 8;
  const std::vector<double> scales = to_doubles(in.scales);
  const std::vector<double> zp = p.zp == Zp::Unpacked ? to_doubles(in.zero_points) : std::vector<double>();
  std::vector<double> w(size_t(p.N * p.K));
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t k = 0; k < p.K; ++k) {
      const int64_t blk = p.g_idx ? in.g_idx.data<int32_t>()[k] : k / p.bs;
      const double q = double(read_bits(in.b, ((n * kb + k / p.bs) * p.bs + k % p.bs) * p.bits, p.bits));
      double z = double(int64_t(1) << (p.bits - 1));
      if (p.zp == Zp::Packed) z = double(read_bits(in.zero_points, (n * row * 8) + blk * p.bits, p.bits));
      if (p.zp == Zp::Unpacked) z = zp[size_t(n * kb + blk)];
      w[size_t(n * p.K + k)] = (q - z) * scales[size_t(n * kb + blk)];
    }
  return w;
}

Tensor oracle(const Problem& p, const Inputs& in) {
  const std::vector<double> a = to_doubles(in.a), w = oracle_weights(p, in);
  const std::vector<double> bias = p.bias ? to_doubles(in.bias) : std::vector<double>(size_t(p.N), 0.0);
  const int64_t M = int64_t(a.size()) / p.K;
  std::vector<double> y(size_t(M * p.N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < p.N; ++n) {
      double s = bias[size_t(n)];
      for (int64_t k = 0; k < p.K; ++k) s += a[size_t(m * p.K + k)] * w[size_t(n * p.K + k)];
      y[size_t(m * p.N + n)] = s;
    }
  Shape shape = p.a_shape;
  shape.back() = p.N;
  return typed(p.dtype, shape, y);
}

// float accumulates in float; float16 and bfloat16 round the result once more.
Tolerance tolerance(DType t) {
  if (t == DType::Float16) return {2e-3, 2e-3};
  if (t == DType::BFloat16) return {1e-2, 1e-2};
  return {1e-5, 1e-5};
}

void check_against_oracle(const Problem& p) {
  const Inputs in = make_inputs(p);
  check_equal(run(p, in), oracle(p, in), tolerance(p.dtype));
}

bool bit_equal(const Tensor& x, const Tensor& y) {
  return x.dtype() == y.dtype() && x.shape() == y.shape() && std::memcmp(x.raw_data(), y.raw_data(), x.nbytes()) == 0;
}

// Sets the emulation for one scope.
struct Emulation {
  explicit Emulation(bool on) { set_emulate_accuracy_level(on); }
  ~Emulation() { set_emulate_accuracy_level(false); }
};

}  // namespace

TEST_CASE("MatMulNBits: every width and block size, partial last blocks, each kind of zero point") {
  testing::for_each_isa([&](Isa) {
    const Zp kinds[] = {Zp::None, Zp::Packed, Zp::Unpacked};
    int i = 0;
    for (int64_t bits : {2, 4, 8})
      for (int64_t bs : {16, 32, 64, 128})
        for (int64_t M : {1, 3, 7}) {  // 1 and 3 rows unpack into registers, 7 go through the float tile
          Problem p;
          p.bits = bits, p.bs = bs, p.K = 2 * bs + 24, p.N = 11, p.a_shape = {M, p.K};
          p.zp = kinds[i % 3], p.flat = i % 2 == 1, p.bias = i % 4 == 0, p.seed = uint32_t(100 + i++);
          CAPTURE(bits);
          CAPTURE(bs);
          CAPTURE(M);
          CAPTURE(int(p.zp));
          check_against_oracle(p);
        }
  });
}

TEST_CASE("MatMulNBits: shapes, types, g_idx and bias") {
  testing::for_each_isa([&](Isa) {
    struct Case { const char* what; Problem p; };
    auto problem = [](Shape a, int64_t K, int64_t N, int64_t bits, int64_t bs, Zp zp, bool bias, bool g, DType t) {
      Problem p;
      p.a_shape = std::move(a), p.K = K, p.N = N, p.bits = bits, p.bs = bs, p.zp = zp, p.bias = bias, p.g_idx = g, p.dtype = t;
      return p;
    };
    const Case cases[] = {
        {"1-D A gives 1-D Y", problem({48}, 48, 6, 4, 16, Zp::Packed, true, false, DType::Float)},
        {"3-D A, batch dims flattened into rows", problem({2, 3, 40}, 40, 9, 4, 32, Zp::Packed, true, false, DType::Float)},
        {"no rows", problem({0, 32}, 32, 4, 4, 16, Zp::Packed, true, false, DType::Float)},
        {"K below one block", problem({2, 10}, 10, 5, 8, 64, Zp::None, false, false, DType::Float)},
        {"K a multiple of 8 but not of the block", problem({1, 72}, 72, 17, 2, 32, Zp::Packed, false, false, DType::Float)},
        {"g_idx, 4-bit, packed zero points", problem({1, 70}, 70, 7, 4, 32, Zp::Packed, false, true, DType::Float)},
        {"g_idx, 2-bit, unpacked zero points, 6 rows", problem({6, 70}, 70, 7, 2, 16, Zp::Unpacked, true, true, DType::Float)},
        {"g_idx, 8-bit, default zero point", problem({2, 64}, 64, 3, 8, 16, Zp::None, false, true, DType::Float)},
        {"float16, 3-D, packed zero points, bias", problem({2, 2, 96}, 96, 10, 4, 32, Zp::Packed, true, false, DType::Float16)},
        {"float16, unpacked zero points, 6 rows", problem({6, 50}, 50, 5, 4, 16, Zp::Unpacked, false, false, DType::Float16)},
        {"bfloat16, 8-bit, unpacked zero points", problem({4, 64}, 64, 6, 8, 16, Zp::Unpacked, true, false, DType::BFloat16)},
        {"bfloat16, 2-bit, one row", problem({1, 128}, 128, 9, 2, 64, Zp::None, false, false, DType::BFloat16)},
    };
    for (const auto& c : cases) {
      CAPTURE(c.what);
      check_against_oracle(c.p);
    }
  });
}

TEST_CASE("MatMulNBits: dequantization is exact, (q - zp) * scale per element") {
  // One 4-bit block of 16 for one output: q = 0..15, zero point 3, scale 0.5, A = e_k picks W[0][k].
  std::vector<uint8_t> b(8);
  for (int i = 0; i < 16; ++i) b[size_t(i / 2)] |= uint8_t(i << (4 * (i % 2)));
  std::vector<float> a(16 * 16, 0.0f), expected(16);
  for (int k = 0; k < 16; ++k) a[size_t(k * 16 + k)] = 1.0f, expected[size_t(k)] = float(k - 3) * 0.5f;
  const Node n = node("MatMulNBits", {"A", "B", "scales", "zp"}, {"Y"},
                      {attr("K", 16), attr("N", 1), attr("bits", 4), attr("block_size", 16)}, "mm", "com.microsoft");
  const Tensor y = run_node(n, {tensor<float>({16, 16}, a), tensor<uint8_t>({1, 1, 8}, b), tensor<float>({1, 1}, {0.5f}),
                                tensor<uint8_t>({1, 1}, {3})}, 1)[0].tensor();
  check_equal(y, tensor<float>({16, 1}, expected), {0, 0});
}

TEST_CASE("MatMulNBits: bit-identical across thread counts, batch sizes and instruction sets") {
  // Large enough that two threads split the columns, for the register paths (1 to 4 rows; blocks
  // of 32 and 64) and the float-tile path (17, 14 and 9 rows: full tiles and edge tiles; 601
  // columns: an edge tile of columns; blocks of 16, 2-bit weights); K = 260 ends in a partial
  // group of 4. A row computed alone equals the same row within the batch, and every instruction
  // set gives the first one's bits.
  std::map<std::tuple<int64_t, int64_t, int64_t>, Tensor> first_isa;
  testing::for_each_isa([&](Isa isa) {
    for (int64_t bits : {2, 4, 8})
      for (int64_t bs : {16, 32, 64}) {
        Problem p;
        p.bits = bits, p.bs = bs, p.K = 260, p.N = 601, p.zp = Zp::Packed, p.bias = true, p.a_shape = {17, p.K}, p.seed = 7;
        const Inputs in = make_inputs(p);
        const float* a = in.a.data<float>();
        Tensor batch;
        for (int64_t M : {17, 14, 9, 4, 3, 2, 1}) {
          Problem q = p;
          q.a_shape = {M, p.K};
          Inputs rows = in;
          rows.a = tensor<float>({M, p.K}, std::vector<float>(a + (17 - M) * p.K, a + 17 * p.K));  // the last M rows
          set_thread_count(1);
          const Tensor one = run(q, rows);
          set_thread_count(2);
          const Tensor two = run(q, rows);
          set_thread_count(1);
          CAPTURE(isa_name(isa));
          CAPTURE(bits);
          CAPTURE(bs);
          CAPTURE(M);
          CHECK(bit_equal(one, two));
          if (M == 17) batch = one;
          CHECK(std::memcmp(one.data<float>(), batch.data<float>() + (17 - M) * p.N, size_t(M * p.N) * sizeof(float)) == 0);
          const auto [seen, inserted] = first_isa.emplace(std::tuple{bits, bs, M}, one);
          if (!inserted) CHECK(bit_equal(one, seen->second));
        }
      }
  });
}

namespace {

// ONNX Runtime's accuracy_level 4 algorithm, written from its description: A quantized per
// (row, block) with scale max|a| / 127 and round-half-even of a * (127 / max|a|) in float; integer
// dot products with (q - zp); their sum weighted by float(scale_a * scale_b), here in double.
Tensor int8_oracle(const Problem& p, const Inputs& in) {
  const std::vector<double> a = to_doubles(in.a), scales = to_doubles(in.scales);
  const std::vector<double> bias = p.bias ? to_doubles(in.bias) : std::vector<double>(size_t(p.N), 0.0);
  const int64_t M = int64_t(a.size()) / p.K, kb = p.kb(), row = (kb * p.bits + 7) / 8;
  std::vector<double> y(size_t(M * p.N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t blk = 0; blk < kb; ++blk) {
      const int64_t k0 = blk * p.bs, k1 = std::min(p.K, k0 + p.bs);
      float max_abs = 0;
      for (int64_t k = k0; k < k1; ++k) max_abs = std::max(max_abs, std::abs(float(a[size_t(m * p.K + k)])));
      const float scale_a = max_abs / 127.0f, inverse = max_abs == 0 ? 0.0f : 127.0f / max_abs;
      for (int64_t n = 0; n < p.N; ++n) {
        const int64_t z = p.zp == Zp::Packed ? read_bits(in.zero_points, n * row * 8 + blk * p.bits, p.bits) : int64_t(1) << (p.bits - 1);
        int64_t dot = 0;
        for (int64_t k = k0; k < k1; ++k) {
          const int64_t qa = int64_t(std::nearbyint(float(a[size_t(m * p.K + k)]) * inverse));
          dot += qa * (read_bits(in.b, ((n * kb + blk) * p.bs + k - k0) * p.bits, p.bits) - z);
        }
        y[size_t(m * p.N + n)] += double(dot) * double(scale_a * float(scales[size_t(n * kb + blk)]));
      }
    }
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < p.N; ++n) y[size_t(m * p.N + n)] += bias[size_t(n)];
  Shape shape = p.a_shape;
  shape.back() = p.N;
  return typed(p.dtype, shape, y);
}

double max_diff(const Tensor& x, const Tensor& y) {
  const std::vector<double> a = to_doubles(x), b = to_doubles(y);
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

}  // namespace

TEST_CASE("MatMulNBits accuracy_level 4 emulation: ORT's int8 algorithm, and only where ORT runs it") {
  testing::for_each_isa([&](Isa) {
    struct Case { int64_t bits, bs, M, K; Zp zp; bool bias; DType t; };
    const Case cases[] = {{4, 32, 1, 96, Zp::None, false, DType::Float},   {4, 16, 5, 72, Zp::Packed, true, DType::Float},
                          {8, 64, 3, 200, Zp::Packed, false, DType::Float}, {2, 32, 2, 100, Zp::Packed, true, DType::Float},
                          {4, 128, 2, 300, Zp::None, true, DType::Float16}, {8, 16, 1, 40, Zp::None, false, DType::BFloat16}};
    for (const auto& c : cases) {
      Problem p;
      p.bits = c.bits, p.bs = c.bs, p.K = c.K, p.N = 13, p.a_shape = {c.M, c.K}, p.zp = c.zp, p.bias = c.bias, p.dtype = c.t;
      p.level = 4, p.seed = uint32_t(c.bits * 1000 + c.bs);
      const Inputs in = make_inputs(p);
      CAPTURE(c.bits);
      CAPTURE(c.bs);
      CAPTURE(int(c.t));
      const Tensor want = int8_oracle(p, in), exact = oracle(p, in);
      Tensor emulated;
      {
        Emulation on(true);
        emulated = run(p, in);
      }
      // The emulation follows the int8 algorithm to float rounding; the exact math does not (float16
      // and bfloat16 round both to a coarse grid: there the emulation need only be the closer one).
      check_equal(emulated, want, tolerance(c.t));
      if (c.t == DType::Float) CHECK(max_diff(exact, want) > 100 * tolerance(c.t).atol);
      CHECK(max_diff(emulated, want) < max_diff(exact, want));
      check_equal(run(p, in), exact, tolerance(c.t));  // without the flag: the exact math
    }
    {  // no rows: an empty Y, as the exact path gives
      Problem p;
      p.bits = 4, p.bs = 32, p.K = 64, p.N = 13, p.a_shape = {0, 64}, p.level = 4;
      Emulation on(true);
      check_equal(run(p, make_inputs(p)), tensor<float>({0, 13}, {}), {0, 0});
    }
    // Round half to even: block max 127 gives scale 1, so A's values are rounded as they are.
    std::vector<float> a(16, 0.0f);
    a[0] = 127, a[1] = 2.5f, a[2] = 3.5f, a[3] = -2.5f, a[4] = 0.5f, a[5] = 1.5f;
    const Node n = node("MatMulNBits", {"A", "B", "scales"}, {"Y"},
                        {attr("K", 16), attr("N", 1), attr("bits", 8), attr("block_size", 16), attr("accuracy_level", 4)}, "mm",
                        "com.microsoft");
    const Values w = {tensor<float>({1, 16}, a), tensor<uint8_t>({1, 1, 16}, std::vector<uint8_t>(16, 129)), tensor<float>({1, 1}, {1.0f})};
    Emulation on(true);
    // 127 + 2 + 4 - 2 + 0 + 2 (half away from zero would give 134; the exact sum is 132.5)
    check_equal(run_node(n, w, 1)[0], tensor<float>({1, 1}, {133.0f}), {0, 0});
    // Where ORT 1.30 computes in float even at level 4, so does the emulation.
    struct Exact { const char* what; int64_t bits, bs; Zp zp; bool g; };
    const Exact exact_cases[] = {{"g_idx", 4, 32, Zp::None, true},
                                 {"unpacked zero points", 4, 32, Zp::Unpacked, false},
                                 {"2-bit in blocks of 16", 2, 16, Zp::None, false},
                                 {"2-bit in blocks of 256", 2, 256, Zp::Packed, false}};
    for (const auto& c : exact_cases) {
      CAPTURE(c.what);
      Problem p;
      p.bits = c.bits, p.bs = c.bs, p.K = 2 * c.bs, p.N = 5, p.a_shape = {2, p.K}, p.zp = c.zp, p.g_idx = c.g, p.level = 4;
      const Inputs in = make_inputs(p);
      check_equal(run(p, in), oracle(p, in), tolerance(p.dtype));
    }
  });
}

// The node in a model whose weights are initializers (a constant B: laid out once per node for
// the int8 kernel), run on A.
Tensor run_constant(const Problem& p, const Inputs& in) {
  std::vector<Initializer> inits = {{"B", in.b}, {"scales", in.scales}};
  if (in.zero_points.defined()) inits.push_back({"zp", in.zero_points});
  if (in.bias.defined()) inits.push_back({"bias", in.bias});
  const Model m = build::model(build::graph("nbits", {nbits_node(p, in.zero_points.defined(), false, in.bias.defined())},
                                            {build::tensor_info("A", p.dtype, {p.a_shape[0], p.K})}, {build::tensor_info("Y", p.dtype, {p.a_shape[0], p.N})},
                                            std::move(inits)),
                               {{"", 17}, {"com.microsoft", 1}});
  ReferenceEvaluator ev(m);
  return ev.run({}, {{"A", in.a}})[0].tensor();
}

TEST_CASE("MatMulNBits accuracy_level 4 emulation: the same bits on every instruction set, B constant or fed") {
  // 4-bit weights take a dot-product kernel on CPUs with AVX-512 VNNI (B laid out once when it is
  // constant, per call when fed); the portable code is its definition. Blocks 16 to 256, K ending
  // in a partial block, 13 and 37 columns (edge tiles of 16), 1 to 9 rows, with and without zero
  // points and bias, float and float16 A, one and two threads.
  Emulation on(true);
  std::map<std::tuple<int64_t, int, int64_t>, Tensor> first_isa;
  testing::for_each_isa([&](Isa isa) {
    for (int64_t bs : {16, 32, 64, 128, 256})
      for (int variant = 0; variant < 4; ++variant) {
        Problem p;
        p.bits = 4, p.bs = bs, p.K = variant % 2 ? 2 * bs : bs + 36, p.N = variant < 2 ? 13 : 37, p.level = 4;
        p.zp = variant % 2 ? Zp::Packed : Zp::None, p.bias = variant != 1, p.dtype = variant == 3 ? DType::Float16 : DType::Float;
        p.seed = uint32_t(bs * 10 + variant);
        for (int64_t M : {1, 2, 3, 4, 5, 9}) {
          p.a_shape = {M, p.K};
          const Inputs in = make_inputs(p);
          CAPTURE(isa_name(isa));
          CAPTURE(bs);
          CAPTURE(variant);
          CAPTURE(M);
          const Tensor fed = run(p, in), constant = run_constant(p, in);
          CHECK(bit_equal(fed, constant));
          set_thread_count(2);
          CHECK(bit_equal(run_constant(p, in), constant));
          set_thread_count(1);
          check_equal(constant, int8_oracle(p, in), tolerance(p.dtype));
          const auto [seen, inserted] = first_isa.emplace(std::tuple{bs, variant, M}, constant);
          if (!inserted) CHECK(bit_equal(constant, seen->second));
        }
      }
  });
}

TEST_CASE("MatMulNBits accuracy_level 4 fixtures: the emulation is much closer to ONNX Runtime than the exact math") {
  namespace fs = std::filesystem;
  const fs::path suite = fs::path(REFEVAL_SOURCE_DIR) / "tests/data/ort/matmul_nbits_level4";
  int cases = 0;
  for (const auto& entry : fs::directory_iterator(suite)) {
    if (!fs::exists(entry.path() / "model.onnx")) continue;
    CAPTURE(entry.path().filename().string());
    ++cases;
    const fs::path data = entry.path() / "test_data_set_0";
    auto ev = ReferenceEvaluator(load_model((entry.path() / "model.onnx").string()));
    std::map<std::string, Value> feeds;
    const auto names = ev.input_names();
    for (size_t i = 0; i < names.size(); ++i) feeds[names[i]] = read_tensor_pb((data / fmt::format("input_{}.pb", i)).string());
    const Tensor ort = read_tensor_pb((data / "output_0.pb").string());
    const Tensor exact = ev.run({}, feeds)[0].tensor();
    Tensor emulated;
    {
      Emulation on(true);
      emulated = ev.run({}, feeds)[0].tensor();
    }
    double scale = 1.0;  // the outputs' magnitude
    for (double v : to_doubles(ort)) scale = std::max(scale, std::abs(v));
    const double off_exact = max_diff(exact, ort), off_emulated = max_diff(emulated, ort);
    INFO(fmt::format("max |ORT - exact| = {}, max |ORT - emulated| = {}", off_exact, off_emulated));
    if (entry.path().filename().string().ends_with("_exact")) {
      // float zero points, g_idx, 2-bit blocks of 16: ORT does not take its int8 path, nor does the emulation
      CHECK(max_diff(emulated, exact) == 0);
      CHECK(off_exact < 1e-4 * scale);
      continue;
    }
    CHECK(off_exact > 1e-3 * scale);
    CHECK(off_emulated < off_exact / 10);
  }
  CHECK(cases >= 4);
}

TEST_CASE("MatMulNBits errors name the problem") {
  Problem p;
  p.K = 40, p.N = 3, p.bits = 4, p.bs = 16, p.a_shape = {2, 40}, p.zp = Zp::Packed;
  const Inputs in = make_inputs(p);
  auto fails = [&](const Values& v, const char* message, bool zp = true, bool g = false, bool bias = false) {
    CHECK_THROWS_WITH_AS(run_node(nbits_node(p, zp, g, bias), v, 1), doctest::Contains(message), Error);
  };
  fails({tensor<float>({2, 39}, std::vector<float>(78)), in.b, in.scales, in.zero_points}, "A has shape (2, 39), expected a last dimension of K = 40");
  fails({in.a, tensor<uint8_t>({3, 3, 4}, std::vector<uint8_t>(36)), in.scales, in.zero_points}, "B has shape (3, 3, 4), expected (3, 3, 8)");
  fails({in.a, tensor<int8_t>({3, 3, 8}, std::vector<int8_t>(72)), in.scales, in.zero_points}, "B has element type int8, expected uint8");
  fails({in.a, in.b, tensor<float>({3, 2}, std::vector<float>(6)), in.zero_points}, "scales has shape (3, 2), expected (3, 3) or (9,)");
  fails({in.a, in.b, tensor<double>({3, 3}, std::vector<double>(9)), in.zero_points}, "scales has element type double, expected float");
  fails({in.a, in.b, in.scales, tensor<uint8_t>({3, 1}, {0, 0, 0})}, "zero_points has shape (3, 1), expected (3, 2) or (6,)");
  fails({in.a, in.b, in.scales, tensor<float>({3, 2}, std::vector<float>(6))}, "zero_points has shape (3, 2), expected (3, 3) or (9,)");
  fails({in.a, in.b, in.scales, tensor<int32_t>({3, 3}, std::vector<int32_t>(9))}, "zero_points has element type int32, expected uint8 or A's type float");
  fails({in.a, in.b, in.scales, Value(), tensor<int32_t>({40}, std::vector<int32_t>(40, 3))}, "g_idx[0] = 3 is not a block index in [0, 3)", false, true);
  fails({in.a, in.b, in.scales, Value(), tensor<int32_t>({39}, std::vector<int32_t>(39))}, "g_idx has shape (39,), expected (40,) or (48,)", false, true);
  fails({in.a, in.b, in.scales, Value(), Value(), tensor<float>({4}, std::vector<float>(4))}, "bias has shape (4,), expected (3,)", false, false, true);
  fails({tensor<double>({2, 40}, std::vector<double>(80)), in.b, in.scales, in.zero_points}, "double");
  // Attributes, checked when the node is planned.
  auto bad_attr = [](std::vector<Attribute> attrs, const char* message) {
    const Node n = node("MatMulNBits", {"A", "B", "scales"}, {"Y"}, std::move(attrs), "mm", "com.microsoft");
    CHECK_THROWS_WITH_AS(ReferenceEvaluator::from_node(n, {{"", 21}, {"com.microsoft", 1}}), doctest::Contains(message), Error);
  };
  const Attribute K = attr("K", 32), N = attr("N", 2), bits = attr("bits", 4), bs = attr("block_size", 16);
  bad_attr({K, N, attr("bits", 3), bs}, "bits must be 2, 4 or 8, got 3");
  bad_attr({K, N, bits, attr("block_size", 24)}, "block_size must be a power of two >= 16, got 24");
  bad_attr({K, N, bits, attr("block_size", 8)}, "block_size must be a power of two >= 16, got 8");
  bad_attr({K, N, bits, bs, attr("accuracy_level", 5)}, "accuracy_level must be 0 to 4, got 5");
  bad_attr({K, N, bits, bs, attr("weight_prepacked", 1)}, "weight_prepacked = 1");
  bad_attr({attr("K", 0), N, bits, bs}, "K and N must be positive");
  bad_attr({N, bits, bs}, "K");
}

TEST_CASE("MatMulNBits: float16 and bfloat16 A through every kernel path, with and without bias") {
  // The narrow types widen A, the scales and the bias to float and take the float kernels of
  // their own instantiation: one row (fused row kernel), 3 rows (fused up to 4), 7 (the float
  // tile); blocks of 16 (quarter blocks) and of 32 and 128 (whole groups); K odd or not.
  testing::for_each_isa([&](Isa) {
    const Zp kinds[] = {Zp::None, Zp::Packed, Zp::Unpacked};
    int i = 0;
    for (DType t : {DType::Float16, DType::BFloat16})
      for (int64_t bits : {2, 4, 8})
        for (int64_t bs : {16, 32, 128})
          for (int64_t M : {1, 3, 7}) {
            Problem p;
            p.dtype = t, p.bits = bits, p.bs = bs, p.K = 2 * bs + (i % 2 ? 9 : 32), p.N = 13, p.a_shape = {M, p.K};
            p.zp = kinds[i % 3], p.bias = (i / 3) % 2 == 0, p.seed = uint32_t(500 + i++);
            CAPTURE(dtype_short_name(t));
            CAPTURE(bits);
            CAPTURE(bs);
            CAPTURE(M);
            CAPTURE(p.K);
            CAPTURE(int(p.zp));
            CAPTURE(p.bias);
            check_against_oracle(p);
          }
  });
}

TEST_CASE("MatMulNBits: g_idx padded to whole blocks, and a negative block index refused") {
  Problem p;
  p.K = 40, p.N = 3, p.bits = 4, p.bs = 16, p.a_shape = {2, 40}, p.g_idx = true;  // 3 blocks: g_idx may hold 48 entries
  Inputs in = make_inputs(p);
  std::vector<int32_t> padded(in.g_idx.data<int32_t>(), in.g_idx.data<int32_t>() + 40);
  padded.resize(48, 2);
  in.g_idx = tensor<int32_t>({48}, padded);
  check_equal(run(p, in), oracle(p, in), tolerance(p.dtype));
  padded[5] = -1;
  in.g_idx = tensor<int32_t>({48}, padded);
  CHECK_THROWS_WITH_AS(run(p, in), "node 'mm' (com.microsoft:MatMulNBits): g_idx[5] = -1 is not a block index in [0, 3)", Error);
}

TEST_CASE("MatMulNBits: more blocks per column than the AVX2 row tiles gather (257 of 32) take the float tile") {
  // 3 rows over K = 8224 (2 to 4 rows fuse unless a column has more than 256 blocks). Each output
  // is 32 chains of 257 fused multiply-adds, reduced in 5 levels, plus the bias: 263 roundings of
  // at most 2^-24 of the magnitudes summed, sum |a_k w_nk| + |bias_n|, bound its distance from the
  // double oracle (about 1e-8 of that sum here: 1.3e-5 of the outputs).
  testing::for_each_isa([&](Isa) {
    for (int64_t bits : {4, 8}) {
      Problem p;
      p.bits = bits, p.bs = 32, p.K = 257 * 32, p.N = 5, p.a_shape = {3, p.K}, p.zp = Zp::Packed, p.bias = true, p.seed = 700 + uint32_t(bits);
      CAPTURE(bits);
      const Inputs in = make_inputs(p);
      const std::vector<double> got = to_doubles(run(p, in)), want = to_doubles(oracle(p, in));
      const std::vector<double> a = to_doubles(in.a), w = oracle_weights(p, in), bias = to_doubles(in.bias);
      for (int64_t m = 0; m < 3; ++m)
        for (int64_t n = 0; n < p.N; ++n) {
          double magnitude = std::abs(bias[size_t(n)]);
          for (int64_t k = 0; k < p.K; ++k) magnitude += std::abs(a[size_t(m * p.K + k)] * w[size_t(n * p.K + k)]);
          CAPTURE(m);
          CAPTURE(n);
          CHECK(std::abs(got[size_t(m * p.N + n)] - want[size_t(m * p.N + n)]) <= 263 * std::ldexp(1.0, -24) * magnitude);
        }
    }
  });
}
