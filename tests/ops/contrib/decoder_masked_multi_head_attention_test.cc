// com.microsoft DecoderMaskedMultiHeadAttention against an oracle written here in plain double
// loops: self attention with a shared or unshared past, packed QKV, bias, mask_index,
// attention_bias, scale, mask_filter_value, the qk output, beam search through
// cache_indirection, cross attention, float16; and bad inputs.
#include <cmath>

#include "refeval/compute_vector.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {


// One decoding step. Self attention: q, k, v rows (B, D), past buffers (B, N, M, h) of which the
// first P rows (all M when !shared) are the past. Cross: ck, cv (B, N, L, h) and no past.
struct Step {
  int64_t B = 2, N = 2, h = 4, M = 6, P = 3;
  bool shared = true, cross = false;
  std::vector<float> q{}, k{}, v{}, pk{}, pv{}, bias{}, ab{};  // ab: attention bias (B or 1, N or 1, 1, T)
  int64_t ab_b = 0, ab_n = 0;                    // attention bias batch / head dims (0 = none)
  std::vector<int32_t> mask{}, ci{};                // mask (B, T); cache_indirection (B / beam, beam, M)
  int64_t beam = 1;
  double scale = 0, filter = -10000;
  int64_t L = 5;  // cross attention keys
};

struct Expected { std::vector<double> out, present_k, present_v, qk; };

Expected oracle(const Step& s) {
  const int64_t B = s.B, N = s.N, h = s.h, D = N * h, T = s.cross ? s.L : s.P + 1, rows = s.shared ? s.M : s.P;
  const double scale = s.scale != 0 ? s.scale : 1 / std::sqrt(double(h));
  auto biased = [&](const std::vector<float>& x, int64_t b, int64_t n, int64_t d, int64_t part) {
    return double(x[size_t(b * D + n * h + d)]) + (s.bias.empty() ? 0.0 : double(s.bias[size_t(part * D + n * h + d)]));
  };
  Expected e;
  e.out.assign(size_t(B * D), 0);
  e.qk.assign(size_t(B * N * T), 0);
  const int64_t stored = s.cross ? 0 : (s.shared ? s.M : s.P + 1);
  e.present_k.assign(size_t(B * N * stored * h), 0), e.present_v = e.present_k;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t n = 0; n < N; ++n) {
      // keys and values this head attends, in order
      std::vector<std::vector<double>> keys, vals;
      for (int64_t j = 0; j < T; ++j) {
        std::vector<double> kj(static_cast<size_t>(h)), vj(static_cast<size_t>(h));
        for (int64_t d = 0; d < h; ++d) {
          if (s.cross) {
            kj[size_t(d)] = s.k[size_t(((b * N + n) * s.L + j) * h + d)], vj[size_t(d)] = s.v[size_t(((b * N + n) * s.L + j) * h + d)];
          } else if (j == s.P) {
            kj[size_t(d)] = biased(s.k, b, n, d, 1), vj[size_t(d)] = biased(s.v, b, n, d, 2);
          } else {
            const int64_t src = s.ci.empty() ? b : b / s.beam * s.beam + s.ci[size_t(b * s.M + j)];
            kj[size_t(d)] = s.pk[size_t(((src * N + n) * rows + j) * h + d)], vj[size_t(d)] = s.pv[size_t(((src * N + n) * rows + j) * h + d)];
          }
        }
        keys.push_back(kj), vals.push_back(vj);
      }
      std::vector<double> score(static_cast<size_t>(T));
      double top = -1e300;
      for (int64_t j = 0; j < T; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < h; ++d) dot += biased(s.q, b, n, d, 0) * keys[size_t(j)][size_t(d)];
        double sc = dot * scale;
        if (s.ab_b) sc += s.ab[size_t(((s.ab_b == 1 ? 0 : b) * s.ab_n + (s.ab_n == 1 ? 0 : n)) * T + j)];
        if (!s.mask.empty() && s.mask[size_t(b * T + j)] == 0) sc += s.filter;
        e.qk[size_t((b * N + n) * T + j)] = score[size_t(j)] = sc;
        top = std::max(top, sc);
      }
      double sum = 0;
      for (double& x : score) sum += x = std::exp(x - top);
      for (int64_t j = 0; j < T; ++j)
        for (int64_t d = 0; d < h; ++d) e.out[size_t(b * D + n * h + d)] += score[size_t(j)] / sum * vals[size_t(j)][size_t(d)];
      // present: the past buffer (shared) or past + new (unshared), new row at P
      for (int64_t j = 0; j < stored; ++j)
        for (int64_t d = 0; d < h; ++d) {
          const size_t at = size_t(((b * N + n) * stored + j) * h + d);
          const bool now = j == s.P;
          e.present_k[at] = now ? biased(s.k, b, n, d, 1) : s.pk[size_t(((b * N + n) * rows + j) * h + d)];
          e.present_v[at] = now ? biased(s.v, b, n, d, 2) : s.pv[size_t(((b * N + n) * rows + j) * h + d)];
        }
    }
  return e;
}

