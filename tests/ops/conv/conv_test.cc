// Conv and ConvTranspose: the im2col + GEMM fast paths checked against spec-literal loops on
// random shapes and attributes (STYLE.md §6), plus auto_pad, dtype and error cases.
#include <cstring>
#include <random>

#include "../../../ops/conv/conv_common.h"
#include "../../../ops/linalg/linalg_common.h"
#include "refeval/threads.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {

struct ConvCase {
  Shape x, w;  // x [N, C, in...]; Conv: w [M, C/g, k...]; ConvTranspose: w [C, M/g, k...]
  std::vector<int64_t> strides, dilations, pads, output_padding;
  int64_t group = 1;
};

int64_t prod(const Shape& s, size_t from = 0) {
  int64_t p = 1;
  for (size_t i = from; i < s.size(); ++i) p *= s[i];
  return p;
}

// Flat offset of a multi-index in a row-major shape.
int64_t offset(const Shape& s, const std::vector<int64_t>& idx) {
  int64_t o = 0;
  for (size_t i = 0; i < s.size(); ++i) o = o * s[i] + idx[i];
  return o;
}

// Advances a multi-index over `s`; false after the last one.
bool next(std::vector<int64_t>& idx, const Shape& s) {
  for (size_t d = s.size(); d-- > 0;) {
    if (++idx[d] < s[d]) return true;
    idx[d] = 0;
  }
  return false;
}

// The oracle: the Conv definition read literally, in double.
std::vector<double> naive_conv(const ConvCase& c, const std::vector<double>& x, const std::vector<double>& w,
                               const std::vector<double>& b, Shape& ys) {
  const size_t D = c.x.size() - 2;
  const int64_t M = c.w[0], Cg = c.w[1], Mg = M / c.group;
  ys = {c.x[0], M};
  for (size_t d = 0; d < D; ++d)
    ys.push_back((c.x[d + 2] + c.pads[d] + c.pads[d + D] - ((c.w[d + 2] - 1) * c.dilations[d] + 1)) / c.strides[d] + 1);
  std::vector<double> y(size_t(prod(ys)));
  std::vector<int64_t> yi(ys.size(), 0);
  const Shape kshape(c.w.begin() + 2, c.w.end());
  do {
    const int64_t n = yi[0], m = yi[1];
    double s = b.empty() ? 0.0 : b[size_t(m)];
    for (int64_t cg = 0; cg < Cg; ++cg) {
      std::vector<int64_t> k(D, 0);
      do {
        std::vector<int64_t> xi{n, (m / Mg) * Cg + cg};
        bool inside = true;
        for (size_t d = 0; d < D; ++d) {
          const int64_t i = yi[d + 2] * c.strides[d] - c.pads[d] + k[d] * c.dilations[d];
          inside = inside && i >= 0 && i < c.x[d + 2];
          xi.push_back(i);
        }
        if (!inside) continue;
        std::vector<int64_t> wi{m, cg};
        wi.insert(wi.end(), k.begin(), k.end());
        s += x[size_t(offset(c.x, xi))] * w[size_t(offset(c.w, wi))];
      } while (D > 0 && next(k, kshape));
    }
    y[size_t(offset(ys, yi))] = s;
  } while (next(yi, ys));
  return y;
}

// The oracle for ConvTranspose: every input element scatters into the output.
std::vector<double> naive_conv_transpose(const ConvCase& c, const std::vector<double>& x, const std::vector<double>& w,
                                         Shape& ys) {
  const size_t D = c.x.size() - 2;
  const int64_t C = c.x[1], Mg = c.w[1], Cg = C / c.group;
  ys = {c.x[0], Mg * c.group};
  for (size_t d = 0; d < D; ++d)
    ys.push_back(c.strides[d] * (c.x[d + 2] - 1) + c.output_padding[d] + (c.w[d + 2] - 1) * c.dilations[d] + 1 - c.pads[d] -
                 c.pads[d + D]);
  std::vector<double> y(size_t(prod(ys)), 0.0);
  std::vector<int64_t> xi(c.x.size(), 0);
  const Shape kshape(c.w.begin() + 2, c.w.end());
  do {
    const int64_t n = xi[0], ch = xi[1];
    for (int64_t mg = 0; mg < Mg; ++mg) {
      std::vector<int64_t> k(D, 0);
      do {
        std::vector<int64_t> yi{n, (ch / Cg) * Mg + mg};
        bool inside = true;
        for (size_t d = 0; d < D; ++d) {
          const int64_t o = xi[d + 2] * c.strides[d] - c.pads[d] + k[d] * c.dilations[d];
          inside = inside && o >= 0 && o < ys[d + 2];
          yi.push_back(o);
        }
        if (!inside) continue;
        std::vector<int64_t> wi{ch, mg};
        wi.insert(wi.end(), k.begin(), k.end());
        y[size_t(offset(ys, yi))] += x[size_t(offset(c.x, xi))] * w[size_t(offset(c.w, wi))];
      } while (D > 0 && next(k, kshape));
    }
  } while (next(xi, c.x));
  return y;
}

