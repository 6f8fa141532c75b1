// com.microsoft GroupQueryAttention against an oracle written here in plain double loops: each
// batch row's key sequence is built position by position (past rows, then the new ones), key
// heads are repeat-interleaved to the query heads, RoPE turns (x1, x2) as the complex number
// x1 + i x2 times e^(i angle), and softmax runs over the keys the mask lets through. Covers packed
// and separate QKV, prefill, decode in concat and shared-buffer mode, right padding, rotary
// variants, window, softcap, smooth softmax / head_sink, attention_bias, causal 0, output_qk,
// chunked prefill, KV-shared layers, q/k norm, the window-sized cache over a generation, narrow
// types and errors.
#include <cmath>
#include <functional>
#include <random>

#include <cstring>

#include "refeval/compute_vector.h"
#include "refeval/threads.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {

struct Problem {
  int64_t B = 1, S = 4, N = 4, Nkv = 2, H = 4, P = 0, total = 4;
  std::vector<int32_t> seqlens{3};
  Shape seqlens_shape{};                   // empty: (B)
  bool packed = false;
  std::vector<double> q{}, k{}, v{}, pk{}, pv{};  // (B,S,N*H), (B,S,Nkv*H) x2, (B,Nkv,P,H) x2
  double scale = 0, softcap = 0;
  int64_t window = -1, qk_output = 0;
  bool causal = true, smooth = false;
  std::vector<double> sink{};              // (N) or empty
  std::vector<double> bias{};              // attention_bias or empty
  Shape bias_shape{};
  int64_t half = 0;                        // rotary dim / 2; 0: no rotary
  bool interleaved = false;
  std::vector<int64_t> position_ids{};     // (B, S) or empty
  std::vector<double> q_norm{}, k_norm{};  // (H) or empty
  int64_t max_pos = 16;
  double frequency(int64_t i) const { return std::pow(100.0, -double(i) / double(half)); }
};

struct Expected { std::vector<double> out, pk, pv, qk; };

std::vector<double> random_values(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(n);
  for (double& x : v) x = double(float(u(gen)));  // exactly representable as float
  return v;
}

// Fills q, k, v and the past with random values for the sizes in p.
Problem random_problem(Problem p, unsigned seed) {
  p.q = random_values(size_t(p.B * p.S * (p.packed ? p.N + 2 * p.Nkv : p.N) * p.H), seed);
  p.k = random_values(size_t(p.B * p.S * p.Nkv * p.H), seed + 1);
  p.v = random_values(size_t(p.B * p.S * p.Nkv * p.H), seed + 2);
  p.pk = random_values(size_t(p.B * p.Nkv * p.P * p.H), seed + 3);
  p.pv = random_values(size_t(p.B * p.Nkv * p.P * p.H), seed + 4);
  return p;
}

void rms(std::vector<double>& x, const std::vector<double>& w) {
  double ms = 0;
  for (double e : x) ms += e * e / double(x.size());
  for (size_t d = 0; d < x.size(); ++d) x[d] = x[d] / std::sqrt(ms + 1e-6) * w[d];
}

// RoPE of one head vector at position pos, pair i being (x[i], x[i + half]) or (x[2i], x[2i + 1]).
void rope(const Problem& p, std::vector<double>& x, int64_t pos) {
  for (int64_t i = 0; i < p.half; ++i) {
    const size_t a = size_t(p.interleaved ? 2 * i : i), b = size_t(p.interleaved ? 2 * i + 1 : i + p.half);
    const double angle = double(pos) * p.frequency(i);
    const double re = x[a] * std::cos(angle) - x[b] * std::sin(angle), im = x[a] * std::sin(angle) + x[b] * std::cos(angle);
    x[a] = re, x[b] = im;
  }
}