Step make_step(Step s) {
  const int64_t D = s.N * s.h;
  s.q = wave(size_t(s.B * D), 0.7f), s.k = wave(size_t(s.B * D), 1.3f, 1.0f), s.v = wave(size_t(s.B * D), 0.45f, 2.0f);
  const int64_t rows = s.shared ? s.M : s.P;
  s.pk = wave(size_t(s.B * s.N * rows * s.h), 0.31f, 0.5f), s.pv = wave(size_t(s.B * s.N * rows * s.h), 0.83f, 1.7f);
  if (s.cross) s.k = wave(size_t(s.B * s.N * s.L * s.h), 0.29f, 0.2f), s.v = wave(size_t(s.B * s.N * s.L * s.h), 0.61f, 0.9f);
  return s;
}

std::vector<float> to_f(const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); }

// Runs the op on s with the named optional inputs present; outputs y, present_key, present_value,
// qk (when output_qk).
Values run_step(const Step& s, std::vector<Attribute> attrs = {}, bool packed = false, bool qk = false) {
  const int64_t B = s.B, N = s.N, h = s.h, D = N * h;
  std::vector<std::string> ins(11);
  Values feeds(11);
  if (packed) {
    std::vector<float> qkv;
    for (int64_t b = 0; b < B; ++b)
      for (const auto* x : {&s.q, &s.k, &s.v}) qkv.insert(qkv.end(), x->begin() + b * D, x->begin() + (b + 1) * D);
    ins[0] = "qkv", feeds[0] = tensor<float>({B, 1, 3 * D}, qkv);
  } else {
    ins[0] = "q", feeds[0] = tensor<float>({B, 1, D}, s.q);
    ins[1] = "k", ins[2] = "v";
    feeds[1] = s.cross ? tensor<float>({B, N, s.L, h}, s.k) : tensor<float>({B, 1, D}, s.k);
    feeds[2] = s.cross ? tensor<float>({B, N, s.L, h}, s.v) : tensor<float>({B, 1, D}, s.v);
  }
  const int64_t T = s.cross ? s.L : s.P + 1;
  if (!s.mask.empty()) ins[3] = "mask", feeds[3] = tensor<int32_t>({B, T}, s.mask);
  if (s.ab_b) ins[4] = "ab", feeds[4] = tensor<float>({s.ab_b, s.ab_n, 1, T}, s.ab);
  if (!s.cross && !s.pk.empty()) {
    const int64_t rows = s.shared ? s.M : s.P;
    ins[5] = "pk", ins[6] = "pv";
    feeds[5] = tensor<float>({B, N, rows, h}, s.pk), feeds[6] = tensor<float>({B, N, rows, h}, s.pv);
    if (s.shared) ins[7] = "psl", feeds[7] = tensor<int32_t>({1}, {int32_t(s.P)});
  }
  if (s.beam > 1) ins[8] = "bw", feeds[8] = tensor<int32_t>({1}, {int32_t(s.beam)});
  if (!s.ci.empty()) ins[9] = "ci", feeds[9] = tensor<int32_t>({B / s.beam, s.beam, s.M}, s.ci);
  if (!s.bias.empty()) ins[10] = "bias", feeds[10] = tensor<float>({3 * D}, s.bias);
  attrs.push_back(attr("num_heads", N));
  if (s.shared && !s.cross) attrs.push_back(attr("past_present_share_buffer", int64_t(1)));
  if (qk) attrs.push_back(attr("output_qk", int64_t(1)));
  std::vector<std::string> outs = {"y"};
  if (!s.cross) outs.insert(outs.end(), {"present_key", "present_value"});
  if (qk) outs.resize(4, ""), outs[3] = "qk";
  return run_node(node("DecoderMaskedMultiHeadAttention", ins, outs, std::move(attrs), "dmmha", "com.microsoft"), feeds);
}

