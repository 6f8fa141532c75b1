// com.microsoft SparseAttention against an oracle written here: layouts are given as dense 0/1
// block matrices, turned into CSR for the op, and the oracle reads the dense matrices. Prompt,
// decode and chunked calls, padded batches, grouped KV heads, layouts cycling over heads, packed
// QKV, RoPE (halves, interleaved, partial), scale, an empty block row, float16 / bfloat16; errors.
#include <cmath>

#include "refeval/compute_vector.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {


using Layout = std::vector<std::vector<int>>;  // dense (max_blocks, max_blocks) 0/1 block mask
// The two 4 x 4 layouts of ORT's SparseAttention documentation.
const std::vector<Layout> kDocLayouts = {{{1, 0, 0, 0}, {1, 1, 0, 0}, {0, 1, 1, 0}, {0, 1, 1, 1}},
                                         {{1, 0, 0, 0}, {1, 1, 0, 0}, {1, 1, 1, 0}, {1, 0, 1, 1}}};

struct Case {
  int64_t B = 1, N = 4, Nkv = 2, h = 4, S = 8, M = 10, block = 2, total = 8;
  std::vector<int32_t> lengths = {8};
  std::vector<Layout> layouts = kDocLayouts;
  bool packed = false, rotary = false, interleaved = false;
  int64_t half = 0;  // cos/sin columns when rotary
  double scale = 0;
};

struct Data { std::vector<float> q, k, v, pk, pv, cos, sin; };

Data make_data(const Case& c) {
  Data d;
  d.q = wave(size_t(c.B * c.S * c.N * c.h), 0.7f), d.k = wave(size_t(c.B * c.S * c.Nkv * c.h), 1.3f, 1.f);
  d.v = wave(size_t(c.B * c.S * c.Nkv * c.h), 0.45f, 2.f);
  d.pk = wave(size_t(c.B * c.Nkv * c.M * c.h), 0.31f, 0.5f), d.pv = wave(size_t(c.B * c.Nkv * c.M * c.h), 0.83f, 1.7f);
  const int64_t rows = c.total + 2;
  for (int64_t p = 0; p < rows; ++p)
    for (int64_t i = 0; i < c.half; ++i) {
      const double angle = double(p) / std::pow(100.0, double(i) / double(c.half));
      d.cos.push_back(float(std::cos(angle))), d.sin.push_back(float(std::sin(angle)));
    }
  return d;
}

struct Result { std::vector<double> out, kc, vc; };