Expected oracle(const Problem& p) {
  const int64_t B = p.B, S = p.S, N = p.N, Nkv = p.Nkv, H = p.H, Tp = std::max(p.total, p.P);
  const bool first = S == p.total;
  Expected e{std::vector<double>(size_t(B * S * N * H)), std::vector<double>(size_t(B * Nkv * Tp * H)),
             std::vector<double>(size_t(B * Nkv * Tp * H)), std::vector<double>(size_t(B * N * S * p.total))};
  const int64_t qkv_width = p.packed ? (N + 2 * Nkv) * H : 0;
  auto q_at = [&](int64_t b, int64_t s, int64_t n, int64_t d) {
    return p.packed ? p.q[size_t((b * S + s) * qkv_width + n * H + d)] : p.q[size_t(((b * S + s) * N + n) * H + d)];
  };
  auto kv_at = [&](const std::vector<double>& t, int64_t part, int64_t b, int64_t s, int64_t g, int64_t d) {
    return p.packed ? p.q[size_t((b * S + s) * qkv_width + (N + (part - 1) * Nkv + g) * H + d)] : t[size_t(((b * S + s) * Nkv + g) * H + d)];
  };
  for (int64_t b = 0; b < B; ++b) {
    const int64_t T = p.seqlens[size_t(b)] + 1, start = first ? 0 : T - S, rows = first ? S : T;
    auto position = [&](int64_t s) {
      if (p.position_ids.empty()) return start + s;
      return first ? p.position_ids[0] + s : p.position_ids[size_t(b * S + s)];
    };
    // keys[g][t], values[g][t]: the row's sequence, past rows first, rotated new keys after
    std::vector<std::vector<std::vector<double>>> keys(static_cast<size_t>(Nkv)), values(static_cast<size_t>(Nkv));
    for (int64_t g = 0; g < Nkv; ++g)
      for (int64_t t = 0; t < rows; ++t) {
        std::vector<double> kt(static_cast<size_t>(H)), vt(static_cast<size_t>(H));
        for (int64_t d = 0; d < H; ++d) {
          const bool past = t < start;
          kt[size_t(d)] = past ? p.pk[size_t(((b * Nkv + g) * p.P + t) * H + d)] : kv_at(p.k, 1, b, t - start, g, d);
          vt[size_t(d)] = past ? p.pv[size_t(((b * Nkv + g) * p.P + t) * H + d)] : kv_at(p.v, 2, b, t - start, g, d);
        }
        if (t >= start) {
          if (!p.k_norm.empty()) rms(kt, p.k_norm);
          if (p.half) rope(p, kt, position(t - start));
        }
        for (int64_t d = 0; d < H; ++d) {
          e.pk[size_t(((b * Nkv + g) * Tp + t) * H + d)] = kt[size_t(d)];
          e.pv[size_t(((b * Nkv + g) * Tp + t) * H + d)] = vt[size_t(d)];
        }
        keys[size_t(g)].push_back(kt), values[size_t(g)].push_back(vt);
      }
    for (int64_t n = 0; n < N; ++n) {
      // repeat-interleave: query heads n of a group of N / Nkv share key head n / (N / Nkv)
      const auto& kh = keys[size_t(n / (N / Nkv))];
      const auto& vh = values[size_t(n / (N / Nkv))];
      for (int64_t s = 0; s < S; ++s) {
        std::vector<double> qs(static_cast<size_t>(H));
        for (int64_t d = 0; d < H; ++d) qs[size_t(d)] = q_at(b, s, n, d);
        if (!p.q_norm.empty()) rms(qs, p.q_norm);
        if (p.half) rope(p, qs, position(s));
        const int64_t pos = start + s;
        std::vector<int64_t> seen;
        std::vector<double> score;
        for (int64_t t = 0; t < T; ++t) {
          if ((p.causal && t > pos) || (p.window >= 0 && t <= pos - p.window)) continue;
          double x = 0;
          for (int64_t d = 0; d < H; ++d) x += qs[size_t(d)] * kh[size_t(t)][size_t(d)];
          x *= p.scale != 0 ? p.scale : 1 / std::sqrt(double(H));
          if (p.softcap > 0) x = p.softcap * std::tanh(x / p.softcap);
          if (!p.bias.empty()) {
            const int64_t bb = p.bias_shape[0] == 1 ? 0 : b, bn = p.bias_shape[1] == 1 ? 0 : n;
            x += p.bias[size_t(((bb * p.bias_shape[1] + bn) * S + s) * p.total + t)];
          }
          seen.push_back(t), score.push_back(x);
        }
        double denominator = (p.smooth || !p.sink.empty()) ? std::exp(p.sink.empty() ? 0.0 : p.sink[size_t(n)]) : 0.0;
        for (double x : score) denominator += std::exp(x);
        for (size_t j = 0; j < seen.size(); ++j) {
          const double w = std::exp(score[j]) / denominator;
          e.qk[size_t(((b * N + n) * S + s) * p.total + seen[j])] = p.qk_output == 1 ? score[j] : w;
          for (int64_t d = 0; d < H; ++d) e.out[size_t(((b * S + s) * N + n) * H + d)] += w * vh[size_t(seen[j])][size_t(d)];
        }
      }
    }
  }
  return e;
}

Tensor floats(const Shape& shape, const std::vector<double>& v, DType dt = DType::Float) { return from_doubles(dt, shape, v); }

// The node's inputs (absent ones as "") and feeds for p.
Values run_gqa(const Problem& p, DType dt = DType::Float, std::vector<Attribute> extra = {}) {
  Values in(16);
  const int64_t width = p.packed ? (p.N + 2 * p.Nkv) * p.H : p.N * p.H;
  in[0] = floats({p.B, p.S, width}, p.q, dt);
  if (!p.packed) in[1] = floats({p.B, p.S, p.Nkv * p.H}, p.k, dt), in[2] = floats({p.B, p.S, p.Nkv * p.H}, p.v, dt);
  if (p.P > 0) in[3] = floats({p.B, p.Nkv, p.P, p.H}, p.pk, dt), in[4] = floats({p.B, p.Nkv, p.P, p.H}, p.pv, dt);
  in[5] = tensor<int32_t>(p.seqlens_shape.empty() ? Shape{p.B} : p.seqlens_shape, p.seqlens);
  in[6] = Tensor::scalar<int32_t>(int32_t(p.total));
  std::vector<Attribute> attrs = {attr("num_heads", p.N), attr("kv_num_heads", p.Nkv)};
  if (p.half) {
    std::vector<double> c, s;
    for (int64_t pos = 0; pos < p.max_pos; ++pos)
      for (int64_t i = 0; i < p.half; ++i) c.push_back(std::cos(double(pos) * p.frequency(i))), s.push_back(std::sin(double(pos) * p.frequency(i)));
    in[7] = floats({p.max_pos, p.half}, c, dt), in[8] = floats({p.max_pos, p.half}, s, dt);
    attrs.push_back(attr("do_rotary", int64_t(1)));
    attrs.push_back(attr("rotary_interleaved", int64_t(p.interleaved)));
  }
  if (!p.position_ids.empty()) in[9] = tensor<int64_t>({p.B, p.S}, p.position_ids);
  if (!p.bias.empty()) in[10] = floats(p.bias_shape, p.bias, dt);
  if (!p.sink.empty()) in[11] = floats({p.N}, p.sink, dt);
  if (!p.q_norm.empty()) in[14] = floats({p.H}, p.q_norm, dt), in[15] = floats({p.H}, p.k_norm, dt);
  if (p.scale != 0) attrs.push_back(attr("scale", float(p.scale)));
  if (p.softcap != 0) attrs.push_back(attr("softcap", float(p.softcap)));
  if (p.window != -1) attrs.push_back(attr("local_window_size", p.window));
  if (!p.causal) attrs.push_back(attr("causal", int64_t(0)));
  if (p.smooth) attrs.push_back(attr("smooth_softmax", int64_t(1)));
  if (p.qk_output) attrs.push_back(attr("qk_output", p.qk_output));
  for (auto& a : extra) attrs.push_back(std::move(a));
  std::vector<std::string> names;
  for (size_t i = 0; i < in.size(); ++i) names.push_back(in[i].is_absent() ? "" : "i" + std::to_string(i));
  while (!names.empty() && names.back().empty()) names.pop_back();
  std::vector<std::string> outs = {"out", "present_key", "present_value"};
  if (p.qk_output) outs.push_back("qk");
  return run_node(node("GroupQueryAttention", names, outs, attrs, "gqa", "com.microsoft"), in, 1);
}

