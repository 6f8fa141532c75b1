// Attention (23, 24, 25): masks (bool, additive, shorter than the keys), bottom-right causality
// for the three offset cases, KV caches, grouped heads (repeat-interleave), 3-D packing,
// soft-capping before the mask, the qk_matmul_output modes in pipeline order, fully masked rows,
// the opset-25 sliding window and input errors. Small cases are checked by hand (zero queries
// give uniform attention, so outputs are plain averages of V rows); the rest against an oracle
// written below in plain double loops from the specification's formulas.
#include <cmath>
#include <limits>
#include <optional>

#include "refeval/compute_vector.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {

Node attention(std::vector<Attribute> attrs, std::vector<std::string> inputs = {"Q", "K", "V"}) {
  return node("Attention", std::move(inputs), {"Y", "present_key", "present_value", "qk"}, std::move(attrs), "att");
}

// Q (1, 1, 2, 1) of zeros, K (1, 1, 2, 1), V (1, 1, 2, 1) = [1, 3].
const Tensor Q0 = tensor<float>({1, 1, 2, 1}, {0, 0});
const Tensor K2 = tensor<float>({1, 1, 2, 1}, {5, 7});
const Tensor V2 = tensor<float>({1, 1, 2, 1}, {1, 3});

// Runs n with its inputs past `in` (or Absent in it) left out, as a model would write them.
Values run_with(Node n, const Values& in, int64_t opset = kLatestOnnxOpset) {
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (i >= in.size() || in[i].is_absent()) n.inputs[i] = "";
  return run_node(n, in, opset);
}

constexpr double kInf = std::numeric_limits<double>::infinity();

// ---------------------------------------------------------------------------------------------
// The oracle. A problem is generated in the 4-D (batch, heads, seq, head_size) layout; the past
// is part of the keys the oracle sees (k and v hold past ++ new, T = P + Skv rows per head).

struct Problem {
  int64_t B = 1, Hq = 1, Hkv = 1, Sq = 1, Skv = 1, P = 0, E = 4, Ev = 4;
  bool three_d = false, causal = false;
  int64_t left = -1, right = -1;       // opset 25 window; -1 unbounded
  double softcap = 0;
  std::optional<float> scale;
  int64_t mode = -1;                   // qk_matmul_output_mode; -1: output not requested
  std::vector<int64_t> nonpad;         // external cache lengths (opset 24+)
  enum Mask { None, Bool, Float } mask = None;
  Shape mask_shape;                    // as fed: broadcasts over the leading axes, may be short
  int64_t opset = 25;
  DType dtype = DType::Double;         // of Q, K, V and a float mask
  bool softmax_double = false;
  uint32_t seed = 1;
};

struct Data {
  std::vector<double> q, k, v, mask;  // k, v: past ++ new, [B, Hkv, T, E|Ev]; mask as fed
};

// Uniform in [-1, 1), reproducible, rounded to `dt` so oracle and kernel see the same numbers.
struct Rng {
  uint32_t s;
  double next(DType dt) {
    s = s * 1664525u + 1013904223u;
    const double x = double(s >> 8) / double(1u << 24) * 2 - 1;
    return dt == DType::Float ? double(float(x)) : dt == DType::Float16 ? double(float(float16(float(x)))) : x;
  }
};

Data make_data(const Problem& p) {
  Rng r{p.seed};
  const int64_t T = p.P + p.Skv;
  Data d;
  for (int64_t i = 0; i < p.B * p.Hq * p.Sq * p.E; ++i) d.q.push_back(r.next(p.dtype));
  for (int64_t i = 0; i < p.B * p.Hkv * T * p.E; ++i) d.k.push_back(r.next(p.dtype));
  for (int64_t i = 0; i < p.B * p.Hkv * T * p.Ev; ++i) d.v.push_back(r.next(p.dtype));
  for (int64_t i = 0; i < shape_size(p.mask_shape); ++i) {
    const double x = r.next(p.dtype);
    if (p.mask == Problem::Bool) d.mask.push_back(x > -0.5 ? 1 : 0);
    else d.mask.push_back(x < -0.8 ? -kInf : 2 * x);
  }
  return d;
}

// attn_mask at (b, h, i, j) as an additive bias: right-aligned broadcasting over the leading axes,
// -inf (bool false) past its last axis.
double mask_bias(const Problem& p, const Data& d, int64_t b, int64_t h, int64_t i, int64_t j) {
  if (p.mask == Problem::None) return 0;
  Shape s = p.mask_shape;
  while (s.size() < 4) s.insert(s.begin(), 1);
  if (j >= s[3]) return -kInf;
  const int64_t c[4] = {b, h, i, j};
  int64_t off = 0;
  for (size_t a = 0; a < 4; ++a) off = off * s[a] + (s[a] == 1 ? 0 : c[a]);
  const double m = d.mask[size_t(off)];
  return p.mask == Problem::Bool ? (m != 0 ? 0 : -kInf) : m;
}

struct Expected {
  std::vector<double> y, qk;  // [B, Hq, Sq, Ev], [B, Hq, Sq, T]
};