Result oracle(const Case& c, const Data& d) {
  const int64_t B = c.B, N = c.N, Nkv = c.Nkv, h = c.h, S = c.S, M = c.M;
  const bool prompt = c.total == S;
  auto rope = [&](std::vector<double> x, int64_t pos) {
    if (!c.rotary) return x;
    const std::vector<double> in = x;
    for (int64_t i = 0; i < c.half; ++i) {
      const int64_t a = c.interleaved ? 2 * i : i, b = c.interleaved ? 2 * i + 1 : i + c.half;
      const double co = d.cos[size_t(pos * c.half + i)], si = d.sin[size_t(pos * c.half + i)];
      x[size_t(a)] = in[size_t(a)] * co - in[size_t(b)] * si;
      x[size_t(b)] = in[size_t(b)] * co + in[size_t(a)] * si;
    }
    return x;
  };
  auto head = [&](const std::vector<float>& x, int64_t b, int64_t i, int64_t heads, int64_t n) {
    std::vector<double> r(static_cast<size_t>(h));
    for (int64_t e = 0; e < h; ++e) r[size_t(e)] = x[size_t(((b * S + i) * heads + n) * h + e)];
    return r;
  };
  Result r;
  r.out.assign(size_t(B * S * N * h), 0);
  r.kc.assign(d.pk.begin(), d.pk.end()), r.vc.assign(d.pv.begin(), d.pv.end());
  for (int64_t b = 0; b < B; ++b) {
    const int64_t past = prompt ? 0 : c.lengths[size_t(b)] - S;
    for (int64_t i = 0; i < S; ++i)
      for (int64_t g = 0; g < Nkv; ++g) {
        const std::vector<double> k = rope(head(d.k, b, i, Nkv, g), past + i), v = head(d.v, b, i, Nkv, g);
        for (int64_t e = 0; e < h; ++e) {
          r.kc[size_t(((b * Nkv + g) * M + past + i) * h + e)] = k[size_t(e)];
          r.vc[size_t(((b * Nkv + g) * M + past + i) * h + e)] = v[size_t(e)];
        }
      }
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < S; ++i) {
        const int64_t pos = past + i, g = n / (N / Nkv);
        const Layout& lay = c.layouts[size_t(n) % c.layouts.size()];
        const std::vector<double> q = rope(head(d.q, b, i, N, n), pos);
        std::vector<int64_t> keys, causal;
        for (int64_t j = 0; j <= pos && j < c.lengths[size_t(b)]; ++j) {
          causal.push_back(j);
          if (lay[size_t(pos / c.block)][size_t(j / c.block)]) keys.push_back(j);
        }
        std::vector<double> w;
        if (keys.empty()) {  // an empty block row: every causal key weighs the same
          keys = causal, w.assign(keys.size(), 1.0 / double(keys.size()));
        } else {
          for (int64_t j : keys) {
            double dot = 0;
            for (int64_t e = 0; e < h; ++e) dot += q[size_t(e)] * r.kc[size_t(((b * Nkv + g) * M + j) * h + e)];
            w.push_back(dot * (c.scale != 0 ? c.scale : 1 / std::sqrt(double(h))));
          }
          const double top = *std::max_element(w.begin(), w.end());
          double sum = 0;
          for (double& x : w) sum += x = std::exp(x - top);
          for (double& x : w) x /= sum;
        }
        for (size_t t = 0; t < keys.size(); ++t)
          for (int64_t e = 0; e < h; ++e)
            r.out[size_t(((b * S + i) * N + n) * h + e)] += w[t] * r.vc[size_t(((b * Nkv + g) * M + keys[t]) * h + e)];
      }
  }
  return r;
}

// CSR (row offsets, column indices padded with -1) of the dense layouts.
std::pair<Tensor, Tensor> csr(const std::vector<Layout>& layouts) {
  const int64_t L = int64_t(layouts.size()), blocks = int64_t(layouts[0].size());
  std::vector<std::vector<int32_t>> cols(static_cast<size_t>(L));
  std::vector<int32_t> rows;
  size_t nnz = 0;
  for (int64_t l = 0; l < L; ++l) {
    rows.push_back(0);
    for (int64_t r = 0; r < blocks; ++r) {
      for (int64_t c = 0; c < blocks; ++c)
        if (layouts[size_t(l)][size_t(r)][size_t(c)]) cols[size_t(l)].push_back(int32_t(c));
      rows.push_back(int32_t(cols[size_t(l)].size()));
    }
    nnz = std::max(nnz, cols[size_t(l)].size());
  }
  std::vector<int32_t> flat;
  for (auto& c : cols) c.resize(nnz, -1), flat.insert(flat.end(), c.begin(), c.end());
  return {tensor<int32_t>({L, blocks + 1}, rows), tensor<int32_t>({L, int64_t(nnz)}, flat)};
}