// Runs p and compares every output with the oracle.
void check_problem(const Problem& p, DType dt = DType::Float, Tolerance tol = {1e-5, 1e-6}) {
  const Values got = run_gqa(p, dt);
  const Expected e = oracle(p);
  const int64_t Tp = std::max(p.total, p.P);
  REQUIRE(got.size() == (p.qk_output ? 4u : 3u));
  check_equal(got[0], floats({p.B, p.S, p.N * p.H}, e.out, dt), tol);
  check_equal(got[1], floats({p.B, p.Nkv, Tp, p.H}, e.pk, dt), tol);
  check_equal(got[2], floats({p.B, p.Nkv, Tp, p.H}, e.pv, dt), tol);
  if (p.qk_output) check_equal(got[3], floats({p.B, p.N, p.S, p.total}, e.qk, dt), tol);
}

Problem with(Problem p, auto&& change) { change(p); return p; }

}  // namespace

TEST_CASE("GroupQueryAttention prefill: separate and packed QKV, batch 2 with right padding") {
  const Problem base = random_problem({}, 1);
  check_problem(base);
  // packed (B, S, (N + 2 Nkv) H): per token q heads, k heads, v heads
  check_problem(random_problem(with(base, [](Problem& p) { p.packed = true; }), 2));
  // row 1 holds 2 valid tokens of 4: its padded queries 2 and 3 see only keys 0 and 1
  const Problem padded = random_problem(with(base, [](Problem& p) { p.B = 2, p.seqlens = {3, 1}; }), 3);
  check_problem(padded);
  check_problem(random_problem(with(padded, [](Problem& p) { p.packed = true; }), 4));
  // MQA (one key head for all) and MHA (as many key heads as query heads)
  check_problem(random_problem(with(base, [](Problem& p) { p.Nkv = 1; }), 5));
  check_problem(random_problem(with(base, [](Problem& p) { p.Nkv = 4; }), 6));
}

TEST_CASE("GroupQueryAttention decode: concat past and shared max-length buffer, padded rows") {
  // token generation S = 1, past of 5: row 0 has 5 past tokens (T = 6), row 1 only 2 (T = 3).
  // present: concat mode has total 6 rows; past rows after a row's own length become zeros
  const Problem concat = random_problem({.B = 2, .S = 1, .P = 5, .total = 6, .seqlens = {5, 2}}, 10);
  check_problem(concat);
  check_problem(random_problem(with(concat, [](Problem& p) { p.packed = true; }), 11));
  // shared buffer: past of 8 >= total 6 keeps 8 rows, the new token goes to row T_b - 1
  check_problem(random_problem(with(concat, [](Problem& p) { p.P = 8; }), 12));
  // seqlens_k given as (B, 1), as onnx-community's Gemma-4 export feeds it
  check_problem(random_problem(with(concat, [](Problem& p) { p.seqlens_shape = {2, 1}; }), 13));
}

TEST_CASE("GroupQueryAttention subsequent prompt (chunked prefill) and a KV-shared layer") {
  // 3 new tokens after 4 cached ones, batch 1: queries at positions 4, 5, 6
  check_problem(random_problem({.S = 3, .P = 4, .total = 7, .seqlens = {6}}, 20));
  // shared buffer of 9 rows, only 5 valid: queries at 2, 3, 4
  check_problem(random_problem({.S = 3, .P = 9, .total = 7, .seqlens = {4}}, 21));

  // key and value of length 0: every key comes from past_key (a layer reusing another's cache);
  // query s sees past rows [0, T_b - S + s], present is past's first T_b rows
  Problem p = random_problem({.B = 2, .S = 1, .N = 2, .Nkv = 1, .P = 5, .total = 5, .seqlens = {4, 2}}, 22);
  Values in(16);
  in[0] = floats({2, 1, 8}, p.q), in[1] = floats({2, 0, 4}, {}), in[2] = floats({2, 0, 4}, {});
  in[3] = floats({2, 1, 5, 4}, p.pk), in[4] = floats({2, 1, 5, 4}, p.pv);
  in[5] = tensor<int32_t>({2}, p.seqlens), in[6] = Tensor::scalar<int32_t>(5);
  const Values got = run_node(node("GroupQueryAttention", {"q", "k", "v", "pk", "pv", "sk", "t"}, {"o", "pko", "pvo"},
                                   {attr("num_heads", int64_t(2)), attr("kv_num_heads", int64_t(1))}, "gqa", "com.microsoft"),
                              in, 1);
  // the same as a decode step whose new key and value are the last valid past row
  Problem decode = p;
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t d = 0; d < 4; ++d) {
      const int64_t last = p.seqlens[size_t(b)];
      decode.k[size_t(b * 4 + d)] = p.pk[size_t((b * 5 + last) * 4 + d)];
      decode.v[size_t(b * 4 + d)] = p.pv[size_t((b * 5 + last) * 4 + d)];
    }
  const Expected e = oracle(decode);
  check_equal(got[0], floats({2, 1, 8}, e.out), {1e-5, 1e-6});
  check_equal(got[1], floats({2, 1, 5, 4}, e.pk));
}

