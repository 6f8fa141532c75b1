// Conv's panel path (ops/conv/conv_panels.cc: the im2col matrix gathered panel by panel from a
// zero-bordered copy of the image into the strips of refeval's in-order kernels, AVX2 or
// AVX-512): products large enough for it, over strides 1 (contiguous loads), 2 (shuffled pairs)
// and 3-4 (gathers), dilations, asymmetric pads, 1-, 2- and 3-D, groups, batches, more than 256
// rows of col (several passes), rows of C not a multiple of the tiles' and output rows narrower
// than a strip. Checked against a plain double loop of the definition, bit for bit against each
// element's chain of fused multiply-adds in order (the kernels' contract), bit for bit across
// thread counts, and without AVX-512 bit for bit against im2col + gemm() (conv_by_gemm).
#include <cmath>
#include <cstring>
#include <random>

#include "../../../ops/conv/conv_common.h"
#include "../../../ops/linalg/linalg_common.h"
#include "refeval/threads.h"
#include "test_util.h"
#include "isa_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {

struct PanelCase {
  const char* what;
  Shape x, w;  // x [N, C, in...], w [M, C/group, k...]
  std::vector<int64_t> strides, dilations, pads;
  int64_t group = 1;
};

Shape output_shape(const PanelCase& c) {
  const size_t D = c.x.size() - 2;
  Shape ys{c.x[0], c.w[0]};
  for (size_t d = 0; d < D; ++d)
    ys.push_back((c.x[d + 2] + c.pads[d] + c.pads[d + D] - ((c.w[d + 2] - 1) * c.dilations[d] + 1)) / c.strides[d] + 1);
  return ys;
}

// The convolution by its definition: for each output Y[n, m, o...] in turn, s = start(m), then
// s = step(s, W[m, c', k], X[n, c, o * s - pad + k * d]) over c in m's group and taps k in order,
// X reading 0 outside its bounds.
template <class S, class Start, class Step>
std::vector<S> convolve(const PanelCase& c, const std::vector<float>& x, const std::vector<float>& w, Start start,
                        Step step) {
  const size_t D = c.x.size() - 2;
  const int64_t N = c.x[0], C = c.x[1], M = c.w[0], Cg = c.w[1], Mg = M / c.group;
  const Shape ys = output_shape(c);
  const Shape out(ys.begin() + 2, ys.end()), in(c.x.begin() + 2, c.x.end()), ker(c.w.begin() + 2, c.w.end());
  const int64_t out_n = shape_size(out), in_n = shape_size(in), k_n = shape_size(ker);
  std::vector<S> y(size_t(N * M * out_n));
  std::vector<int64_t> o(D), k(D);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t p = 0; p < out_n; ++p) {
        for (int64_t r = p, d = int64_t(D) - 1; d >= 0; --d) o[size_t(d)] = r % out[size_t(d)], r /= out[size_t(d)];
        S s = start(m);
        for (int64_t cg = 0; cg < Cg; ++cg)
          for (int64_t t = 0; t < k_n; ++t) {
            for (int64_t r = t, d = int64_t(D) - 1; d >= 0; --d) k[size_t(d)] = r % ker[size_t(d)], r /= ker[size_t(d)];
            int64_t off = 0;
            bool inside = true;
            for (size_t d = 0; d < D; ++d) {
              const int64_t i = o[d] * c.strides[d] - c.pads[d] + k[d] * c.dilations[d];
              inside = inside && i >= 0 && i < in[d];
              off = off * in[d] + i;
            }
            const float xv = inside ? x[size_t((n * C + (m / Mg) * Cg + cg) * in_n + off)] : 0.f;
            s = step(s, w[size_t((m * Cg + cg) * k_n + t)], xv);
          }
        y[size_t((n * M + m) * out_n + p)] = s;
      }
  return y;
}

// The oracle: Y = B + W * X in double.
std::vector<double> oracle(const PanelCase& c, const std::vector<float>& x, const std::vector<float>& w,
                           const std::vector<float>& b) {
  return convolve<double>(c, x, w, [&](int64_t m) { return double(b[size_t(m)]); },
                          [](double s, float wv, float xv) { return s + double(xv) * double(wv); });
}