Values run_case(const Case& c, const Data& d, DType dtype = DType::Float) {
  auto t = [&](Shape s, const std::vector<float>& v) -> Tensor {
    if (dtype == DType::Float) return tensor<float>(std::move(s), v);
    std::vector<double> w(v.begin(), v.end());
    return from_doubles(dtype, std::move(s), w);
  };
  const auto [rows, cols] = csr(c.layouts);
  std::vector<std::string> ins = {"q", "k", "v", "pk", "pv", "rows", "cols", "total", "lengths"};
  Values feeds = {t({c.B, c.S, c.N * c.h}, d.q), t({c.B, c.S, c.Nkv * c.h}, d.k), t({c.B, c.S, c.Nkv * c.h}, d.v),
                  t({c.B, c.Nkv, c.M, c.h}, d.pk), t({c.B, c.Nkv, c.M, c.h}, d.pv), rows, cols,
                  tensor<int32_t>({1}, {int32_t(c.total)}), tensor<int32_t>({c.B}, c.lengths)};
  if (c.packed) {
    std::vector<float> qkv;
    for (int64_t t0 = 0; t0 < c.B * c.S; ++t0) {
      qkv.insert(qkv.end(), d.q.begin() + t0 * c.N * c.h, d.q.begin() + (t0 + 1) * c.N * c.h);
      qkv.insert(qkv.end(), d.k.begin() + t0 * c.Nkv * c.h, d.k.begin() + (t0 + 1) * c.Nkv * c.h);
      qkv.insert(qkv.end(), d.v.begin() + t0 * c.Nkv * c.h, d.v.begin() + (t0 + 1) * c.Nkv * c.h);
    }
    feeds[0] = t({c.B, c.S, (c.N + 2 * c.Nkv) * c.h}, qkv), feeds[1] = feeds[2] = Value();
    ins[1] = ins[2] = "";
  }
  std::vector<Attribute> attrs = {attr("num_heads", c.N), attr("kv_num_heads", c.Nkv), attr("sparse_block_size", c.block)};
  if (c.scale != 0) attrs.push_back(attr("scale", float(c.scale)));
  if (c.rotary) {
    ins.insert(ins.end(), {"cos", "sin"});
    feeds.push_back(t({c.total + 2, c.half}, d.cos)), feeds.push_back(t({c.total + 2, c.half}, d.sin));
    attrs.push_back(attr("do_rotary", int64_t(1))), attrs.push_back(attr("rotary_interleaved", int64_t(c.interleaved)));
  }
  return run_node(node("SparseAttention", ins, {"y", "present_key", "present_value"}, attrs, "sparse", "com.microsoft"), feeds);
}

void check_case(const Case& c) {
  const Data d = make_data(c);
  const Values got = run_case(c, d);
  const Result e = oracle(c, d);
  const Tolerance tol{1e-5, 1e-6};
  auto f = [](const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); };
  check_equal(got[0], tensor<float>({c.B, c.S, c.N * c.h}, f(e.out)), tol);
  check_equal(got[1], tensor<float>({c.B, c.Nkv, c.M, c.h}, f(e.kc)), tol);
  check_equal(got[2], tensor<float>({c.B, c.Nkv, c.M, c.h}, f(e.vc)), tol);
}

}  // namespace

TEST_CASE("SparseAttention: prompt, decode and chunks over two layouts cycling on four heads") {
  SUBCASE("prompt") { check_case({}); }
  SUBCASE("prompt, batch 2, scale") { check_case({.B = 2, .lengths = {8, 8}, .scale = 0.4}); }
  SUBCASE("decode, batch 2, right padding") { check_case({.B = 2, .S = 1, .total = 7, .lengths = {7, 5}}); }
  SUBCASE("chunk of 3 after a past") { check_case({.B = 2, .S = 3, .total = 7, .lengths = {7, 6}}); }
  SUBCASE("padded prompt: keys beyond L_b are not seen") { check_case({.B = 2, .lengths = {8, 5}}); }
  SUBCASE("one layout, multi-query (one KV head)") {
    check_case({.N = 2, .Nkv = 1, .layouts = {kDocLayouts[1]}});
  }
  SUBCASE("dense layout is causal attention") {
    check_case({.layouts = {{{1, 0, 0, 0}, {1, 1, 0, 0}, {1, 1, 1, 0}, {1, 1, 1, 1}}}});
  }
  SUBCASE("an empty block row averages its causal keys") {
    check_case({.S = 1, .total = 5, .lengths = {5}, .layouts = {{{1, 0, 0, 0}, {1, 1, 0, 0}, {0, 0, 0, 0}, {1, 0, 1, 1}}}});
  }
}