std::vector<double> random_values(int64_t n, std::mt19937& gen) {
  std::uniform_real_distribution<double> d(-1, 1);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = double(float(d(gen)));
  return v;
}

std::vector<float> to_float(const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); }

ConvCase random_case(std::mt19937& gen, bool transpose) {
  auto r = [&](int lo, int hi) { return int64_t(std::uniform_int_distribution<int>(lo, hi)(gen)); };
  ConvCase c;
  const size_t D = size_t(r(1, 3));
  c.group = r(1, 2);
  const int64_t C = c.group * r(1, 3), M = c.group * r(1, 3);
  c.x = {r(1, 2), C};
  c.w = transpose ? Shape{C, M / c.group} : Shape{M, C / c.group};
  for (size_t d = 0; d < D; ++d) {
    const int64_t k = r(1, 3), dil = r(1, 2), s = r(1, 3);
    c.w.push_back(k);
    c.dilations.push_back(dil);
    c.strides.push_back(s);
    c.x.push_back((k - 1) * dil + 1 + r(0, D == 3 ? 3 : 6));
    c.output_padding.push_back(transpose ? r(0, s - 1) : 0);
  }
  for (size_t i = 0; i < 2 * D; ++i) c.pads.push_back(r(0, transpose ? 0 : 2));
  if (transpose)
    for (size_t d = 0; d < D; ++d) c.pads[d] = std::min<int64_t>(r(0, 1), (c.w[d + 2] - 1) * c.dilations[d]);
  return c;
}

std::vector<Attribute> conv_attrs(const ConvCase& c, bool transpose) {
  std::vector<Attribute> a{attr("strides", c.strides), attr("dilations", c.dilations), attr("pads", c.pads),
                                  attr("group", c.group)};
  if (transpose) a.push_back(attr("output_padding", c.output_padding));
  return a;
}

}  // namespace

TEST_CASE("Conv float runs im2col + Eigen GEMM and matches the naive oracle on random shapes and attributes") {
  std::mt19937 gen(7);
  for (int trial = 0; trial < 60; ++trial) {
    const ConvCase c = random_case(gen, false);
    const auto x = random_values(prod(c.x), gen), w = random_values(prod(c.w), gen), b = random_values(c.w[0], gen);
    Shape ys;
    const auto expected = naive_conv(c, x, w, b, ys);
    CAPTURE(trial);
    CAPTURE(shape_to_string(c.x));
    CAPTURE(shape_to_string(c.w));
    const uint64_t before = ops::blas_gemm_calls();
    auto out = run_node(node("Conv", {"x", "w", "b"}, {"y"}, conv_attrs(c, false)),
                        {tensor<float>(c.x, to_float(x)), tensor<float>(c.w, to_float(w)), tensor<float>({c.w[0]}, to_float(b))});
    const bool depthwise_2d = c.x.size() == 4 && c.group == c.x[1] && c.group == c.w[0];
    CHECK((ops::blas_gemm_calls() > before) != depthwise_2d);  // depthwise 2-D runs its own loop
    check_equal(out[0], tensor<float>(ys, to_float(expected)), Tolerance{1e-4, 1e-5});
    // double goes through the same path without rounding to float
    auto outd = run_node(node("Conv", {"x", "w"}, {"y"}, conv_attrs(c, false)), {tensor<double>(c.x, x), tensor<double>(c.w, w)});
    const auto nob = naive_conv(c, x, w, {}, ys);
    check_equal(outd[0], tensor<double>(ys, nob), Tolerance{1e-12, 1e-12});
  }
}