// The kernels' contract, without bias: each output is one float chain s = fma(w, x, s) from 0 over
// (channel, tap) in order, a tap in the padding reading 0.
std::vector<float> fma_chains(const PanelCase& c, const std::vector<float>& x, const std::vector<float>& w) {
  return convolve<float>(c, x, w, [](int64_t) { return 0.f; },
                         [](float s, float wv, float xv) { return std::fma(wv, xv, s); });
}

std::vector<float> uniform(int64_t n, std::mt19937& gen) {
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& e : v) e = d(gen);
  return v;
}

ops::ConvGeometry geometry(const PanelCase& c, const Shape& ys) {
  const size_t D = c.x.size() - 2;
  ops::ConvGeometry g;
  g.N = c.x[0], g.C = c.x[1], g.M = c.w[0], g.group = c.group;
  g.in.assign(c.x.begin() + 2, c.x.end());
  g.kernel.assign(c.w.begin() + 2, c.w.end());
  g.out.assign(ys.begin() + 2, ys.end());
  g.strides = c.strides, g.dilations = c.dilations;
  g.pad_begin.assign(c.pads.begin(), c.pads.begin() + int64_t(D));
  g.pad_end.assign(c.pads.begin() + int64_t(D), c.pads.end());
  return g;
}

const PanelCase kCases[] = {
    {"3x3 stride 1, pad 1, batch 2, output rows of 37 (strips span rows)", {2, 8, 23, 37}, {13, 8, 3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
    {"stride 2 x 3, dilation 1 x 2, asymmetric pads, 2 groups", {1, 12, 80, 66}, {32, 6, 3, 2}, {2, 3}, {1, 2}, {2, 0, 1, 2}, 2},
    {"1-D, dilation 3", {1, 5, 400}, {33, 5, 5}, {1}, {3}, {4, 1}},
    {"3-D, strides 1 2 1, dilations 1 1 2", {1, 4, 9, 10, 11}, {20, 4, 3, 3, 3}, {1, 2, 1}, {1, 1, 2}, {1, 0, 1, 1, 2, 0}},
    {"7x7 stride 2 stem, pad 3", {1, 3, 64, 64}, {16, 3, 7, 7}, {2, 2}, {1, 1}, {3, 3, 3, 3}},
    {"7x7 output (one position past 3 strips), 300 channels out", {1, 16, 7, 7}, {300, 16, 3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
    {"stride 4 (gathered), pads 1 and 2", {1, 8, 90, 90}, {24, 8, 4, 4}, {4, 4}, {1, 1}, {1, 1, 2, 2}},
    {"360 rows of col (two passes over k), output rows of 17", {1, 40, 15, 17}, {10, 40, 3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
    {"1x1, unit strides, no padding, 2 images, 25 rows (on AVX-512: X in strips)", {2, 64, 19, 21}, {25, 64, 1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}},
    {"1x1 stride 2 (a ResNet downsample)", {1, 64, 28, 28}, {128, 64, 1, 1}, {2, 2}, {1, 1}, {0, 0, 0, 0}},
    {"one output column (width 1): every strip spans 16 rows", {1, 12, 70, 3}, {40, 12, 3, 3}, {1, 1}, {1, 1}, {1, 0, 1, 0}},
};

}  // namespace

TEST_CASE("Conv float panel path: the oracle's values, conv_by_gemm's bits, the same bits on 1 and 2 threads") {
  testing::for_each_isa([&](Isa) {
    std::mt19937 gen(31);
    for (const PanelCase& c : kCases) {
      const std::string what = c.what;
      CAPTURE(what);
      const auto x = uniform(shape_size(c.x), gen), w = uniform(shape_size(c.w), gen), b = uniform(c.w[0], gen);
      const Shape ys = output_shape(c);
      const auto expected = oracle(c, x, w, b);
      const ops::ConvGeometry g = geometry(c, ys);
      const int64_t K = shape_size(g.kernel) * g.C / g.group;
      REQUIRE(g.M / g.group * g.out_size() * K >= (int64_t(1) << 18));  // large enough for the in-order kernel
      const std::vector<Attribute> attrs{attr("strides", c.strides), attr("dilations", c.dilations), attr("pads", c.pads),
                                         attr("group", c.group)};
      std::vector<Tensor> outs;
      for (int threads : {1, 2}) {
        set_thread_count(threads);
        outs.push_back(run_node(node("Conv", {"x", "w", "b"}, {"y"}, attrs),
                                {tensor<float>(c.x, x), tensor<float>(c.w, w), tensor<float>({c.w[0]}, b)})[0].tensor());
      }
      set_thread_count(1);
      std::vector<float> expected_f(expected.begin(), expected.end());
      check_equal(outs[0], tensor<float>(ys, expected_f), Tolerance{1e-4, 1e-4});
      CHECK(std::memcmp(outs[0].raw_data(), outs[1].raw_data(), outs[0].nbytes()) == 0);

      std::vector<float> by_panels(size_t(shape_size(ys))), by_gemm(by_panels.size());
      const bool panels = ops::conv_by_panels(g, x.data(), w.data(), b.data(), by_panels.data());
      // Every case is large enough; CPUs without AVX2 take conv_by_gemm, as do 1x1 unit-stride
      // unpadded ones without AVX-512 (gemm() reads X in place on the in-order AVX2 kernel).
      const bool direct = shape_size(g.kernel) == 1 && c.strides == std::vector<int64_t>(c.strides.size(), 1) &&
                          c.pads == std::vector<int64_t>(c.pads.size(), 0);
      CHECK(panels == (ops::in_order_avx512_suits() || (ops::in_order_avx2_suits() && !direct)));
      if (!panels) continue;
      // Each output is its chain, then plus the bias (added by the thread that computed it).
      std::vector<float> chains = fma_chains(c, x, w);
      const int64_t out_n = g.out_size();
      for (size_t i = 0; i < chains.size(); ++i) chains[i] += b[size_t(int64_t(i) / out_n % g.M)];
      CHECK(std::memcmp(by_panels.data(), chains.data(), chains.size() * sizeof(float)) == 0);
      if (!ops::in_order_avx2_suits()) continue;  // with AVX-512 gemm() of many rows is OpenBLAS's
      ops::conv_by_gemm(g, x.data(), w.data(), by_gemm.data(),
                        [](int64_t M, int64_t N, int64_t K, const float* a, const float* bm, float* cm) {
                          ops::gemm(false, false, M, N, K, a, bm, cm, false);
                        });
      for (size_t i = 0; i < by_gemm.size(); ++i) by_gemm[i] += b[size_t(int64_t(i) / out_n % g.M)];
      CHECK(std::memcmp(by_panels.data(), by_gemm.data(), by_gemm.size() * sizeof(float)) == 0);
    }
  });
}

TEST_CASE("Conv panel path declines what it does not cover") {
  testing::for_each_isa([&](Isa) {
    if (!ops::in_order_avx2_suits() && !ops::in_order_avx512_suits()) return;
    const std::vector<float> x(size_t(64 * 28 * 28), 1.f), w(size_t(128 * 64), 1.f);
    std::vector<float> y(size_t(128 * 28 * 28));
    PanelCase c{"1x1, unit strides, no padding: gemm() reads X itself", {1, 64, 28, 28}, {128, 64, 1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}};
    // (taken on AVX-512, where gemm() of many rows would be OpenBLAS's: a case above)
    CHECK(ops::conv_by_panels(geometry(c, {1, 128, 28, 28}), x.data(), w.data(), nullptr, y.data()) == ops::in_order_avx512_suits());
    PanelCase small{"a product below gemm()'s kernel threshold", {1, 2, 8, 8}, {4, 2, 3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}};
    CHECK_FALSE(ops::conv_by_panels(geometry(small, {1, 4, 8, 8}), x.data(), w.data(), nullptr, y.data()));
  });
}