TEST_CASE("GroupQueryAttention rotary: halves, interleaved, partial, decode positions, position_ids") {
  const Problem prefill = {.B = 2, .S = 3, .H = 8, .total = 3, .seqlens = {2, 1}, .half = 4};
  const Problem decode = {.B = 2, .S = 1, .H = 8, .P = 4, .total = 5, .seqlens = {4, 2}, .half = 4};
  unsigned seed = 30;
  for (const Problem& shape : {prefill, decode})
    for (bool interleaved : {false, true})
      for (int64_t half : {4, 2}) {  // full (rot = H) and partial (rot = H / 2) rotation
        CAPTURE(interleaved);
        CAPTURE(half);
        CAPTURE(shape.S);
        check_problem(random_problem(with(shape, [&](Problem& p) { p.interleaved = interleaved, p.half = half; }), seed++));
        check_problem(random_problem(with(shape, [&](Problem& p) { p.interleaved = interleaved, p.half = half, p.packed = true; }), seed++));
      }
  // position_ids: per token on a decode step; on a first prompt only the first value counts
  check_problem(random_problem(with(decode, [](Problem& p) { p.position_ids = {9, 3}; }), 40));
  check_problem(random_problem(with(prefill, [](Problem& p) { p.position_ids = {5, 0, 0, 1, 1, 1}; }), 41));
  // q/k norm weights: per-head RMS norm before RoPE
  check_problem(random_problem(with(decode, [](Problem& p) { p.q_norm = random_values(8, 42), p.k_norm = random_values(8, 43); }), 44));
}

TEST_CASE("GroupQueryAttention score options: window, softcap, sinks, scale, attention_bias, causal 0") {
  const Problem base = {.B = 2, .S = 5, .total = 5, .seqlens = {4, 2}};
  const Problem step = {.B = 2, .S = 1, .P = 6, .total = 7, .seqlens = {6, 3}};
  struct Case { const char* what; std::function<void(Problem&)> change; };
  const Case cases[] = {
      {"local window 2 (the query and one key before it)", [](Problem& p) { p.window = 2; }},
      {"local window 1 (padded rows see nothing: zeros)", [](Problem& p) { p.window = 1; }},
      {"softcap", [](Problem& p) { p.softcap = 0.4; }},
      {"smooth softmax", [](Problem& p) { p.smooth = true; }},
      {"head_sink", [](Problem& p) { p.sink = {0.5, -1, 2, 0}; }},
      {"scale", [](Problem& p) { p.scale = 0.9; }},
      {"attention_bias (B, N, S, T)", [](Problem& p) { p.bias_shape = {p.B, p.N, p.S, p.total}; }},
      {"attention_bias (1, 1, S, T)", [](Problem& p) { p.bias_shape = {1, 1, p.S, p.total}; }},
      {"attention_bias (B, 1, S, T) with softcap", [](Problem& p) { p.bias_shape = {p.B, 1, p.S, p.total}, p.softcap = 0.5; }},
      {"causal 0: every valid key", [](Problem& p) { p.causal = false; }},
      {"output_qk 1: scores after softcap and bias", [](Problem& p) { p.qk_output = 1, p.softcap = 0.5, p.bias_shape = {1, p.N, p.S, p.total}; }},
      {"output_qk 2: probabilities, window", [](Problem& p) { p.qk_output = 2, p.window = 3; }},
  };
  unsigned seed = 50;
  for (const auto& c : cases)
    for (const Problem& shape : {base, step}) {
      CAPTURE(c.what);
      CAPTURE(shape.S);
      Problem p = random_problem(with(shape, c.change), seed++);
      if (!p.bias_shape.empty()) p.bias = random_values(size_t(shape_size(p.bias_shape)), seed++);
      check_problem(p);
    }
}

TEST_CASE("GroupQueryAttention long prompts: blocks of query rows and only the keys they see") {
  // More query rows than one block of the kernel (32): the blocks' stacked query heads each see a
  // different range of keys (causal: up to their last row; a window: from their first row's).
  const Problem prompt = {.B = 2, .S = 70, .N = 4, .Nkv = 2, .H = 8, .total = 70, .seqlens = {69, 40}};
  check_problem(random_problem(prompt, 70));
  check_problem(random_problem(with(prompt, [](Problem& p) { p.window = 20; }), 71));
  check_problem(random_problem(with(prompt, [](Problem& p) { p.causal = false; }), 72));
  check_problem(random_problem(with(prompt, [](Problem& p) { p.qk_output = 2, p.window = 9, p.Nkv = 1; }), 73));
  // a chunked prefill of 40 after 30 cached tokens: queries at positions 30 .. 69
  check_problem(random_problem({.S = 40, .N = 4, .Nkv = 2, .H = 8, .P = 30, .total = 70, .seqlens = {69}}, 74));
  // a window past the first block's reach: its first rows see nothing before position 0
  check_problem(random_problem(with(prompt, [](Problem& p) { p.window = 1, p.seqlens = {69, 10}; }), 75));
}