TEST_CASE("Depthwise 2-D Conv (group = channels) runs directly and matches the oracle, on 1 and 2 threads") {
  std::mt19937 gen(5);
  auto r = [&](int lo, int hi) { return int64_t(std::uniform_int_distribution<int>(lo, hi)(gen)); };
  for (int trial = 0; trial < 150; ++trial) {
    ConvCase c;
    c.group = r(1, 5);
    c.x = {r(1, 2), c.group};
    c.w = {c.group, 1};
    for (int d = 0; d < 2; ++d) {
      const int64_t k = r(1, 5), dil = r(1, 2);
      c.w.push_back(k);
      c.dilations.push_back(dil);
      c.strides.push_back(r(1, 3));
      c.x.push_back((k - 1) * dil + 1 + r(0, 9));
      c.output_padding.push_back(0);
    }
    for (int i = 0; i < 4; ++i) c.pads.push_back(r(0, 2));
    const auto x = random_values(prod(c.x), gen), w = random_values(prod(c.w), gen), b = random_values(c.w[0], gen);
    Shape ys;
    const auto expected = naive_conv(c, x, w, b, ys);
    CAPTURE(trial);
    CAPTURE(shape_to_string(c.x));
    CAPTURE(shape_to_string(c.w));
    std::vector<Tensor> outs;
    for (int threads : {1, 2}) {
      set_thread_count(threads);
      outs.push_back(run_node(node("Conv", {"x", "w", "b"}, {"y"}, conv_attrs(c, false)),
                              {tensor<float>(c.x, to_float(x)), tensor<float>(c.w, to_float(w)), tensor<float>({c.w[0]}, to_float(b))})[0].tensor());
    }
    set_thread_count(1);
    check_equal(outs[0], tensor<float>(ys, to_float(expected)), Tolerance{1e-4, 1e-5});
    CHECK(std::memcmp(outs[0].raw_data(), outs[1].raw_data(), outs[0].nbytes()) == 0);
    auto outd = run_node(node("Conv", {"x", "w"}, {"y"}, conv_attrs(c, false)), {tensor<double>(c.x, x), tensor<double>(c.w, w)});
    check_equal(outd[0], tensor<double>(ys, naive_conv(c, x, w, {}, ys)), Tolerance{1e-12, 1e-12});
  }
}

TEST_CASE("ConvTranspose float runs GEMM + col2im and matches the naive scatter oracle") {
  std::mt19937 gen(11);
  for (int trial = 0; trial < 60; ++trial) {
    const ConvCase c = random_case(gen, true);
    const auto x = random_values(prod(c.x), gen), w = random_values(prod(c.w), gen);
    Shape ys;
    const auto expected = naive_conv_transpose(c, x, w, ys);
    CAPTURE(trial);
    CAPTURE(shape_to_string(c.x));
    CAPTURE(shape_to_string(c.w));
    auto out = run_node(node("ConvTranspose", {"x", "w"}, {"y"}, conv_attrs(c, true)),
                        {tensor<float>(c.x, to_float(x)), tensor<float>(c.w, to_float(w))});
    check_equal(out[0], tensor<float>(ys, to_float(expected)), Tolerance{1e-4, 1e-5});
  }
}