TEST_CASE("SparseAttention: packed QKV and rotary embedding") {
  SUBCASE("packed QKV, decode") { check_case({.B = 2, .S = 1, .total = 6, .lengths = {6, 6}, .packed = true}); }
  SUBCASE("RoPE halves, prompt") { check_case({.h = 8, .rotary = true, .half = 4}); }
  SUBCASE("RoPE interleaved, decode") {
    check_case({.B = 2, .h = 8, .S = 1, .total = 6, .lengths = {6, 4}, .rotary = true, .interleaved = true, .half = 4});
  }
  SUBCASE("partial RoPE, packed chunk") {
    check_case({.B = 2, .h = 8, .S = 2, .total = 7, .lengths = {7, 5}, .packed = true, .rotary = true, .half = 2});
  }
}

TEST_CASE("SparseAttention in float16 and bfloat16") {
  for (DType dt : {DType::Float16, DType::BFloat16}) {
    CAPTURE(dtype_short_name(dt));
    const Case c{.B = 2, .S = 1, .total = 6, .lengths = {6, 5}};
    Data d = make_data(c);
    for (auto* x : {&d.q, &d.k, &d.v, &d.pk, &d.pv})
      for (float& f : *x) f = float(to_doubles(from_doubles(dt, {1}, {double(f)}))[0]);
    const Values got = run_case(c, d, dt);
    REQUIRE(got[0].tensor().dtype() == dt);
    const Result e = oracle(c, d);
    check_equal(got[0], from_doubles(dt, {c.B, c.S, c.N * c.h}, e.out), {1e-2, 1e-2});
    check_equal(got[1], from_doubles(dt, {c.B, c.Nkv, c.M, c.h}, e.kc));
  }
}