TEST_CASE("GroupQueryAttention gives the same bits on one thread and on two") {
  // decoding (heads split across the threads) and a long prompt (products split)
  const Problem step = {.B = 2, .S = 1, .N = 8, .Nkv = 2, .H = 32, .P = 600, .total = 601, .seqlens = {600, 300}};
  const Problem prompt = {.B = 1, .S = 80, .N = 8, .Nkv = 2, .H = 32, .total = 80, .seqlens = {79}};
  unsigned seed = 80;
  for (const Problem& shape : {step, prompt}) {
    const Problem p = random_problem(shape, seed++);
    set_thread_count(1);
    const Values one = run_gqa(p);
    set_thread_count(2);
    const Values two = run_gqa(p);
    set_thread_count(1);
    CAPTURE(p.S);
    REQUIRE(one.size() == two.size());
    for (size_t i = 0; i < one.size(); ++i) {
      const Tensor &x = one[i].tensor(), &y = two[i].tensor();
      REQUIRE(x.shape() == y.shape());
      CHECK(std::memcmp(x.data<float>(), y.data<float>(), size_t(x.size()) * sizeof(float)) == 0);
    }
    check_problem(p);
  }
}

TEST_CASE("GroupQueryAttention sliding_window_cache equals a full cache over a generation") {
  // W = 3 and a cache of C = 5 rows (gap G = 3): prefill 4 tokens, then 6 decode steps. Each step
  // feeds the window-sized present back; the full-cache run keeps every row. The window-sized
  // cache holds L(T) rows: T up to 5, then T - 3 * ceil((T - 5) / 3).
  const int64_t N = 2, Nkv = 1, H = 4, W = 3, C = 5;
  auto rows_kept = [&](int64_t T) { return T <= C ? T : T - 3 * ((T - C + 2) / 3); };
  Values window_cache = {floats({1, Nkv, C, H}, std::vector<double>(size_t(C * H), 0.0)), Value()};
  window_cache[1] = window_cache[0];
  std::vector<double> full_k, full_v;  // (T, H): Nkv = 1
  int64_t T = 0;
  for (int64_t S : {4, 1, 1, 1, 1, 1, 1}) {
    CAPTURE(T);
    const Problem p = random_problem({.S = S, .N = N, .Nkv = Nkv, .H = H, .P = T, .total = T + S, .seqlens = {int32_t(T + S - 1)},
                                      .window = W},
                                     unsigned(60 + T));
    Problem full = p;
    full.pk = full_k, full.pv = full_v;
    const Expected e = oracle(full);
    Values in(16);
    in[0] = floats({1, S, N * H}, p.q), in[1] = floats({1, S, Nkv * H}, p.k), in[2] = floats({1, S, Nkv * H}, p.v);
    in[3] = window_cache[0], in[4] = window_cache[1];
    in[5] = tensor<int32_t>({1}, {int32_t(T + S - 1)}), in[6] = Tensor::scalar<int32_t>(int32_t(T + S));
    const Values got = run_node(node("GroupQueryAttention", {"q", "k", "v", "pk", "pv", "sk", "t"}, {"o", "pko", "pvo"},
                                     {attr("num_heads", N), attr("kv_num_heads", Nkv), attr("local_window_size", W),
                                      attr("sliding_window_cache", int64_t(1))},
                                     "gqa", "com.microsoft"),
                                in, 1);
    check_equal(got[0], floats({1, S, N * H}, e.out), {1e-5, 1e-6});
    T += S;
    // the present rows are the last rows_kept(T) keys of the full sequence, then zeros
    const int64_t kept = rows_kept(T);
    std::vector<double> expect_k(size_t(C * H), 0.0), expect_v(size_t(C * H), 0.0);
    std::copy(e.pk.end() - kept * H, e.pk.end(), expect_k.begin());
    std::copy(e.pv.end() - kept * H, e.pv.end(), expect_v.begin());
    check_equal(got[1], floats({1, 1, C, H}, expect_k));
    check_equal(got[2], floats({1, 1, C, H}, expect_v));
    window_cache = {got[1], got[2]};
    full_k = e.pk, full_v = e.pv;
  }
}

TEST_CASE("GroupQueryAttention float16 and bfloat16 compute in double and round once") {
  Problem p = random_problem({.B = 2, .S = 1, .H = 8, .P = 3, .total = 4, .seqlens = {3, 1}, .half = 4}, 70);
  for (DType dt : {DType::Float16, DType::BFloat16}) {
    CAPTURE(dtype_short_name(dt));
    // the oracle on the inputs as the narrow type holds them, rounded to it at the end
    Problem narrow = p;
    for (auto* v : {&narrow.q, &narrow.k, &narrow.v, &narrow.pk, &narrow.pv}) *v = to_doubles(floats({int64_t(v->size())}, *v, dt));
    const Values got = run_gqa(narrow, dt);
    CHECK(got[0].tensor().dtype() == dt);
    check_equal(got[0], floats({2, 1, 32}, oracle(narrow).out, dt), {dt == DType::Float16 ? 2e-3 : 2e-2, 1e-3});
  }
}