void check_step(const Step& s, std::vector<Attribute> attrs = {}, bool packed = false, bool qk = false) {
  const Values got = run_step(s, std::move(attrs), packed, qk);
  const Expected e = oracle(s);
  const int64_t B = s.B, N = s.N, h = s.h, T = s.cross ? s.L : s.P + 1;
  const Tolerance tol{1e-5, 1e-6};
  check_equal(got[0], tensor<float>({B, 1, N * h}, to_f(e.out)), tol);
  if (!s.cross) {
    const int64_t stored = s.shared ? s.M : s.P + 1;
    check_equal(got[1], tensor<float>({B, N, stored, h}, to_f(e.present_k)), tol);
    check_equal(got[2], tensor<float>({B, N, stored, h}, to_f(e.present_v)), tol);
  }
  if (qk) check_equal(got.back(), tensor<float>({B, N, 1, T}, to_f(e.qk)), tol);  // graph outputs skip the unnamed ones
}

}  // namespace

TEST_CASE("DecoderMaskedMultiHeadAttention: self attention with a shared past buffer") {
  Step s = make_step({});
  SUBCASE("plain") { check_step(s); }
  SUBCASE("bias, scale and the qk output") {
    s.bias = wave(size_t(3 * s.N * s.h), 2.1f), s.scale = 0.37;
    check_step(s, {attr("scale", 0.37f)}, false, true);
  }
  SUBCASE("mask_index (B, P + 1) and mask_filter_value") {
    s.mask = {1, 0, 1, 1, 0, 1, 1, 0}, s.filter = -3.0;
    check_step(s, {attr("mask_filter_value", -3.0f)}, false, true);
  }
  SUBCASE("attention_bias, broadcast over the batch") {
    s.ab_b = 1, s.ab_n = s.N, s.ab = wave(size_t(s.N * (s.P + 1)), 0.9f);
    check_step(s, {}, false, true);
  }
  SUBCASE("attention_bias per batch, broadcast over heads") {
    s.ab_b = s.B, s.ab_n = 1, s.ab = wave(size_t(s.B * (s.P + 1)), 1.9f);
    check_step(s);
  }
  SUBCASE("past_sequence_length 0: the new token alone") { s.P = 0, check_step(s); }
  SUBCASE("last free row") { s.P = s.M - 1, check_step(s); }
  SUBCASE("packed QKV") { check_step(s, {}, true); }
}