TEST_CASE("SparseAttention errors name the input") {
  const Case c{};
  const Data d = make_data(c);
  auto fails = [&](Case bad, const char* message) {
    CAPTURE(message);
    CHECK_THROWS_WITH_AS(run_case(bad, make_data(bad)), doctest::Contains(message), Error);
  };
  fails({.layouts = {{{1, 1, 0, 0}, {1, 1, 0, 0}, {0, 1, 1, 0}, {0, 1, 1, 1}}}},
        "block_col_indices of layout 0 lists column 1 in block row 0; expected increasing columns in [0, 0]");
  fails({.layouts = {kDocLayouts[0], kDocLayouts[1], kDocLayouts[0]}}, "layouts dividing num_heads 4");
  fails({.M = 7}, "total_sequence_length 8 is outside [8, min(7 cache rows, 8 = max_blocks * sparse_block_size)]");
  fails({.S = 1, .total = 7, .lengths = {8}}, "key_total_sequence_lengths[0] = 8 is outside [1, 7]");
  fails({.B = 2, .lengths = {8, 0}}, "key_total_sequence_lengths[1] = 0 is outside [1, 8]");
  Case rot{.h = 8, .rotary = true, .half = 5};
  fails(rot, "cos_cache has shape (10, 5); expected 1 to 4 columns");
  const auto [rows, cols] = csr(c.layouts);
  CHECK_THROWS_WITH_AS(run_node(node("SparseAttention", {"q", "k", "v", "pk", "pv", "rows", "cols", "total", "lengths"}, {"y"},
                                     {attr("num_heads", c.N), attr("kv_num_heads", c.Nkv), attr("sparse_block_size", c.block), attr("do_rotary", int64_t(1))},
                                     "s", "com.microsoft"),
                                {tensor<float>({1, 8, 16}, d.q), tensor<float>({1, 8, 8}, d.k), tensor<float>({1, 8, 8}, d.v),
                                 tensor<float>({1, 2, 10, 4}, d.pk), tensor<float>({1, 2, 10, 4}, d.pv), rows, cols,
                                 tensor<int32_t>({1}, {8}), tensor<int32_t>({1}, {8})}),
                       doctest::Contains("do_rotary=1 needs cos_cache and sin_cache"), Error);
  // a cache of 7 positions for a total of 8: the last position has no angle to turn by
  CHECK_THROWS_WITH_AS(run_node(node("SparseAttention", {"q", "k", "v", "pk", "pv", "rows", "cols", "total", "lengths", "cos", "sin"}, {"y"},
                                     {attr("num_heads", c.N), attr("kv_num_heads", c.Nkv), attr("sparse_block_size", c.block), attr("do_rotary", int64_t(1))},
                                     "s", "com.microsoft"),
                                {tensor<float>({1, 8, 16}, d.q), tensor<float>({1, 8, 8}, d.k), tensor<float>({1, 8, 8}, d.v),
                                 tensor<float>({1, 2, 10, 4}, d.pk), tensor<float>({1, 2, 10, 4}, d.pv), rows, cols,
                                 tensor<int32_t>({1}, {8}), tensor<int32_t>({1}, {8}), tensor<float>({7, 2}, wave(14, 0.3f)),
                                 tensor<float>({7, 2}, wave(14, 0.5f))}),
                       doctest::Contains("cos_cache has 7 rows, fewer than total_sequence_length 8"), Error);
  CHECK_THROWS_WITH_AS(run_node(node("SparseAttention", {"q", "k", "v", "pk", "pv", "rows", "cols", "total", "lengths"}, {"y"},
                                     {attr("num_heads", c.N), attr("kv_num_heads", c.Nkv), attr("sparse_block_size", c.block)}, "s", "com.microsoft"),
                                {tensor<float>({1, 8, 16}, d.q), tensor<float>({1, 8, 6}, wave(48, 1.f)), tensor<float>({1, 8, 8}, d.v),
                                 tensor<float>({1, 2, 10, 4}, d.pk), tensor<float>({1, 2, 10, 4}, d.pv), rows, cols,
                                 tensor<int32_t>({1}, {8}), tensor<int32_t>({1}, {8})}),
                       doctest::Contains("key has shape (1, 8, 6), expected (1, 8, 8)"), Error);
  CHECK_THROWS_WITH_AS(run_node(node("SparseAttention", {"q", "k", "v", "pk", "pv", "rows", "cols", "total", "lengths"}, {"y"},
                                     {attr("num_heads", int64_t(3)), attr("kv_num_heads", int64_t(2)), attr("sparse_block_size", c.block)}, "s", "com.microsoft"),
                                {}),
                       doctest::Contains("num_heads 3 must be a positive multiple of kv_num_heads 2"), Error);
}