TEST_CASE("GroupQueryAttention errors name the tensor or attribute") {
  const Problem ok = random_problem({.B = 2, .S = 1, .P = 3, .total = 4, .seqlens = {3, 2}}, 80);
  auto fails = [&](Problem p, const char* message, std::vector<Attribute> extra = {}) {
    CAPTURE(message);
    CHECK_THROWS_WITH_AS(run_gqa(p, DType::Float, std::move(extra)), doctest::Contains(message), Error);
  };
  fails(with(ok, [](Problem& p) { p.seqlens = {4, 2}; }), "seqlens_k[0] = 4 is out of range [0, total_sequence_length 4)");
  fails(with(ok, [](Problem& p) { p.seqlens = {-1, 2}; }), "seqlens_k[0] = -1 is out of range");
  fails(with(ok, [](Problem& p) { p.seqlens = {5, 2}, p.total = 6; }), "seqlens_k[0] = 5 needs 5 past rows, but past_key holds 3");
  fails(random_problem({.B = 2, .S = 3, .P = 2, .total = 5, .seqlens = {4, 4}}, 81), "needs batch size 1, got 2");
  fails(random_problem({.S = 3, .P = 2, .total = 5, .seqlens = {1}}, 82), "seqlens_k[0] = 1 is too small for 3 new tokens");
  fails(random_problem(with(ok, [](Problem& p) { p.Nkv = 3; }), 83), "num_heads 4 is not a multiple of kv_num_heads 3");
  fails(ok, "k_quant_type PER_TENSOR: a quantized KV cache is not supported", {attr("k_quant_type", "PER_TENSOR")});
  fails(ok, "kv_cache_bit_width 4", {attr("kv_cache_bit_width", int64_t(4))});
  fails(ok, "local_window_size must be -1 when causal is 0", {attr("causal", int64_t(0)), attr("local_window_size", int64_t(2))});
  fails(ok, "sliding_window_cache=1 requires local_window_size > 0", {attr("sliding_window_cache", int64_t(1))});
  fails(ok, "qk_output is set but output 3", {attr("qk_output", int64_t(1))});
  fails(with(ok, [](Problem& p) { p.half = 1, p.max_pos = 3; }), "position 3 is outside cos_cache's 3 rows");
  fails(with(ok, [](Problem& p) { p.half = 3; }), "cos_cache has shape (16, 3), expected 1 to 2 columns");
  fails(with(ok, [](Problem& p) { p.bias = {0, 0}, p.bias_shape = {1, 2}; }), "attention_bias has shape (1, 2), expected (2 or 1, 4 or 1, 1, 4)");
  fails(with(ok, [](Problem& p) { p.q_norm = {1, 1, 1, 1}, p.k_norm = {1, 1, 1, 1}; }), "q_norm_weight and k_norm_weight need do_rotary=1");

  // shapes that disagree: a packed query of the wrong width, key, past, seqlens_k
  auto gqa_node = [](std::vector<std::string> inputs) {
    return node("GroupQueryAttention", std::move(inputs), {"o"}, {attr("num_heads", int64_t(4)), attr("kv_num_heads", int64_t(2))}, "gqa",
                "com.microsoft");
  };
  const Node n = gqa_node({"q", "k", "v", "", "", "sk", "t"}), with_past = gqa_node({"q", "k", "v", "pk", "pv", "sk", "t"});
  const Node packed = gqa_node({"q", "", "", "", "", "sk", "t"});
  auto zeros = [](Shape s) { return floats(s, std::vector<double>(size_t(shape_size(s)), 0.0)); };
  const Tensor sk = tensor<int32_t>({1}, {0}), total = Tensor::scalar<int32_t>(1);
  CHECK_THROWS_WITH_AS(run_node(packed, {zeros({1, 1, 20}), Value(), Value(), Value(), Value(), sk, total}, 1),
                       doctest::Contains("packed query has width 20, not a multiple of num_heads + 2 * kv_num_heads = 8"), Error);
  CHECK_THROWS_WITH_AS(run_node(n, {zeros({1, 1, 16}), zeros({1, 1, 6}), zeros({1, 1, 6}), Value(), Value(), sk, total}, 1),
                       doctest::Contains("key has shape (1, 1, 6), expected (1, 1 or 0, 8)"), Error);
  CHECK_THROWS_WITH_AS(run_node(with_past, {zeros({1, 1, 16}), zeros({1, 1, 8}), zeros({1, 1, 8}), zeros({1, 2, 3, 5}), zeros({1, 2, 3, 4}), sk, total}, 1),
                       doctest::Contains("past_key has shape (1, 2, 3, 5), expected (1, 2, 3, 4)"), Error);
  CHECK_THROWS_WITH_AS(run_node(n, {zeros({1, 1, 16}), zeros({1, 1, 8}), zeros({1, 1, 8}), Value(), Value(), tensor<int32_t>({2}, {0, 0}), total}, 1),
                       doctest::Contains("seqlens_k has shape (2,), expected (1)"), Error);
  CHECK_THROWS_WITH_AS(run_node(n, {zeros({1, 1, 16}), zeros({1, 1, 8}), zeros({1, 1, 8}), Value(), Value(), tensor<int64_t>({1}, {0}), total}, 1),
                       doctest::Contains("seqlens_k has element type int64, expected int32"), Error);
  CHECK_THROWS_WITH_AS(run_node(gqa_node({"q", "k", "v", "", "", "sk", "t", "", "", "", "", "sink"}),
                                {zeros({1, 1, 16}), zeros({1, 1, 8}), zeros({1, 1, 8}), Value(), Value(), sk, total, Value(), Value(), Value(),
                                 Value(), zeros({2})},
                                1),
                       doctest::Contains("head_sink has shape (2,), expected (4,)"), Error);
}