Expected oracle(const Problem& p, const Data& d) {
  const int64_t T = p.P + p.Skv, group = p.Hq / p.Hkv;
  const double scale = p.scale ? double(*p.scale) : 1 / std::sqrt(double(p.E));
  const double softcap = double(float(p.softcap));  // what the float attribute holds
  Expected out{std::vector<double>(size_t(p.B * p.Hq * p.Sq * p.Ev)), std::vector<double>(size_t(p.B * p.Hq * p.Sq * T))};
  for (int64_t b = 0; b < p.B; ++b)
    for (int64_t h = 0; h < p.Hq; ++h)
      for (int64_t i = 0; i < p.Sq; ++i) {
        const int64_t g = h / group;  // repeat-interleave: query heads 0..group-1 share KV head 0
        const int64_t offset = p.P > 0 ? p.P : !p.nonpad.empty() ? p.nonpad[size_t(b)] - p.Sq : 0;
        const int64_t pos = offset + i;
        const size_t n = size_t(T);
        std::vector<double> raw(n), capped(n), biased(n), prob(n, 0);
        bool any = false;
        for (int64_t j = 0; j < T; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < p.E; ++e)
            dot += d.q[size_t(((b * p.Hq + h) * p.Sq + i) * p.E + e)] * d.k[size_t(((b * p.Hkv + g) * T + j) * p.E + e)];
          raw[size_t(j)] = dot * scale;
          capped[size_t(j)] = softcap > 0 ? softcap * std::tanh(raw[size_t(j)] / softcap) : raw[size_t(j)];
          const bool allowed = (!p.causal || j <= pos) && (p.left < 0 || j >= pos - p.left) &&
                               (p.right < 0 || j <= pos + p.right) && (p.nonpad.empty() || j < p.nonpad[size_t(b)]);
          const double bias = mask_bias(p, d, b, h, i, j) + (allowed ? 0 : -kInf);
          biased[size_t(j)] = capped[size_t(j)] + bias;
          any = any || bias != -kInf;
        }
        if (any) {
          double mx = -kInf, sum = 0;
          for (double x : biased) mx = std::max(mx, x);
          for (int64_t j = 0; j < T; ++j) sum += prob[size_t(j)] = std::exp(biased[size_t(j)] - mx);
          for (double& x : prob) x /= sum;
        }
        for (int64_t e = 0; e < p.Ev; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < T; ++j) acc += prob[size_t(j)] * d.v[size_t(((b * p.Hkv + g) * T + j) * p.Ev + e)];
          out.y[size_t(((b * p.Hq + h) * p.Sq + i) * p.Ev + e)] = acc;
        }
        const std::vector<double>* qk[] = {&raw, &capped, &biased, &prob};
        if (p.mode >= 0)
          std::copy(qk[p.mode]->begin(), qk[p.mode]->end(), out.qk.begin() + ((b * p.Hq + h) * p.Sq + i) * T);
      }
  return out;
}

// [B, H, S, E] rows [r0, r1) of the sequence axis (of length S) as a tensor, 4-D or packed 3-D.
Tensor pack(const Problem& p, const std::vector<double>& v, int64_t H, int64_t S, int64_t E, int64_t r0, int64_t r1, bool three_d) {
  const int64_t n = r1 - r0;
  std::vector<double> out;
  for (int64_t b = 0; b < p.B; ++b)
    if (three_d) {
      for (int64_t s = r0; s < r1; ++s)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t e = 0; e < E; ++e) out.push_back(v[size_t(((b * H + h) * S + s) * E + e)]);
    } else {
      for (int64_t h = 0; h < H; ++h)
        for (int64_t s = r0; s < r1; ++s)
          for (int64_t e = 0; e < E; ++e) out.push_back(v[size_t(((b * H + h) * S + s) * E + e)]);
    }
  const Shape shape = three_d ? Shape{p.B, n, H * E} : Shape{p.B, H, n, E};
  return from_doubles(p.dtype, shape, out);
}

Tolerance tolerance_of(DType t) {
  if (t == DType::Double) return {1e-9, 1e-12};
  if (t == DType::Float) return {1e-4, 1e-6};
  return {2e-2, 2e-3};
}