TEST_CASE("SparseAttention refusals: one exact line each") {
  const std::string A = "node 's' (com.microsoft:SparseAttention): ";
  auto zeros = [](Shape s) { return tensor<float>(s, std::vector<float>(size_t(shape_size(s)), 0.0f)); };
  auto sparse = [](std::vector<std::string> ins, int64_t block = 8) {
    return node("SparseAttention", std::move(ins), {"y"},
                {attr("num_heads", int64_t(4)), attr("kv_num_heads", int64_t(2)), attr("sparse_block_size", block)}, "s", "com.microsoft");
  };
  const std::vector<std::string> all = {"q", "k", "v", "pk", "pv", "rows", "cols", "total", "lengths"};
  const Tensor q = zeros({1, 8, 16}), kv = zeros({1, 8, 8}), past = zeros({1, 2, 10, 4});
  const Tensor rows = tensor<int32_t>({1, 2}, {0, 1}), cols = tensor<int32_t>({1, 1}, {0});
  const Tensor total = tensor<int32_t>({1}, {8}), lengths = tensor<int32_t>({1}, {8});
  struct Case { std::string message; Node n; Values feeds; };
  const Case cases[] = {
      {"key and value must be given together", sparse({"q", "k", "", "pk", "pv", "rows", "cols", "total", "lengths"}),
       {q, kv, Value(), past, past, rows, cols, total, lengths}},
      {"query's hidden size 18 is not a multiple of num_heads 4", sparse(all), {zeros({1, 8, 18}), kv, kv, past, past, rows, cols, total, lengths}},
      {"packed QKV query has width 20, not a multiple of num_heads + 2 * kv_num_heads = 8",
       sparse({"q", "", "", "pk", "pv", "rows", "cols", "total", "lengths"}), {zeros({1, 8, 20}), Value(), Value(), past, past, rows, cols, total, lengths}},
      {"block_col_indices has shape (2, 1), expected (1, max_nnz)", sparse(all),
       {q, kv, kv, past, past, rows, tensor<int32_t>({2, 1}, {0, 0}), total, lengths}},
      {"sparse_block_size must be positive, got 0", sparse(all, 0), {q, kv, kv, past, past, rows, cols, total, lengths}},
      {"key and value must be given together", sparse({"q", "", "v", "pk", "pv", "rows", "cols", "total", "lengths"}),
       {q, Value(), kv, past, past, rows, cols, total, lengths}},
      {"block_row_indices has shape (1, 1), expected (layouts, max_blocks + 1) with layouts dividing num_heads 4 and max_blocks >= 1", sparse(all),
       {q, kv, kv, past, past, tensor<int32_t>({1, 1}, {0}), cols, total, lengths}},
      {"block_row_indices of layout 0 has offsets -1, 1 at block row 0; expected 0 <= offsets non-decreasing <= 1", sparse(all),
       {q, kv, kv, past, past, tensor<int32_t>({1, 2}, {-1, 1}), cols, total, lengths}},
      {"block_row_indices of layout 0 has offsets 1, 0 at block row 0; expected 0 <= offsets non-decreasing <= 1", sparse(all),
       {q, kv, kv, past, past, tensor<int32_t>({1, 2}, {1, 0}), cols, total, lengths}},
      {"block_row_indices of layout 0 has offsets 0, 2 at block row 0; expected 0 <= offsets non-decreasing <= 1", sparse(all),
       {q, kv, kv, past, past, tensor<int32_t>({1, 2}, {0, 2}), cols, total, lengths}},
      {"block_col_indices of layout 0 lists column -1 in block row 0; expected increasing columns in [0, 0] (a causal layout)", sparse(all),
       {q, kv, kv, past, past, rows, tensor<int32_t>({1, 1}, {-1}), total, lengths}},
      {"total_sequence_length must have one element", sparse(all), {q, kv, kv, past, past, rows, cols, tensor<int32_t>({2}, {8, 8}), lengths}},
      {"total_sequence_length 9 is outside [8, min(10 cache rows, 8 = max_blocks * sparse_block_size)]", sparse(all),
       {q, kv, kv, past, past, rows, cols, tensor<int32_t>({1}, {9}), lengths}},
      {"key_total_sequence_lengths[0] = 9 is outside [1, 8]", sparse(all), {q, kv, kv, past, past, rows, cols, total, tensor<int32_t>({1}, {9})}},
      {"num_heads 4 must be a positive multiple of kv_num_heads 0",
       node("SparseAttention", all, {"y"}, {attr("num_heads", int64_t(4)), attr("kv_num_heads", int64_t(0)), attr("sparse_block_size", int64_t(8))}, "s",
            "com.microsoft"),
       {q, kv, kv, past, past, rows, cols, total, lengths}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.message);
    CHECK_THROWS_WITH_AS(run_node(c.n, c.feeds), (A + c.message).c_str(), Error);
  }
}