TEST_CASE("GroupQueryAttention refusals: one exact line each") {
  const std::string A = "node 'gqa' (com.microsoft:GroupQueryAttention): ";
  const Problem ok = random_problem({.B = 2, .S = 1, .P = 3, .total = 4, .seqlens = {3, 2}}, 90);
  auto fails = [&](Problem p, const std::string& message, std::vector<Attribute> extra = {}) {
    CAPTURE(message);
    CHECK_THROWS_WITH_AS(run_gqa(p, DType::Float, std::move(extra)), (A + message).c_str(), Error);
  };
  // attributes
  fails(random_problem(with(ok, [](Problem& p) { p.Nkv = 0; }), 93), "num_heads 4 and kv_num_heads 0 must be positive");
  fails(with(ok, [](Problem& p) { p.softcap = -1; }), "softcap -1 is negative");
  fails(ok, "local_window_size -2 must be -1 (off) or >= 0", {attr("local_window_size", int64_t(-2))});
  fails(ok, "qk_output 3 is not 0, 1 (before softmax) or 2 (after)", {attr("qk_output", int64_t(3))});
  fails(ok, "qk_norm_epsilon 0 must be positive", {attr("qk_norm_epsilon", 0.0f)});
  fails(with(ok, [](Problem& p) { p.qk_output = 1; }), "qk_output is not supported with sliding_window_cache=1",
        {attr("local_window_size", int64_t(2)), attr("sliding_window_cache", int64_t(1))});
  // the window-sized cache needs a past of at least the window, new keys and no attention_bias
  const Problem windowed = random_problem({.B = 1, .S = 1, .P = 3, .total = 4, .seqlens = {3}}, 91);
  const std::vector<Attribute> window3 = {attr("local_window_size", int64_t(3)), attr("sliding_window_cache", int64_t(1))};
  fails(random_problem({.B = 1, .S = 1, .total = 1, .seqlens = {0}}, 92), "sliding_window_cache=1 needs past_key and past_value (the window-sized cache)",
        window3);
  fails(windowed, "past_key holds 3 rows, fewer than local_window_size 4",
        {attr("local_window_size", int64_t(4)), attr("sliding_window_cache", int64_t(1))});
  fails(with(windowed, [](Problem& p) { p.bias = std::vector<double>(4, 0.0), p.bias_shape = {1, 1, 1, 4}; }),
        "attention_bias is not supported with sliding_window_cache=1", window3);
  // lengths, rotary and norms
  fails(random_problem({.B = 4, .S = 1, .P = 3, .total = 4, .seqlens = {3, 3, 3, 3}, .seqlens_shape = {2, 2}}, 95),
        "seqlens_k has shape (2, 2), expected (4) (extra size-1 dims allowed)");
  fails(with(ok, [](Problem& p) { p.total = 0, p.seqlens = {-1, -1}; }), "total_sequence_length 0 must be positive");
  fails(with(ok, [](Problem& p) { p.half = 2, p.position_ids = {-1, 2}; }), "position -1 is outside cos_cache's 16 rows");
  fails(with(ok, [](Problem& p) { p.bias = std::vector<double>(24, 0.0), p.bias_shape = {2, 3, 1, 4}; }),
        "attention_bias has shape (2, 3, 1, 4), expected (2 or 1, 4 or 1, 1, 4)");
  fails(with(ok, [](Problem& p) { p.bias = std::vector<double>(24, 0.0), p.bias_shape = {3, 2, 1, 4}; }),
        "attention_bias has shape (3, 2, 1, 4), expected (2 or 1, 4 or 1, 1, 4)");
  // ... and a bias of every batch row and head is read per row and head (the oracle's indexing)
  check_problem(with(ok, [](Problem& p) { p.bias = random_values(32, 94), p.bias_shape = {2, 4, 1, 4}; }));

  // inputs given without their partner, or of the wrong shape
  auto gqa_node = [](std::vector<std::string> inputs, std::vector<Attribute> extra = {}) {
    extra.push_back(attr("num_heads", int64_t(4)));
    extra.push_back(attr("kv_num_heads", int64_t(2)));
    return node("GroupQueryAttention", std::move(inputs), {"o", "pk_out", "pv_out"}, std::move(extra), "gqa", "com.microsoft");
  };
  auto zeros = [](Shape s) { return floats(s, std::vector<double>(size_t(shape_size(s)), 0.0)); };
  const Tensor sk = tensor<int32_t>({1}, {0}), total = Tensor::scalar<int32_t>(1), q = zeros({1, 1, 16}), kv = zeros({1, 1, 8});
  struct Case { std::string message; Node n; Values feeds; };
  const Case cases[] = {
      {"key and value must be given together (or both absent for packed QKV)", gqa_node({"q", "k", "", "", "", "sk", "t"}),
       {q, kv, Value(), Value(), Value(), sk, total}},
      {"query has width 18, not a multiple of num_heads 4", gqa_node({"q", "k", "v", "", "", "sk", "t"}),
       {zeros({1, 1, 18}), kv, kv, Value(), Value(), sk, total}},
      {"key has shape (1, 2, 8), expected (1, 1 or 0, 8)", gqa_node({"q", "k", "v", "", "", "sk", "t"}),
       {q, zeros({1, 2, 8}), zeros({1, 2, 8}), Value(), Value(), sk, total}},
      {"past_key and past_value must be given together", gqa_node({"q", "k", "v", "pk", "", "sk", "t"}),
       {q, kv, kv, zeros({1, 2, 1, 4}), Value(), sk, total}},
      {"key and value of length 0 need past_key and past_value to hold the keys", gqa_node({"q", "k", "v", "", "", "sk", "t"}),
       {q, zeros({1, 0, 8}), zeros({1, 0, 8}), Value(), Value(), sk, total}},
      {"sliding_window_cache=1 needs new keys (key of length 0 is a KV-shared layer)",
       gqa_node({"q", "k", "v", "pk", "pv", "sk", "t"}, {attr("local_window_size", int64_t(1)), attr("sliding_window_cache", int64_t(1))}),
       {q, zeros({1, 0, 8}), zeros({1, 0, 8}), zeros({1, 2, 2, 4}), zeros({1, 2, 2, 4}), sk, total}},
      {"total_sequence_length has shape (2,), expected a scalar", gqa_node({"q", "k", "v", "", "", "sk", "t"}),
       {q, kv, kv, Value(), Value(), sk, tensor<int32_t>({2}, {1, 1})}},
      {"q_norm_weight and k_norm_weight must be given together",
       gqa_node({"q", "k", "v", "", "", "sk", "t", "", "", "", "", "", "", "", "qn"}),
       {q, kv, kv, Value(), Value(), sk, total, Value(), Value(), Value(), Value(), Value(), Value(), Value(), zeros({4})}},
      {"q_norm_weight and k_norm_weight need do_rotary=1",
       gqa_node({"q", "k", "v", "", "", "sk", "t", "", "", "", "", "", "", "", "qn", "kn"}),
       {q, kv, kv, Value(), Value(), sk, total, Value(), Value(), Value(), Value(), Value(), Value(), Value(), zeros({4}), zeros({4})}},
      {"do_rotary=1 needs cos_cache and sin_cache", gqa_node({"q", "k", "v", "", "", "sk", "t"}, {attr("do_rotary", int64_t(1))}),
       {q, kv, kv, Value(), Value(), sk, total}},
      {"cos_cache has shape (4, 0), expected 1 to 2 columns (rotary dim / 2)",
       gqa_node({"q", "k", "v", "", "", "sk", "t", "c", "s"}, {attr("do_rotary", int64_t(1))}),
       {q, kv, kv, Value(), Value(), sk, total, zeros({4, 0}), zeros({4, 0})}},
      {"position_ids has shape (1, 0), expected (1, >= 1)",
       gqa_node({"q", "k", "v", "", "", "sk", "t", "c", "s", "p"}, {attr("do_rotary", int64_t(1))}),
       {q, kv, kv, Value(), Value(), sk, total, zeros({4, 2}), zeros({4, 2}), tensor<int64_t>({1, 0}, {})}},
      {"output 3 (output_qk) needs qk_output 1 (before softmax) or 2 (after)",
       node("GroupQueryAttention", {"q", "k", "v", "", "", "sk", "t"}, {"o", "", "", "qk"},
            {attr("num_heads", int64_t(4)), attr("kv_num_heads", int64_t(2))}, "gqa", "com.microsoft"),
       {q, kv, kv, Value(), Value(), sk, total}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.message);
    CHECK_THROWS_WITH_AS(run_node(c.n, c.feeds, 1), (A + c.message).c_str(), Error);
  }
}