// Runs the problem through the op and checks Y, present_key / present_value (internal cache) and
// qk_matmul_output (when requested) against the oracle.
void check_problem(const Problem& p) {
  const Data d = make_data(p);
  const Expected want = oracle(p, d);
  const int64_t T = p.P + p.Skv;
  std::vector<Attribute> attrs;
  if (p.three_d) attrs = {attr("q_num_heads", p.Hq), attr("kv_num_heads", p.Hkv)};
  if (p.causal) attrs.push_back(attr("is_causal", int64_t(1)));
  if (p.left != -1) attrs.push_back(attr("left_window_size", p.left));
  if (p.right != -1) attrs.push_back(attr("right_window_size", p.right));
  if (p.softcap > 0) attrs.push_back(attr("softcap", float(p.softcap)));
  if (p.scale) attrs.push_back(attr("scale", *p.scale));
  if (p.mode >= 0) attrs.push_back(attr("qk_matmul_output_mode", p.mode));
  if (p.softmax_double) attrs.push_back(attr("softmax_precision", int64_t(11)));
  const bool past = p.P > 0;
  std::vector<std::string> inputs = {"Q", "K", "V", p.mask ? "M" : "", past ? "PK" : "", past ? "PV" : "", p.nonpad.empty() ? "" : "N"};
  while (inputs.back().empty()) inputs.pop_back();
  const std::vector<std::string> outputs = {"Y", past ? "PKo" : "", past ? "PVo" : "", p.mode >= 0 ? "QK" : ""};
  Values in = {pack(p, d.q, p.Hq, p.Sq, p.E, 0, p.Sq, p.three_d), pack(p, d.k, p.Hkv, T, p.E, p.P, T, p.three_d),
               pack(p, d.v, p.Hkv, T, p.Ev, p.P, T, p.three_d), Value(), Value(), Value(), Value()};
  if (p.mask == Problem::Bool) {
    std::vector<uint8_t> m(d.mask.begin(), d.mask.end());
    Tensor t(DType::Bool, p.mask_shape);
    std::copy(m.begin(), m.end(), t.data<bool>());
    in[3] = t;
  } else if (p.mask == Problem::Float) {
    in[3] = from_doubles(p.dtype, p.mask_shape, d.mask);
  }
  if (past) {
    in[4] = pack(p, d.k, p.Hkv, T, p.E, 0, p.P, false);
    in[5] = pack(p, d.v, p.Hkv, T, p.Ev, 0, p.P, false);
  }
  if (!p.nonpad.empty()) in[6] = tensor<int64_t>({p.B}, p.nonpad);
  in.resize(inputs.size());
  const Values out = run_node(node("Attention", inputs, outputs, attrs, "att"), in, p.opset);
  const Tolerance tol = tolerance_of(p.dtype);
  Problem y4 = p;
  y4.three_d = false;
  const Tensor y_want = pack(y4, want.y, p.Hq, p.Sq, p.Ev, 0, p.Sq, false);
  if (p.three_d) {  // (B, Hq, Sq, Ev) -> (B, Sq, Hq * Ev)
    check_equal(out[0], pack(p, want.y, p.Hq, p.Sq, p.Ev, 0, p.Sq, true), tol);
  } else {
    check_equal(out[0], y_want, tol);
  }
  if (past) {
    check_equal(out[1], pack(y4, d.k, p.Hkv, T, p.E, 0, T, false), tol);
    check_equal(out[2], pack(y4, d.v, p.Hkv, T, p.Ev, 0, T, false), tol);
  }
  // The evaluator returns the named outputs only: Y, (present_key, present_value,) qk.
  if (p.mode >= 0) check_equal(out[past ? 3 : 1], from_doubles(p.dtype, {p.B, p.Hq, p.Sq, T}, want.qk), tol);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Hand-checked cases.

TEST_CASE("Attention masks") {
  struct Case { const char* what; std::vector<Attribute> attrs; Value mask; std::vector<float> expected; };
  const Case cases[] = {
      {"no mask: both rows average V", {}, Value(), {2, 2}},
      {"causal: row 0 sees key 0 only", {attr("is_causal", int64_t(1))}, Value(), {1, 2}},
      {"bool mask hides key 1", {}, tensor<bool>({2}, {true, false}), {1, 1}},
      {"bool mask shorter than the keys is padded with false", {}, tensor<bool>({1}, {true}), {1, 1}},
      {"float mask shorter than the keys is padded with -inf", {}, tensor<float>({1}, {0}), {1, 1}},
      {"additive mask per row", {}, tensor<float>({2, 2}, {-INFINITY, 0, 0, 0}), {3, 2}},
      {"causal and a bool mask intersect", {attr("is_causal", int64_t(1))}, tensor<bool>({2}, {true, false}), {1, 1}},
      {"causal and a bool mask with no common key: a zero row", {attr("is_causal", int64_t(1))}, tensor<bool>({2}, {false, true}),
       {0, 3}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    auto out = run_with(attention(c.attrs, {"Q", "K", "V", "mask"}), {Q0, K2, V2, c.mask});
    check_equal(out[0], tensor<float>({1, 1, 2, 1}, c.expected));
  }
}

TEST_CASE("Attention with a KV cache: causal offset is the past length; present = past ++ new") {
  // One new query and key after one cached key; the query sees both.
  const Tensor q = tensor<float>({1, 1, 1, 1}, {0}), k = tensor<float>({1, 1, 1, 1}, {7}), v = tensor<float>({1, 1, 1, 1}, {3});
  const Tensor pk = tensor<float>({1, 1, 1, 1}, {5}), pv = tensor<float>({1, 1, 1, 1}, {1});
  auto out = run_with(attention({attr("is_causal", int64_t(1))}, {"Q", "K", "V", "", "pk", "pv"}), {q, k, v, Value(), pk, pv});
  check_equal(out[0], tensor<float>({1, 1, 1, 1}, {2}));
  check_equal(out[1], tensor<float>({1, 1, 2, 1}, {5, 7}));
  check_equal(out[2], tensor<float>({1, 1, 2, 1}, {1, 3}));
}

TEST_CASE("Attention groups query heads over KV heads; 3-D inputs pack heads") {
  // Two query heads share one KV head (GQA); 3-D: (batch 1, seq 1, heads * 1).
  const Tensor q = tensor<double>({1, 1, 2}, {0, 0}), k = tensor<double>({1, 2, 1}, {0, 0}), v = tensor<double>({1, 2, 1}, {1, 5});
  auto out = run_with(attention({attr("q_num_heads", int64_t(2)), attr("kv_num_heads", int64_t(1))}), {q, k, v});
  check_equal(out[0], tensor<double>({1, 1, 2}, {3, 3}));
  check_equal(out[1], tensor<double>({1, 1, 2, 1}, {0, 0}));  // present_key is 4-D
  // Four query heads over two KV heads: heads 0, 1 use KV head 0 and heads 2, 3 KV head 1
  // (repeat-interleave, not tile). One key per head, so each output is its KV head's value.
  const Tensor q4 = tensor<double>({1, 4, 1, 1}, {0, 0, 0, 0}), k4 = tensor<double>({1, 2, 1, 1}, {0, 0});
  auto gqa = run_with(attention({}), {q4, k4, tensor<double>({1, 2, 1, 1}, {10, 20})});
  check_equal(gqa[0], tensor<double>({1, 4, 1, 1}, {10, 10, 20, 20}));
}

TEST_CASE("Attention qk_matmul_output modes follow the pipeline: raw, softcapped, biased, softmax") {
  // Scores are q.k * scale = 2 * 1 * {1, 2}: {2, 4}; softcap 3 gives 3 tanh(s / 3); mask {0, -1}.
  const Tensor q = tensor<double>({1, 1, 1, 1}, {2}), k = tensor<double>({1, 1, 2, 1}, {1, 2}), v = tensor<double>({1, 1, 2, 1}, {0, 0});
  const Tensor mask = tensor<double>({1, 2}, {0, -1});
  const double c0 = 3 * std::tanh(2.0 / 3), c1 = 3 * std::tanh(4.0 / 3), b1 = c1 - 1;
  const double e0 = 1 / (1 + std::exp(b1 - c0));
  struct Case { int64_t mode; std::vector<double> expected; };
  const Case cases[] = {{0, {2, 4}}, {1, {c0, c1}}, {2, {c0, b1}}, {3, {e0, 1 - e0}}};
  for (const auto& c : cases) {
    CAPTURE(c.mode);
    auto out = run_with(attention({attr("scale", 1.0f), attr("softcap", 3.0f), attr("qk_matmul_output_mode", c.mode)}, {"Q", "K", "V", "m"}),
                        {q, k, v, mask});
    check_equal(out[3], tensor<double>({1, 1, 1, 2}, c.expected), {1e-12, 1e-12});
  }
  // Without softcap, mode 1 is the raw product.
  auto plain = run_with(attention({attr("scale", 1.0f), attr("qk_matmul_output_mode", int64_t(1))}), {q, k, v});
  check_equal(plain[3], tensor<double>({1, 1, 1, 2}, {2, 4}));
}

TEST_CASE("Attention soft-caps before the mask: a -inf key keeps probability 0") {
  // Were softcap applied after the mask, the -inf key would become -softcap and get weight.
  const Tensor q = tensor<double>({1, 1, 1, 1}, {1}), k = tensor<double>({1, 1, 2, 1}, {1, 1}), v = tensor<double>({1, 1, 2, 1}, {1, 100});
  auto out = run_with(attention({attr("softcap", 0.5f), attr("qk_matmul_output_mode", int64_t(3))}, {"Q", "K", "V", "m"}),
                      {q, k, v, tensor<double>({2}, {0, -INFINITY})});
  check_equal(out[0], tensor<double>({1, 1, 1, 1}, {1}), {0, 0});
  check_equal(out[3], tensor<double>({1, 1, 1, 2}, {1, 0}), {0, 0});
}

TEST_CASE("Attention: a fully masked row stays zero when its scores are infinite") {
  // Row 0 is masked everywhere and its query is +inf, so its scores are +inf + -inf = NaN; the
  // spec decides on the bias, giving zeros. Row 1 sees key 1 only.
  const Tensor q = tensor<double>({1, 1, 2, 1}, {INFINITY, 0}), k = tensor<double>({1, 1, 2, 1}, {1, 1});
  auto out = run_with(attention({attr("qk_matmul_output_mode", int64_t(3))}, {"Q", "K", "V", "m"}),
                      {q, k, tensor<double>({1, 1, 2, 1}, {5, 7}), tensor<bool>({2, 2}, {false, false, false, true})});
  check_equal(out[0], tensor<double>({1, 1, 2, 1}, {0, 7}), {0, 0});
  check_equal(out[3], tensor<double>({1, 1, 2, 2}, {0, 0, 0, 1}), {0, 0});
}

TEST_CASE("Attention causal alignment is bottom-right for all three offsets") {
  // Zero queries, V = key index: Y = mean of the visible key indices.
  const Tensor q2 = tensor<double>({1, 1, 2, 1}, {0, 0}), k4 = tensor<double>({1, 1, 4, 1}, {0, 0, 0, 0});
  const Tensor v4 = tensor<double>({1, 1, 4, 1}, {0, 1, 2, 3});
  const std::vector<Attribute> causal = {attr("is_causal", int64_t(1))};
  // No cache, 2 queries over 4 keys: offset 0, so q0 sees {0}, q1 sees {0, 1}.
  check_equal(run_with(attention(causal), {q2, k4, v4})[0], tensor<double>({1, 1, 2, 1}, {0, 0.5}));
  // Internal cache of 2 plus 2 new keys: offset 2, so q0 sees {0..2}, q1 sees {0..3}.
  auto past = run_with(attention(causal, {"Q", "K", "V", "", "pk", "pv"}),
                       {q2, tensor<double>({1, 1, 2, 1}, {0, 0}), tensor<double>({1, 1, 2, 1}, {2, 3}), Value(),
                        tensor<double>({1, 1, 2, 1}, {0, 0}), tensor<double>({1, 1, 2, 1}, {0, 1})});
  check_equal(past[0], tensor<double>({1, 1, 2, 1}, {1, 1.5}));
  // External cache, nonpad 3 and 1 over a batch of 2: offsets 1 and -1. Batch 1's q0 sees no key.
  const Tensor qb = tensor<double>({2, 1, 2, 1}, {0, 0, 0, 0}), kb = tensor<double>({2, 1, 4, 1}, {0, 0, 0, 0, 0, 0, 0, 0});
  const Tensor vb = tensor<double>({2, 1, 4, 1}, {0, 1, 2, 3, 0, 1, 2, 3});
  auto ext = run_with(attention({attr("is_causal", int64_t(1)), attr("qk_matmul_output_mode", int64_t(3))},
                                {"Q", "K", "V", "", "", "", "n"}),
                      {qb, kb, vb, Value(), Value(), Value(), tensor<int64_t>({2}, {3, 1})}, 24);
  check_equal(ext[0], tensor<double>({2, 1, 2, 1}, {0.5, 1, 0, 0}));
  check_equal(ext[3], tensor<double>({2, 1, 2, 4}, {.5, .5, 0, 0, 1. / 3, 1. / 3, 1. / 3, 0, 0, 0, 0, 0, 1, 0, 0, 0}), {1e-12, 1e-12});
}

TEST_CASE("Attention-25 window: the specification's 4 x 6 example (left 2, right 1)") {
  // Zero queries and keys, V one-hot by key: Y row i = (indicator of the visible keys) / count.
  // The spec: q0 {k0, k1}, q1 {k0..k2}, q2 {k0..k3}, q3 {k1..k4}.
  std::vector<double> eye(36, 0);
  for (int j = 0; j < 6; ++j) eye[size_t(j * 6 + j)] = 1;
  const Tensor q = from_doubles(DType::Double, {1, 1, 4, 1}, std::vector<double>(4, 0));
  const Tensor k = from_doubles(DType::Double, {1, 1, 6, 1}, std::vector<double>(6, 0));
  auto out = run_with(attention({attr("left_window_size", int64_t(2)), attr("right_window_size", int64_t(1))}),
                      {q, k, from_doubles(DType::Double, {1, 1, 6, 6}, eye)});
  const double h = 1. / 2, t = 1. / 3, f = 1. / 4;
  check_equal(out[0], tensor<double>({1, 1, 4, 6}, {h, h, 0, 0, 0, 0, t, t, t, 0, 0, 0, f, f, f, f, 0, 0, 0, f, f, f, f, 0}), {1e-12, 1e-12});
  // Upstream's bidirectional example: 5 zero keys, V = 0..4, left 1, right 2.
  const Tensor z5 = from_doubles(DType::Double, {1, 1, 5, 1}, std::vector<double>(5, 0));
  auto bi = run_with(attention({attr("left_window_size", int64_t(1)), attr("right_window_size", int64_t(2))}),
                     {z5, z5, tensor<double>({1, 1, 5, 1}, {0, 1, 2, 3, 4})});
  check_equal(bi[0], tensor<double>({1, 1, 5, 1}, {1, 1.5, 2.5, 3, 3.5}), {1e-12, 1e-12});
  // is_causal keeps its upper bound: right 2 adds nothing, left 1 keeps the key before.
  auto causal = run_with(attention({attr("is_causal", int64_t(1)), attr("left_window_size", int64_t(1)), attr("right_window_size", int64_t(2))}),
                         {z5, z5, tensor<double>({1, 1, 5, 1}, {0, 1, 2, 3, 4})});
  check_equal(causal[0], tensor<double>({1, 1, 5, 1}, {0, 0.5, 1.5, 2.5, 3.5}), {1e-12, 1e-12});
}

// ---------------------------------------------------------------------------------------------
// Oracle-checked cases.

TEST_CASE("Attention-25 sliding window against the oracle") {
  using M = Problem;
  struct Case { std::string what; Problem p; };
  auto P = [](auto f) { Problem p; f(p); return p; };
  const Case cases[] = {
      // Ports of onnx/backend/test/case/node/attention.py (added after the shared test data).
      {"local_window: causal, left 2, 4 queries over 6 keys", P([](M& p) { p.B = 2, p.Hq = p.Hkv = 3, p.Sq = 4, p.Skv = 6, p.E = p.Ev = 8, p.causal = true, p.left = 2; })},
      {"bidirectional_window: left 1, right 2", P([](M& p) { p.Sq = p.Skv = 5, p.E = p.Ev = 3, p.left = 1, p.right = 2; })},
      {"local_window_default: -1, -1", P([](M& p) { p.B = 2, p.Hq = p.Hkv = 3, p.Sq = 4, p.Skv = 6, p.E = p.Ev = 8; })},
      {"local_window_rank1_boolean_mask", P([](M& p) { p.B = 2, p.Hq = p.Hkv = 3, p.Sq = 4, p.Skv = 6, p.E = p.Ev = 8, p.causal = true, p.left = 2, p.mask = M::Bool, p.mask_shape = {6}; })},
      {"local_window_with_past: past 8, 2 new keys, 4 queries", P([](M& p) { p.B = 2, p.Hq = p.Hkv = 3, p.Sq = 4, p.Skv = 2, p.P = 8, p.E = p.Ev = 8, p.causal = true, p.left = 2; })},
      {"local_window_ext_cache_rank3_head_mask", P([](M& p) { p.B = 2, p.Hq = p.Hkv = 3, p.Sq = 4, p.Skv = 8, p.E = p.Ev = 8, p.causal = true, p.left = 2, p.nonpad = {6, 7}, p.mask = M::Float, p.mask_shape = {3, 4, 8}; })},
      {"local_window_ext_cache_rank4_batch_mask", P([](M& p) { p.B = 2, p.Hq = p.Hkv = 3, p.Sq = 4, p.Skv = 8, p.E = p.Ev = 8, p.causal = true, p.left = 2, p.nonpad = {6, 7}, p.mask = M::Float, p.mask_shape = {2, 1, 4, 8}; })},
      {"local_window_ext_cache_rank2_mask", P([](M& p) { p.B = 2, p.Hq = p.Hkv = 3, p.Sq = 4, p.Skv = 8, p.E = p.Ev = 8, p.causal = true, p.left = 2, p.nonpad = {6, 7}, p.mask = M::Float, p.mask_shape = {1, 8}; })},
      {"local_window_ext_cache_float16_mask", P([](M& p) { p.B = 2, p.Hq = p.Hkv = 3, p.Sq = 4, p.Skv = 8, p.E = p.Ev = 8, p.causal = true, p.left = 2, p.nonpad = {6, 7}, p.mask = M::Float, p.mask_shape = {1, 8}, p.dtype = DType::Float16; })},
      {"3d_local_window: MQA, distinct V head size", P([](M& p) { p.B = 2, p.Hq = 4, p.Hkv = 1, p.Sq = 4, p.Skv = 6, p.E = 8, p.Ev = 6, p.three_d = true, p.causal = true, p.left = 2, p.dtype = DType::Float; })},
      {"local_window_gqa_rank4_mask: softcap, double softmax, mode 3", P([](M& p) { p.B = 2, p.Hq = 4, p.Hkv = 2, p.Sq = 4, p.Skv = 6, p.E = 8, p.Ev = 6, p.causal = true, p.left = 2, p.softcap = 2, p.softmax_double = true, p.mode = 3, p.mask = M::Bool, p.mask_shape = {2, 4, 4, 6}, p.dtype = DType::Float; })},
      // Further combinations.
      {"left only, not causal", P([](M& p) { p.Sq = p.Skv = 6, p.left = 1, p.mode = 2; })},
      {"right only, not causal", P([](M& p) { p.Sq = p.Skv = 6, p.right = 1, p.mode = 3; })},
      {"left 0 and right 0: each query sees its own key", P([](M& p) { p.Sq = p.Skv = 5, p.left = 0, p.right = 0, p.mode = 3; })},
      {"both windows, cross attention with more keys", P([](M& p) { p.B = 2, p.Hq = 2, p.Hkv = 2, p.Sq = 3, p.Skv = 7, p.left = 2, p.right = 3; })},
      {"causal with a positive right window: the causal bound wins", P([](M& p) { p.Sq = p.Skv = 5, p.causal = true, p.left = 1, p.right = 2, p.mode = 3; })},
      {"window with an internal cache, not causal", P([](M& p) { p.B = 2, p.Hq = 4, p.Hkv = 2, p.Sq = 3, p.Skv = 3, p.P = 5, p.left = 3, p.right = 1, p.mode = 2; })},
      {"window with nonpad_kv_seqlen, not causal", P([](M& p) { p.B = 2, p.Hq = 2, p.Hkv = 1, p.Sq = 2, p.Skv = 8, p.left = 2, p.right = 1, p.nonpad = {5, 8}, p.mode = 3; })},
      {"window and causal with nonpad_kv_seqlen, GQA, 3-D", P([](M& p) { p.B = 2, p.Hq = 6, p.Hkv = 2, p.Sq = 3, p.Skv = 7, p.E = 2, p.Ev = 3, p.causal = true, p.left = 2, p.nonpad = {7, 4}, p.three_d = true; })},
      {"fully masked rows: negative offset and a right window", P([](M& p) { p.B = 2, p.Sq = 4, p.Skv = 6, p.right = 1, p.nonpad = {2, 6}, p.mode = 3; })},
      {"fully masked rows: window and bool mask disjoint", P([](M& p) { p.Sq = p.Skv = 4, p.left = 0, p.right = 0, p.mask = M::Bool, p.mask_shape = {4, 4}, p.seed = 5, p.mode = 3; })},
      {"window, bool mask, softcap, GQA, float", P([](M& p) { p.B = 2, p.Hq = 4, p.Hkv = 2, p.Sq = 5, p.Skv = 5, p.P = 3, p.causal = true, p.left = 4, p.softcap = 1.5, p.mask = M::Bool, p.mask_shape = {1, 4, 5, 8}, p.dtype = DType::Float, p.mode = 1; })},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    check_problem(c.p);
  }
}

TEST_CASE("Attention-23/24 errata semantics against the oracle") {
  using M = Problem;
  struct Case { std::string what; Problem p; };
  auto P = [](auto f) { Problem p; f(p); p.opset = p.nonpad.empty() ? 23 : 24; return p; };
  const Case cases[] = {
      {"softcap then float mask with -inf entries, mode 0 raw", P([](M& p) { p.Sq = 3, p.Skv = 5, p.softcap = 0.7, p.mask = M::Float, p.mask_shape = {3, 5}, p.mode = 0; })},
      {"softcap, mode 1 after softcap", P([](M& p) { p.Sq = 3, p.Skv = 5, p.softcap = 0.7, p.mask = M::Float, p.mask_shape = {3, 5}, p.mode = 1; })},
      {"softcap, mode 2 after the mask", P([](M& p) { p.Sq = 3, p.Skv = 5, p.softcap = 0.7, p.mask = M::Float, p.mask_shape = {3, 5}, p.mode = 2; })},
      {"softcap, mode 3 after softmax", P([](M& p) { p.Sq = 3, p.Skv = 5, p.softcap = 0.7, p.mask = M::Float, p.mask_shape = {3, 5}, p.mode = 3; })},
      {"causal, no cache, more keys than queries (offset 0)", P([](M& p) { p.B = 2, p.Hq = 2, p.Hkv = 2, p.Sq = 3, p.Skv = 5, p.causal = true, p.mode = 3; })},
      {"causal, internal cache (offset = past length)", P([](M& p) { p.B = 2, p.Hq = 2, p.Hkv = 1, p.Sq = 3, p.Skv = 3, p.P = 4, p.causal = true, p.mode = 2; })},
      {"causal, external cache (offset = nonpad - S per batch, one negative)", P([](M& p) { p.B = 3, p.Hq = 2, p.Hkv = 2, p.Sq = 3, p.Skv = 6, p.causal = true, p.nonpad = {6, 4, 1}, p.mode = 3; })},
      {"GQA repeat-interleave, 4 query heads over 2, 3-D", P([](M& p) { p.B = 2, p.Hq = 4, p.Hkv = 2, p.Sq = 2, p.Skv = 3, p.E = 3, p.Ev = 2, p.three_d = true; })},
      {"float mask shorter than K and V with nonpad (padded with -inf)", P([](M& p) { p.B = 2, p.Sq = 2, p.Skv = 6, p.mask = M::Float, p.mask_shape = {2, 1, 1, 4}, p.nonpad = {4, 3}, p.causal = true, p.mode = 2; })},
      {"bool mask intersects causal, fully masked rows give zeros", P([](M& p) { p.B = 2, p.Sq = 4, p.Skv = 4, p.causal = true, p.mask = M::Bool, p.mask_shape = {2, 1, 4, 4}, p.seed = 3, p.mode = 3; })},
      {"float mask is added to causal", P([](M& p) { p.Sq = 3, p.Skv = 3, p.P = 2, p.causal = true, p.mask = M::Float, p.mask_shape = {3, 5}, p.seed = 9; })},
      {"scale attribute, float inputs, past, GQA, softcap", P([](M& p) { p.B = 2, p.Hq = 4, p.Hkv = 2, p.Sq = 2, p.Skv = 2, p.P = 3, p.scale = 0.3f, p.softcap = 2, p.dtype = DType::Float, p.causal = true, p.mode = 1; })},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    check_problem(c.p);
  }
}

TEST_CASE("Attention one query row (dot products over the keys) and keys read in place, against the oracle") {
  using M = Problem;
  struct Case { std::string what; Problem p; };
  auto P = [](auto f) { Problem p; f(p); p.opset = 23; return p; };
  const Case cases[] = {
      {"decode step, float, 8 query heads over 2, past 40, bool mask, mode 3", P([](M& p) { p.B = 2, p.Hq = 8, p.Hkv = 2, p.Sq = 1, p.Skv = 1, p.P = 40, p.E = 16, p.Ev = 8, p.dtype = DType::Float, p.causal = true, p.mask = M::Bool, p.mask_shape = {2, 1, 1, 41}, p.seed = 21, p.mode = 3; })},
      {"decode step, double, head size 9 (a tail after 8 lanes)", P([](M& p) { p.B = 2, p.Hq = 4, p.Hkv = 1, p.Sq = 1, p.Skv = 1, p.P = 12, p.E = 9, p.Ev = 3, p.seed = 22; })},
      {"one row, 4-D float, no cache (keys in place), short float mask", P([](M& p) { p.B = 2, p.Hq = 4, p.Hkv = 2, p.Sq = 1, p.Skv = 37, p.E = 9, p.Ev = 5, p.dtype = DType::Float, p.mask = M::Float, p.mask_shape = {1, 1, 1, 30}, p.seed = 23; })},
      {"several rows, 4-D float, no cache (keys in place, transposed once per kv head)", P([](M& p) { p.B = 2, p.Hq = 6, p.Hkv = 3, p.Sq = 5, p.Skv = 7, p.E = 9, p.Ev = 4, p.dtype = DType::Float, p.causal = true, p.seed = 24, p.mode = 0; })},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    check_problem(c.p);
  }
}

TEST_CASE("Attention checks its oracle: a fully masked row is really produced and zeroed") {
  // Guards the oracle tests above against passing vacuously: with nonpad 1 and 3 queries the
  // first two queries of that batch see no key, so their Y rows are exactly zero.
  Problem p;
  p.Sq = 3, p.Skv = 4, p.causal = true, p.nonpad = {1}, p.opset = 24;
  const Expected e = oracle(p, make_data(p));
  CHECK(std::all_of(e.y.begin(), e.y.begin() + 2 * p.Ev, [](double x) { return x == 0; }));
  CHECK(std::any_of(e.y.begin() + 2 * p.Ev, e.y.end(), [](double x) { return x != 0; }));
}

TEST_CASE("Attention input errors") {
  const Tensor q3 = tensor<float>({1, 1, 2}, {0, 0});
  CHECK_THROWS_WITH_AS(run_with(attention({}), {q3, q3, q3}), doctest::Contains("q_num_heads and kv_num_heads"), Error);
  CHECK_THROWS_WITH_AS(run_with(attention({}, {"Q", "K", "V", "m"}), {Q0, K2, V2, tensor<bool>({3}, {true, true, true})}),
                       doctest::Contains("exceeds the total sequence length"), Error);
  CHECK_THROWS_WITH_AS(run_with(attention({}, {"Q", "K", "V", "m"}), {Q0, K2, V2, tensor<bool>({3, 2}, {1, 1, 1, 1, 1, 1})}),
                       doctest::Contains("does not broadcast"), Error);
  CHECK_THROWS_WITH_AS(run_with(attention({}, {"Q", "K", "V", "m"}), {Q0, K2, V2, tensor<int32_t>({2}, {0, 0})}),
                       doctest::Contains("attn_mask must be bool or have Q's element type"), Error);
  CHECK_THROWS_WITH_AS(run_with(attention({attr("qk_matmul_output_mode", int64_t(4))}), {Q0, K2, V2}),
                       doctest::Contains("qk_matmul_output_mode must be 0, 1, 2 or 3"), Error);
  CHECK_THROWS_WITH_AS(run_with(attention({}, {"Q", "K", "V", "", "", "", "n"}), {Q0, K2, V2, Value(), Value(), Value(), tensor<int64_t>({1}, {2})}, 23),
                       doctest::Contains("nonpad_kv_seqlen needs opset 24"), Error);
  CHECK_THROWS_WITH_AS(run_with(attention({}, {"Q", "K", "V", "", "", "", "n"}), {Q0, K2, V2, Value(), Value(), Value(), tensor<int64_t>({1}, {3})}, 24),
                       doctest::Contains("nonpad_kv_seqlen value 3 is outside [0, 2]"), Error);
  const Tensor p1 = tensor<float>({1, 1, 1, 1}, {0});
  CHECK_THROWS_WITH_AS(run_with(node("Attention", {"Q", "K", "V", "", "pk", "pv", "n"}, {"Y"}, {}, "att"),
                                {Q0, K2, V2, Value(), p1, p1, tensor<int64_t>({1}, {2})}, 24),
                       doctest::Contains("cannot be combined with past_key"), Error);
  CHECK_THROWS_WITH_AS(run_with(attention({}, {"Q", "K", "V", "", "pk"}), {Q0, K2, V2, Value(), p1}),
                       doctest::Contains("past_key and past_value must be given together"), Error);
  CHECK_THROWS_WITH_AS(run_with(attention({}), {tensor<float>({1, 3, 1, 1}, {0, 0, 0}), tensor<float>({1, 2, 1, 1}, {0, 0}),
                                               tensor<float>({1, 2, 1, 1}, {0, 0})}),
                       doctest::Contains("q_num_heads 3 is not a multiple of kv_num_heads 2"), Error);
}

TEST_CASE("Attention-25 attribute and input errors") {
  CHECK_THROWS_WITH_AS(run_with(attention({attr("left_window_size", int64_t(-2))}), {Q0, K2, V2}),
                       doctest::Contains("left_window_size must be -1 or nonnegative, got -2"), Error);
  CHECK_THROWS_WITH_AS(run_with(attention({attr("right_window_size", int64_t(-3))}), {Q0, K2, V2}),
                       doctest::Contains("right_window_size must be -1 or nonnegative, got -3"), Error);
  // 4-D inputs carry their head counts; opset 25 rejects the attributes (23 and 24 ignore them).
  const std::vector<Attribute> heads = {attr("q_num_heads", int64_t(1)), attr("kv_num_heads", int64_t(1))};
  CHECK_THROWS_WITH_AS(run_with(attention(heads), {Q0, K2, V2}), doctest::Contains("must not be given with 4-D inputs"), Error);
  check_equal(run_with(attention(heads), {Q0, K2, V2}, 24)[0], tensor<float>({1, 1, 2, 1}, {2, 2}));
  CHECK_THROWS_WITH_AS(run_with(node("Attention", {"Q", "K", "V"}, {"Y", "pk"}, {}, "att"), {Q0, K2, V2}),
                       doctest::Contains("present_key and present_value must be requested together"), Error);
  CHECK_THROWS_WITH_AS(run_with(node("Attention", {"Q", "K", "V", "", "", "", "n"}, {"Y", "pk", "pv"}, {}, "att"),
                                {Q0, K2, V2, Value(), Value(), Value(), tensor<int64_t>({1}, {2})}),
                       doctest::Contains("nonpad_kv_seqlen cannot be combined with present_key"), Error);
  // The window attributes do not exist before opset 25.
  CHECK_THROWS_WITH_AS(run_with(attention({attr("left_window_size", int64_t(0))}), {Q0, K2, V2}, 24),
                       doctest::Contains("unknown attribute left_window_size for Attention at opset 24"), Error);
}