TEST_CASE("DecoderMaskedMultiHeadAttention: unshared past, no past, and batch 1") {
  SUBCASE("unshared past: present = past + new") {
    Step s;
    s.shared = false;
    check_step(make_step(s));
  }
  SUBCASE("no past: the new token alone") {
    Step s;
    s.shared = false, s.P = 0;
    s = make_step(s);
    s.pk.clear(), s.pv.clear();
    const Values got = run_step(s);
    check_equal(got[0], tensor<float>({2, 1, 8}, s.v));  // softmax over one key: the value itself
    check_equal(got[2], tensor<float>({2, 2, 1, 4}, s.v));
  }
  SUBCASE("batch 1, four heads of 2") {
    Step s;
    s.B = 1, s.N = 4, s.h = 2, s.M = 5, s.P = 2;
    check_step(make_step(s), {}, false, true);
  }
}

TEST_CASE("DecoderMaskedMultiHeadAttention: beam search reads past rows through cache_indirection") {
  Step s;
  s.B = 4, s.beam = 2, s.M = 5, s.P = 3;
  s = make_step(s);
  // batch 0: beam 0 takes rows from beams 1, 0, 1; beam 1 from 0, 0, 1. Batch 1 crosses over.
  // The fourth entry (the current step) and the fifth are not read.
  s.ci = {1, 0, 1, 0, 0, /**/ 0, 0, 1, 1, 1, /**/ 1, 1, 1, 0, 0, /**/ 0, 1, 0, 0, 0};
  s.mask = {1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1};
  check_step(s, {}, false, true);
  // all-zero indirection with beam 1 is the plain shared-buffer step
  Step one = make_step({});
  one.ci.assign(size_t(one.B * one.M), 0);
  check_step(one);
}

TEST_CASE("DecoderMaskedMultiHeadAttention: cross attention on the encoder's keys and values") {
  Step s;
  s.cross = true, s.shared = false;
  s = make_step(s);
  SUBCASE("plain, qk output") { check_step(s, {}, false, true); }
  SUBCASE("mask (B, L) and a query bias") {
    s.mask = {1, 0, 1, 1, 1, 1, 1, 1, 0, 0};
    s.bias = wave(size_t(3 * s.N * s.h), 1.1f);
    check_step(s, {}, false, true);
  }
  SUBCASE("beam inputs are ignored") {
    s.beam = 2;
    check_step(s);
  }
}

TEST_CASE("DecoderMaskedMultiHeadAttention in float16 matches the oracle on the rounded inputs") {
  Step s = make_step({});
  for (auto* x : {&s.q, &s.k, &s.v, &s.pk, &s.pv})
    for (float& f : *x) f = float(float16(f));
  const Expected e = oracle(s);
  auto half = [](Shape shape, const std::vector<float>& v) {
    std::vector<float16> h;
    for (float f : v) h.push_back(float16(f));
    return tensor<float16>(std::move(shape), h);
  };
  const Values got = run_node(node("DecoderMaskedMultiHeadAttention", {"q", "k", "v", "", "", "pk", "pv", "psl"},
                                   {"y", "present_key", "present_value"},
                                   {attr("num_heads", int64_t(2)), attr("past_present_share_buffer", int64_t(1))}, "dmmha", "com.microsoft"),
                              {half({2, 1, 8}, s.q), half({2, 1, 8}, s.k), half({2, 1, 8}, s.v), Value(), Value(),
                               half({2, 2, 6, 4}, s.pk), half({2, 2, 6, 4}, s.pv), tensor<int32_t>({1}, {3})});
  REQUIRE(got[0].tensor().dtype() == DType::Float16);
  check_equal(got[0], half({2, 1, 8}, to_f(e.out)), {1e-3, 1e-3});
  check_equal(got[1], half({2, 2, 6, 4}, to_f(e.present_k)));
}