TEST_CASE("Conv auto_pad and small cases") {
  const Tensor x = tensor<float>({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Tensor w = tensor<float>({1, 1, 2, 2}, {1, 1, 1, 1});
  struct Case { const char* what; std::vector<Attribute> attrs; Tensor expected; };
  const Case cases[] = {
      {"no padding: 2x2 window sums", {}, tensor<float>({1, 1, 2, 2}, {12, 16, 24, 28})},
      {"SAME_UPPER pads the end", {attr("auto_pad", "SAME_UPPER")},
       tensor<float>({1, 1, 3, 3}, {12, 16, 9, 24, 28, 15, 15, 17, 9})},
      {"SAME_LOWER pads the beginning", {attr("auto_pad", "SAME_LOWER")},
       tensor<float>({1, 1, 3, 3}, {1, 3, 5, 5, 12, 16, 11, 24, 28})},
      {"VALID ignores pads", {attr("auto_pad", "VALID"), attr("strides", std::vector<int64_t>{2, 2})},
       tensor<float>({1, 1, 1, 1}, {12})},
      {"SAME_UPPER with stride 2 gives ceil(in / 2)", {attr("auto_pad", "SAME_UPPER"), attr("strides", std::vector<int64_t>{2, 2})},
       tensor<float>({1, 1, 2, 2}, {12, 9, 15, 9})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    check_equal(run_node(node("Conv", {"x", "w"}, {"y"}, c.attrs), {x, w})[0], c.expected);
  }
}

TEST_CASE("Conv float16 and bfloat16 compute in float") {
  const Tensor x16 = tensor<float16>({1, 1, 2}, {float16(1.5f), float16(2.f)});
  const Tensor w16 = tensor<float16>({1, 1, 1}, {float16(2.f)});
  check_equal(run_node(node("Conv", {"x", "w"}, {"y"}), {x16, w16})[0], tensor<float16>({1, 1, 2}, {float16(3.f), float16(4.f)}));
  const Tensor xb = tensor<bfloat16>({1, 1, 2}, {bfloat16(1.f), bfloat16(-2.f)});
  const Tensor wb = tensor<bfloat16>({1, 1, 2}, {bfloat16(3.f), bfloat16(1.f)});
  check_equal(run_node(node("Conv", {"x", "w"}, {"y"}), {xb, wb})[0], tensor<bfloat16>({1, 1, 1}, {bfloat16(1.f)}));
}

TEST_CASE("ConvTranspose output_shape and auto_pad derive the pads") {
  const Tensor x = tensor<float>({1, 1, 2}, {1, 2});
  const Tensor w = tensor<float>({1, 1, 3}, {1, 1, 1});
  struct Case { const char* what; std::vector<Attribute> attrs; Tensor expected; };
  const Case cases[] = {
      {"full output: (2-1)*1 + 3 = 4", {}, tensor<float>({1, 1, 4}, {1, 3, 3, 2})},
      {"stride 2: 5 outputs", {attr("strides", std::vector<int64_t>{2})}, tensor<float>({1, 1, 5}, {1, 1, 3, 2, 2})},
      {"output_padding adds an end position", {attr("strides", std::vector<int64_t>{2}), attr("output_padding", std::vector<int64_t>{1})},
       tensor<float>({1, 1, 6}, {1, 1, 3, 2, 2, 0})},
      {"SAME_UPPER: in * stride, odd padding at the end",
       {attr("strides", std::vector<int64_t>{2}), attr("auto_pad", "SAME_UPPER")}, tensor<float>({1, 1, 4}, {1, 1, 3, 2})},
      {"SAME_LOWER: odd padding at the beginning",
       {attr("strides", std::vector<int64_t>{2}), attr("auto_pad", "SAME_LOWER")}, tensor<float>({1, 1, 4}, {1, 3, 2, 2})},
      {"output_shape larger than natural extends with zeros", {attr("output_shape", std::vector<int64_t>{5})},
       tensor<float>({1, 1, 5}, {1, 3, 3, 2, 0})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    check_equal(run_node(node("ConvTranspose", {"x", "w"}, {"y"}, c.attrs), {x, w})[0], c.expected);
  }
}

TEST_CASE("Conv and ConvTranspose refuse bad shapes and attributes") {
  const Tensor x = tensor<float>({1, 2, 3}, {0, 0, 0, 0, 0, 0});
  CHECK_THROWS_AS(run_node(node("Conv", {"x", "w"}, {"y"}), {x, tensor<float>({1, 3, 1}, {0, 0, 0})}), Error);  // channels
  CHECK_THROWS_AS(run_node(node("Conv", {"x", "w"}, {"y"}), {x, tensor<float>({1, 2, 5}, std::vector<float>(10))}), Error);  // kernel too big
  CHECK_THROWS_AS(run_node(node("Conv", {"x", "w"}, {"y"}, {attr("group", int64_t(2))}), {x, tensor<float>({3, 1, 1}, {0, 0, 0})}), Error);
  CHECK_THROWS_AS(run_node(node("Conv", {"x", "w"}, {"y"}, {attr("auto_pad", "BOGUS")}), {x, tensor<float>({1, 2, 1}, {0, 0})}), Error);
  CHECK_THROWS_AS(run_node(node("Conv", {"x", "w"}, {"y"}), {x, tensor<double>({1, 2, 1}, {0, 0})}), Error);  // mixed types
  CHECK_THROWS_AS(run_node(node("Conv", {"x", "w"}, {"y"}), {tensor<int32_t>({1, 1, 1}, {0}), tensor<int32_t>({1, 1, 1}, {0})}), Error);
  CHECK_THROWS_AS(run_node(node("ConvTranspose", {"x", "w"}, {"y"}), {x, tensor<float>({3, 1, 1}, {0, 0, 0})}), Error);
}

TEST_CASE("CausalConvWithState: causal depthwise conv carrying the last k-1 positions") {
  const Tensor x = tensor<float>({1, 2, 3}, {1, 2, 3, 10, 20, 30});
  const Tensor w = tensor<float>({2, 1, 2}, {1, 1, 0, 1});  // channel 0 sums two taps, channel 1 is identity
  struct Case { const char* what; Values inputs; Tensor y, state; };
  const Case cases[] = {
      {"no past state: zeros on the left", {x, w}, tensor<float>({1, 2, 3}, {1, 3, 5, 10, 20, 30}), tensor<float>({1, 2, 1}, {3, 30})},
      {"past state and bias", {x, w, tensor<float>({2}, {100, 0}), tensor<float>({1, 2, 1}, {5, 7})},
       tensor<float>({1, 2, 3}, {106, 103, 105, 10, 20, 30}), tensor<float>({1, 2, 1}, {3, 30})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    std::vector<std::string> names{"x", "w", "b", "p"};
    names.resize(c.inputs.size());
    auto out = run_node(node("CausalConvWithState", names, {"y", "s"}), c.inputs, 27);
    check_equal(out[0], c.y);
    check_equal(out[1], c.state);
  }
  auto silu = run_node(node("CausalConvWithState", {"x", "w"}, {"y", "s"}, {attr("activation", "silu")}),
                       {tensor<float>({1, 1, 1}, {2}), tensor<float>({1, 1, 1}, {1})}, 27);
  check_equal(silu[0], tensor<float>({1, 1, 1}, {float(2.0 / (1.0 + std::exp(-2.0)))}));
  CHECK_THROWS_AS(run_node(node("CausalConvWithState", {"x", "w"}, {"y", "s"}, {attr("activation", "relu")}), {x, w}, 27), Error);
}

TEST_CASE("DeformConv: zero offsets are Conv, offsets move the taps, the mask weights them") {
  const Tensor x = tensor<float>({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Tensor w = tensor<float>({1, 1, 2, 2}, {1, 1, 1, 1});
  std::vector<float> shift_w(32, 0.f);  // per tap t: channel 2t is dh, 2t+1 is dw, each 2x2
  for (int t = 0; t < 4; ++t)
    for (int i = 0; i < 4; ++i) shift_w[size_t((2 * t + 1) * 4 + i)] = 1.f;
  struct Case { const char* what; Values inputs; Tensor expected; };
  const Case cases[] = {
      {"zero offsets", {x, w, tensor<float>({1, 8, 2, 2}, std::vector<float>(32, 0.f))}, tensor<float>({1, 1, 2, 2}, {12, 16, 24, 28})},
      {"dw = 1 reads one column right (zero outside)", {x, w, tensor<float>({1, 8, 2, 2}, shift_w)},
       tensor<float>({1, 1, 2, 2}, {16, 9, 28, 15})},
      {"dw = 0.5 interpolates", {x, w, tensor<float>({1, 8, 2, 2}, [&] { auto v = shift_w; for (auto& f : v) f *= 0.5f; return v; }())},
       tensor<float>({1, 1, 2, 2}, {14, 12.5f, 26, 21.5f})},
      {"mask 0.5 and bias 1", {x, w, tensor<float>({1, 8, 2, 2}, std::vector<float>(32, 0.f)), tensor<float>({1}, {1}),
                               tensor<float>({1, 4, 2, 2}, std::vector<float>(16, 0.5f))}, tensor<float>({1, 1, 2, 2}, {7, 9, 13, 15})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    std::vector<std::string> names{"x", "w", "o", "b", "m"};
    names.resize(c.inputs.size());
    check_equal(run_node(node("DeformConv", names, {"y"}), c.inputs)[0], c.expected);
  }
  CHECK_THROWS_AS(run_node(node("DeformConv", {"x", "w", "o"}, {"y"}), {x, w, tensor<float>({1, 2, 2, 2}, std::vector<float>(8))}), Error);
}

TEST_CASE("Col2Im adds each column entry back into its image position") {
  // 1-D image of 3, blocks of 2: rows are taps, columns are the 2 block positions
  check_equal(run_node(node("Col2Im", {"x", "i", "b"}, {"y"}), {tensor<float>({1, 2, 2}, {1, 2, 3, 4}), tensor<int64_t>({1}, {3}),
                                                            tensor<int64_t>({1}, {2})})[0], tensor<float>({1, 1, 3}, {1, 5, 4}));
  // int32 and a stride of 2 with padding 1 on both sides: positions -1..1 and 1..2
  check_equal(run_node(node("Col2Im", {"x", "i", "b"}, {"y"}, {attr("strides", std::vector<int64_t>{2}), attr("pads", std::vector<int64_t>{1, 1})}),
                       {tensor<int32_t>({1, 2, 2}, {1, 2, 3, 4}), tensor<int64_t>({1}, {3}), tensor<int64_t>({1}, {2})})[0],
              tensor<int32_t>({1, 1, 3}, {3, 2, 4}));
  CHECK_THROWS_AS(run_node(node("Col2Im", {"x", "i", "b"}, {"y"}), {tensor<float>({1, 2, 3}, std::vector<float>(6)), tensor<int64_t>({1}, {3}),
                                                                tensor<int64_t>({1}, {2})}), Error);  // 3 columns, 2 positions
}

TEST_CASE("im2col 2-D: each entry is the input value its output position reads, or the padding") {
  // Rows wide enough for the vector paths (stride 2 gathers 16 outputs at a time on AVX-512),
  // with pads, dilations and strides 1 to 3 on either axis.
  struct Case { int64_t C, H, W, kh, kw, sh, sw, dh, dw, ph0, ph1, pw0, pw1; };
  const Case cases[] = {{2, 9, 70, 3, 3, 1, 2, 1, 1, 1, 1, 1, 1}, {1, 12, 67, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3},
                        {3, 8, 40, 2, 3, 3, 1, 2, 2, 0, 2, 2, 0}, {1, 5, 101, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0},
                        {2, 6, 50, 3, 5, 1, 3, 1, 2, 2, 1, 0, 4}};
  for (const Case& c : cases) {
    CAPTURE(c.W);
    ops::ConvGeometry g;
    g.N = 1, g.C = c.C, g.M = 1;
    g.in = {c.H, c.W}, g.kernel = {c.kh, c.kw};
    g.strides = {c.sh, c.sw}, g.dilations = {c.dh, c.dw}, g.pad_begin = {c.ph0, c.pw0}, g.pad_end = {c.ph1, c.pw1};
    g.out = {(c.H + c.ph0 + c.ph1 - (c.kh - 1) * c.dh - 1) / c.sh + 1, (c.W + c.pw0 + c.pw1 - (c.kw - 1) * c.dw - 1) / c.sw + 1};
    std::vector<float> x(size_t(c.C * c.H * c.W));
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(i) + 0.5f;
    const int64_t out = g.out[0] * g.out[1];
    std::vector<float> col(size_t(c.C * c.kh * c.kw * out), 0.f);
    ops::im2col(g, c.C, x.data(), col.data(), -1.f);
    int wrong = 0;
    for (int64_t ch = 0; ch < c.C; ++ch)
      for (int64_t i = 0; i < c.kh; ++i)
        for (int64_t j = 0; j < c.kw; ++j)
          for (int64_t oh = 0; oh < g.out[0]; ++oh)
            for (int64_t ow = 0; ow < g.out[1]; ++ow) {
              const int64_t ih = oh * c.sh - c.ph0 + i * c.dh, iw = ow * c.sw - c.pw0 + j * c.dw;
              const float want = ih >= 0 && ih < c.H && iw >= 0 && iw < c.W ? x[size_t((ch * c.H + ih) * c.W + iw)] : -1.f;
              wrong += col[size_t(((ch * c.kh + i) * c.kw + j) * out + oh * g.out[1] + ow)] != want;
            }
    CHECK(wrong == 0);
  }
}