TEST_CASE("GroupQueryAttention refuses each dimension of key and seqlens_k that disagrees") {
  const std::string A = "node 'gqa' (com.microsoft:GroupQueryAttention): ";
  auto zeros = [](Shape s) { return floats(s, std::vector<double>(size_t(shape_size(s)), 0.0)); };
  const Node n = node("GroupQueryAttention", {"q", "k", "v", "", "", "sk", "t"}, {"o", "pk", "pv"},
                      {attr("num_heads", int64_t(4)), attr("kv_num_heads", int64_t(2))}, "gqa", "com.microsoft");
  const Tensor q = zeros({1, 2, 16}), sk = tensor<int32_t>({1}, {1}), total = Tensor::scalar<int32_t>(2);
  struct Case { std::string message; Values feeds; };
  const Case cases[] = {
      {"key has shape (2, 2, 8), expected (1, 2 or 0, 8)", {q, zeros({2, 2, 8}), zeros({2, 2, 8}), Value(), Value(), sk, total}},
      {"key has shape (1, 1, 8), expected (1, 2 or 0, 8)", {q, zeros({1, 1, 8}), zeros({1, 1, 8}), Value(), Value(), sk, total}},
      {"value has shape (1, 2, 4), expected (1, 2, 8)", {q, zeros({1, 2, 8}), zeros({1, 2, 4}), Value(), Value(), sk, total}},
      {"seqlens_k has shape (), expected (1) (extra size-1 dims allowed)",
       {q, zeros({1, 2, 8}), zeros({1, 2, 8}), Value(), Value(), Tensor::scalar<int32_t>(1), total}},
      {"total_sequence_length has element type int64, expected int32",
       {q, zeros({1, 2, 8}), zeros({1, 2, 8}), Value(), Value(), sk, Tensor::scalar<int64_t>(2)}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.message);
    CHECK_THROWS_WITH_AS(run_node(n, c.feeds, 1), (A + c.message).c_str(), Error);
  }
}