TEST_CASE("DecoderMaskedMultiHeadAttention errors name the input") {
  const Step s = make_step({});
  auto fails = [&](Step bad, const char* message, std::vector<Attribute> attrs = {}) {
    CAPTURE(message);
    CHECK_THROWS_WITH_AS(run_step(bad, std::move(attrs)), doctest::Contains(message), Error);
  };
  Step t = s;
  t.P = 6;
  fails(t, "past_sequence_length 6 is outside [0, 6)");
  CHECK_THROWS_WITH_AS(run_node(node("DecoderMaskedMultiHeadAttention", {"q", "k", "v", "m", "", "pk", "pv", "psl"}, {"y"},
                                     {attr("num_heads", int64_t(2)), attr("past_present_share_buffer", int64_t(1))}, "d", "com.microsoft"),
                                {tensor<float>({2, 1, 8}, s.q), tensor<float>({2, 1, 8}, s.k), tensor<float>({2, 1, 8}, s.v),
                                 tensor<int32_t>({2, 3}, {1, 1, 1, 1, 1, 1}), Value(), tensor<float>({2, 2, 6, 4}, s.pk),
                                 tensor<float>({2, 2, 6, 4}, s.pv), tensor<int32_t>({1}, {3})}),
                       doctest::Contains("mask_index has shape (2, 3), expected (2, 4)"), Error);
  t = s, t.beam = 2;
  fails(t, "beam_width > 1 needs cache_indirection");
  t = s, t.ci = {0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  fails(t, "cache_indirection holds beam 2 at (0, 0, 2); beam_width is 1");
  t = s, t.beam = 3;
  fails(t, "beam_width 3 does not divide the batch 2");
  t = make_step({.shared = false, .cross = true});
  t.ab_b = 1, t.ab_n = 1, t.ab.assign(5, 0.f);
  fails(t, "cross attention (4-D key) takes no attention_bias");
  CHECK_THROWS_WITH_AS(run_node(node("DecoderMaskedMultiHeadAttention", {"q", "k", "v"}, {"y", "present_key"}, {attr("num_heads", int64_t(2))}, "d", "com.microsoft"),
                                {tensor<float>({2, 1, 8}, s.q), tensor<float>({2, 2, 3, 4}, wave(48, 1.f)), tensor<float>({2, 2, 3, 4}, wave(48, 2.f))}),
                       doctest::Contains("cross attention (4-D key) has no present_key or present_value outputs"), Error);
  CHECK_THROWS_WITH_AS(run_node(node("DecoderMaskedMultiHeadAttention", {"q", "k", "v", "", "", "pk", "pv"}, {"y"}, {attr("num_heads", int64_t(2))},
                                     "d", "com.microsoft"),
                                {tensor<float>({2, 1, 8}, s.q), tensor<float>({2, 2, 3, 4}, wave(48, 1.f)), tensor<float>({2, 2, 3, 4}, wave(48, 2.f)),
                                 Value(), Value(), tensor<float>({2, 2, 3, 4}, wave(48, 3.f)), tensor<float>({2, 2, 3, 4}, wave(48, 4.f))}),
                       doctest::Contains("cross attention (4-D key) takes no past_key or past_value"), Error);
  CHECK_THROWS_WITH_AS(run_node(node("DecoderMaskedMultiHeadAttention", {"q", "k", "v"}, {"y"}, {attr("num_heads", int64_t(2))}, "d", "com.microsoft"),
                                {tensor<float>({1, 2, 8}, wave(16, 1.f)), tensor<float>({1, 2, 8}, wave(16, 1.f)), tensor<float>({1, 2, 8}, wave(16, 1.f))}),
                       doctest::Contains("query has shape (1, 2, 8); the sequence length must be 1"), Error);
  CHECK_THROWS_WITH_AS(run_node(node("DecoderMaskedMultiHeadAttention", {"q", "k", "v", "", "", "pk", "pv"}, {"y"},
                                     {attr("num_heads", int64_t(2)), attr("past_present_share_buffer", int64_t(1))}, "d", "com.microsoft"),
                                {tensor<float>({2, 1, 8}, s.q), tensor<float>({2, 1, 8}, s.k), tensor<float>({2, 1, 8}, s.v), Value(), Value(),
                                 tensor<float>({2, 2, 6, 4}, s.pk), tensor<float>({2, 2, 6, 4}, s.pv)}),
                       doctest::Contains("past_present_share_buffer=1 needs past_sequence_length"), Error);
  CHECK_THROWS_WITH_AS(run_node(node("DecoderMaskedMultiHeadAttention", {"q", "k", "v"}, {"y", "", "", "qk"}, {attr("num_heads", int64_t(2))}, "d", "com.microsoft"),
                                {tensor<float>({2, 1, 8}, s.q), tensor<float>({2, 1, 8}, s.k), tensor<float>({2, 1, 8}, s.v)}),
                       doctest::Contains("output qk needs output_qk=1"), Error);
  CHECK_THROWS_WITH_AS(run_node(node("DecoderMaskedMultiHeadAttention", {"q", "k", "v"}, {"y"}, {attr("num_heads", int64_t(2))}, "d", "com.microsoft"),
                                {tensor<float>({2, 1, 8}, s.q), tensor<float>({2, 1, 6}, wave(12, 1.f)), tensor<float>({2, 1, 8}, s.v)}),
                       doctest::Contains("key has shape (2, 1, 6), expected (2, 1, 8)"), Error);
}

TEST_CASE("DecoderMaskedMultiHeadAttention refusals: one exact line each") {
  const std::string A = "node 'd' (com.microsoft:DecoderMaskedMultiHeadAttention): ";
  auto dmmha = [](std::vector<std::string> ins, std::vector<Attribute> attrs = {}, std::vector<std::string> outs = {"y"}) {
    attrs.push_back(attr("num_heads", int64_t(2)));
    return node("DecoderMaskedMultiHeadAttention", std::move(ins), std::move(outs), std::move(attrs), "d", "com.microsoft");
  };
  auto zeros = [](Shape s) { return tensor<float>(s, std::vector<float>(size_t(shape_size(s)), 0.0f)); };
  const Tensor q = zeros({2, 1, 8}), past = zeros({2, 2, 3, 4});
  const std::vector<Attribute> shared = {attr("past_present_share_buffer", int64_t(1))};
  struct Case { std::string message; Node n; Values feeds; };
  const Case cases[] = {
      {"key and value must be given together", dmmha({"q", "k"}), {q, q}},
      {"value has shape (2, 1, 7), expected (2, 1, a multiple of 2)", dmmha({"q", "k", "v"}), {q, q, zeros({2, 1, 7})}},
      {"query's hidden size 9 is not a multiple of num_heads 2", dmmha({"q", "k", "v"}), {zeros({2, 1, 9}), zeros({2, 1, 9}), q}},
      {"packed QKV query has width 8, expected 3 * num_heads * head_size", dmmha({"q"}), {q}},
      {"past_key and past_value must be given together", dmmha({"q", "k", "v", "", "", "pk"}), {q, q, q, Value(), Value(), past}},
      {"past_present_share_buffer=1 needs past_key and past_value", dmmha({"q", "k", "v"}, shared), {q, q, q}},
      {"past_sequence_length must have one element, got shape (2,)", dmmha({"q", "k", "v", "", "", "pk", "pv", "psl"}, shared),
       {q, q, q, Value(), Value(), past, past, tensor<int32_t>({2}, {1, 1})}},
      {"past_sequence_length -1 is outside [0, 3) (the rows of past_key)", dmmha({"q", "k", "v", "", "", "pk", "pv", "psl"}, shared),
       {q, q, q, Value(), Value(), past, past, tensor<int32_t>({1}, {-1})}},
      {"beam_width 0 does not divide the batch 2", dmmha({"q", "k", "v", "", "", "", "", "", "bw"}),
       {q, q, q, Value(), Value(), Value(), Value(), Value(), tensor<int32_t>({1}, {0})}},
      {"cache_indirection needs past_present_share_buffer=1", dmmha({"q", "k", "v", "", "", "pk", "pv", "", "", "ci"}),
       {q, q, q, Value(), Value(), past, past, Value(), Value(), tensor<int32_t>({2, 1, 3}, std::vector<int32_t>(6, 0))}},
      {"cache_indirection holds beam -1 at (0, 0, 0); beam_width is 1", dmmha({"q", "k", "v", "", "", "pk", "pv", "psl", "", "ci"}, shared),
       {q, q, q, Value(), Value(), past, past, tensor<int32_t>({1}, {2}), Value(), tensor<int32_t>({2, 1, 3}, {-1, 0, 0, 0, 0, 0})}},
      // cross attention (4-D key and value)
      {"query's hidden size 9 is not a multiple of num_heads 2", dmmha({"q", "k", "v"}), {zeros({2, 1, 9}), past, past}},
      {"key has shape (2, 1, 3, 4), expected (2, 2, L, 4)", dmmha({"q", "k", "v"}), {q, zeros({2, 1, 3, 4}), past}},
      {"value has shape (2, 2, 2, 4), expected (2, 2, 3, hv)", dmmha({"q", "k", "v"}), {q, past, zeros({2, 2, 2, 4})}},
      {"cross attention (4-D key) has no present_key or present_value outputs", dmmha({"q", "k", "v"}, {}, {"y", "", "present_value"}),
       {q, past, past}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.message);
    CHECK_THROWS_WITH_AS(run_node(c.n, c.feeds), (A + c.message).c_str(), Error);
  }
  CHECK_THROWS_WITH_AS(run_node(node("DecoderMaskedMultiHeadAttention", {"q"}, {"y"}, {attr("num_heads", int64_t(0))}, "d", "com.microsoft"), {q}),
                       (A + "num_heads must be positive, got 0").c_str(), Error);
}

TEST_CASE("DecoderMaskedMultiHeadAttention refuses each dimension of key and value that disagrees") {
  const std::string A = "node 'd' (com.microsoft:DecoderMaskedMultiHeadAttention): ";
  auto zeros = [](Shape s) { return tensor<float>(s, std::vector<float>(size_t(shape_size(s)), 0.0f)); };
  const Tensor q = zeros({2, 1, 8}), kv4 = zeros({2, 2, 3, 4});
  struct Case { std::string message; Values feeds; };
  const Case cases[] = {
      // cross attention: (B, N, L, h) key and value
      {"key has shape (1, 2, 3, 4), expected (2, 2, L, 4)", {q, zeros({1, 2, 3, 4}), kv4}},
      {"key has shape (2, 2, 3, 5), expected (2, 2, L, 4)", {q, zeros({2, 2, 3, 5}), kv4}},
      {"value has shape (1, 2, 3, 4), expected (2, 2, 3, hv)", {q, kv4, zeros({1, 2, 3, 4})}},
      {"value has shape (2, 1, 3, 4), expected (2, 2, 3, hv)", {q, kv4, zeros({2, 1, 3, 4})}},
      // self attention: (B, 1, D) key and value
      {"value has shape (1, 1, 8), expected (2, 1, a multiple of 2)", {q, q, zeros({1, 1, 8})}},
      {"value has shape (2, 2, 8), expected (2, 1, a multiple of 2)", {q, q, zeros({2, 2, 8})}},
      {"past_key and past_value must be given together", {q, q, q, Value(), Value(), Value(), zeros({2, 2, 3, 4})}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.message);
    std::vector<std::string> ins;  // the given inputs named, the absent ones ""
    for (size_t i = 0; i < c.feeds.size(); ++i) ins.push_back(c.feeds[i].is_absent() ? "" : "i" + std::to_string(i));
    CHECK_THROWS_WITH_AS(run_node(node("DecoderMaskedMultiHeadAttention", ins, {"y"}, {attr("num_heads", int64_t(2))}, "d", "com.microsoft"), c.feeds),
                         (A + c.message).c_str(), Error);
  }
}
