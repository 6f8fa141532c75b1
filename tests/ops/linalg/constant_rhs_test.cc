// A constant right operand packed once (ConstantRhs, ConstantRhsCache in linalg_common.h): the
// products read the in-order AVX2 kernel's panels (on AVX-512 CPUs, a transposed B in the few-row kernel's blocks)
// instead of copying B each call, and must give
// exactly the bits of the uncached path (and, where that kernel runs, of the in-order FMA chain
// computed one element at a time) for every row count: the GEMV-like one and two rows, the tiles
// below and above the 8 rows from which B used to be copied, odd K and N (partial vectors, the
// last 96-column block, a second 256-deep pass), B transposed or not, accumulating or not.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "../../../ops/linalg/linalg_common.h"
#include "refeval/threads.h"
#include "test_util.h"
#include "isa_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {


// The in-order kernel's contract, one element at a time: c[i][j] = fma(a[i][K-1], B[K-1][j], ...
// fma(a[i][0], B[0][j], c0)), with B[k][j] read from b stored N x K when trans_b.
std::vector<float> fma_chains(int64_t M, int64_t N, int64_t K, const std::vector<float>& a, const std::vector<float>& b,
                              bool trans_b, std::vector<float> c) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float sum = c[size_t(i * N + j)];
      for (int64_t k = 0; k < K; ++k)
        sum = std::fma(a[size_t(i * K + k)], b[size_t(trans_b ? j * K + k : k * N + j)], sum);
      c[size_t(i * N + j)] = sum;
    }
  return c;
}

// Eigen's small products (gemm_kernels.cc): below 2^18 multiply-adds, unless an in-order kernel
// takes a few-row product of a weight of 2^14 values or more.
bool takes_no_eigen(int64_t M, int64_t N, int64_t K) {
  return M * N * K >= (int64_t(1) << 18) || (N * K >= (int64_t(1) << 14) && ops::in_order_avx2_takes_anywhere(M));
}

bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("ConstantRhs: packed products are bit-identical to gemm() with B itself") {
  testing::for_each_isa([&](Isa) {
    struct Shape3 { int64_t N, K; };
    // 517 columns: five full 96-column blocks and one of 37 (a partial vector); 301 and 771 rows of
    // B: one pass, and four 256-deep passes with a partial one. 97 x 201 and 61 x 129: weights just
    // above and below the 2^14 values from which one-row products stream them.
    const Shape3 shapes[] = {{517, 301}, {97, 771}, {2304, 768}, {97, 201}, {61, 129}};
    for (const Shape3& sh : shapes)
      for (int64_t M : {1, 2, 7, 8, 32, 33, 128})
        for (bool trans_b : {false, true})
          for (bool accumulate : {false, true}) {
            CAPTURE(sh.N);
            CAPTURE(sh.K);
            CAPTURE(M);
            CAPTURE(trans_b);
            CAPTURE(accumulate);
            const int64_t N = sh.N, K = sh.K;
            const std::vector<float> a = random_floats(size_t(M * K), 1), bv = random_floats(size_t(K * N), 2);
            const Tensor b = tensor<float>(trans_b ? Shape{N, K} : Shape{K, N}, bv);
            const ops::ConstantRhs rhs(b, trans_b);
            REQUIRE(rhs.packed().bytes() == (ops::in_order_avx2_suits() || ops::in_order_avx512_suits() ? uint64_t(K * ((N + 15) / 16 * 16)) * 4 : 0));
            REQUIRE(rhs.small_m_blocks().size() == (trans_b && ops::in_order_avx512_suits() ? size_t(K * ((N + 47) / 48 * 48)) : 0));
            const std::vector<float> c0 = accumulate ? random_floats(size_t(M * N), 3) : std::vector<float>(size_t(M * N), 0.f);
            std::vector<float> plain = c0;
            ops::gemm(false, trans_b, M, N, K, a.data(), bv.data(), plain.data(), accumulate);
            for (int threads : {1, 2}) {
              CAPTURE(threads);
              set_thread_count(threads);
              std::vector<float> packed = c0;
              ops::gemm(false, M, a.data(), rhs, packed.data(), accumulate);
              CHECK(same_bits(packed, plain));
              // Where an in-order kernel takes the product, both are its chains: the AVX2 one at every
              // row count (on AVX-512 CPUs up to 4 rows), the AVX-512 small-M one with B transposed or
              // not. Eigen takes products of fewer than 2^18 multiply-adds, but not the one-row
              // products of a weight of 2^14 values or more (517 x 301: a streamed weight).
              if ((ops::in_order_avx2_takes(M) || ops::gemm_small_m_suits(M, N, K)) && takes_no_eigen(M, N, K))
                CHECK(same_bits(packed, fma_chains(M, N, K, a, bv, trans_b, c0)));
            }
            set_thread_count(1);
          }
  });
}

TEST_CASE("ConstantRhs: a weight of float16 (bfloat16) values is packed in that type and gives gemm()'s bits") {
  testing::for_each_isa([&](Isa) {
    const bool strips_read = ops::in_order_avx2_suits() || ops::in_order_avx512_suits();
    // 517 x 301 and 97 x 771: partial vectors and blocks, several 256-deep passes; rows 1-8 and 13
    // (every tile height and the 6-row groups before a leftover).
    for (ops::StripType type : {ops::StripType::Float16, ops::StripType::BFloat16})
      for (const auto& NK : {std::pair<int64_t, int64_t>{517, 301}, {97, 771}})
        for (bool trans_b : {false, true}) {
          const int64_t N = NK.first, K = NK.second;
          CAPTURE(int(type));
          CAPTURE(N);
          CAPTURE(K);
          CAPTURE(trans_b);
          // The values a float16 (bfloat16) weight widens to, with a negative zero and the type's
          // extremes: float16's subnormals and largest finite, bfloat16's tiny and huge exponents.
          std::vector<float> bv = random_floats(size_t(K * N), 40);
          for (float& x : bv) x = type == ops::StripType::Float16 ? float(float16(x)) : float(bfloat16(x));
          bv[0] = -0.f;
          bv[1] = type == ops::StripType::Float16 ? 65504.f : float(bfloat16(1e38f));
          bv[2] = type == ops::StripType::Float16 ? float(float16::from_bits(0x0001)) : float(bfloat16(1e-38f));
          const ops::ConstantRhs rhs(tensor<float>(trans_b ? Shape{N, K} : Shape{K, N}, bv), trans_b);
          CHECK(ops::exact_strip_type(bv.data(), int64_t(bv.size())) == type);
          CHECK(rhs.packed().bytes() == (strips_read ? uint64_t(K * ((N + 15) / 16 * 16)) * 2 : 0));
          for (int64_t M : {1, 2, 3, 4, 5, 6, 7, 8, 13}) {
            CAPTURE(M);
            const std::vector<float> a = random_floats(size_t(M * K), 41);
            const std::vector<float> c0 = random_floats(size_t(M * N), 42);
            std::vector<float> plain = c0, packed = c0;
            ops::gemm(false, trans_b, M, N, K, a.data(), bv.data(), plain.data(), true);
            ops::gemm(false, M, a.data(), rhs, packed.data(), true);
            CHECK(same_bits(packed, plain));
            if (ops::in_order_avx2_takes(M) && takes_no_eigen(M, N, K))
              CHECK(same_bits(packed, fma_chains(M, N, K, a, bv, trans_b, c0)));
          }
        }
    // One value off the type's grid and the weight stays float.
    std::vector<float> bv(64 * 48, 0.5f);
    bv[100] = 0.1f;
    CHECK(ops::exact_strip_type(bv.data(), int64_t(bv.size())) == ops::StripType::Float);
    bv[100] = 0.5f + 1.f / 2048;  // a bfloat16 neither, but a float16
    CHECK(ops::exact_strip_type(bv.data(), int64_t(bv.size())) == ops::StripType::Float16);
  });
}

TEST_CASE("ConstantRhs: a transposed A with a packed B gives gemm()'s bits") {
  testing::for_each_isa([&](Isa) {
    const int64_t M = 33, N = 517, K = 301;
    const std::vector<float> at = random_floats(size_t(K * M), 4), bv = random_floats(size_t(K * N), 5);
    const ops::ConstantRhs rhs(tensor<float>({K, N}, bv), false);
    std::vector<float> plain(size_t(M * N)), packed(size_t(M * N));
    ops::gemm(true, false, M, N, K, at.data(), bv.data(), plain.data(), false);
    ops::gemm(true, M, at.data(), rhs, packed.data(), false);
    CHECK(same_bits(packed, plain));
  });
}

namespace {

// One node with A fed and B an initializer (the cached path) or fed too (the uncached path).
Values run_with_weight(const Node& n, const Tensor& a, const Tensor& b, bool b_initializer, int runs = 1) {
  std::vector<ValueInfo> inputs{build::tensor_info_unknown_rank("a", a.dtype())};
  std::vector<Initializer> inits;
  if (b_initializer) inits.push_back({"b", b});
  else inputs.push_back(build::tensor_info_unknown_rank("b", b.dtype()));
  Graph g = build::graph("g", {n}, inputs, {build::tensor_info_unknown_rank("y", a.dtype())}, inits);
  auto ev = ReferenceEvaluator::from_graph(g, {{"", 21}});
  std::map<std::string, Value> feeds{{"a", a}};
  if (!b_initializer) feeds["b"] = b;
  Values out;
  for (int r = 0; r < runs; ++r) out = ev.run({}, feeds);
  return out;
}

bool same_bits(const Value& x, const Value& y) {
  const Tensor &tx = x.tensor(), &ty = y.tensor();
  return tx.shape() == ty.shape() && tx.nbytes() == ty.nbytes() && std::memcmp(tx.raw_data(), ty.raw_data(), tx.nbytes()) == 0;
}

}  // namespace

TEST_CASE("MatMul and Gemm with an initializer B: the same bits as with B fed, on every run") {
  testing::for_each_isa([&](Isa) {
    const int64_t K = 301, N = 517;
    const Tensor b = tensor<float>({K, N}, random_floats(size_t(K * N), 6));
    const Tensor bt = tensor<float>({N, K}, random_floats(size_t(K * N), 7));
    for (int64_t M : {1, 2, 7, 8, 32, 33, 128}) {
      CAPTURE(M);
      const Tensor a3 = tensor<float>({1, M, K}, random_floats(size_t(M * K), 8));
      const Node matmul = node("MatMul", {"a", "b"}, {"y"});
      CHECK(same_bits(run_with_weight(matmul, a3, b, true, 3)[0], run_with_weight(matmul, a3, b, false)[0]));

      const Tensor a2 = tensor<float>({M, K}, random_floats(size_t(M * K), 9));
      const Node gemm = node("Gemm", {"a", "b"}, {"y"}, {attr("transB", int64_t(1)), attr("alpha", 0.5f)});
      CHECK(same_bits(run_with_weight(gemm, a2, bt, true, 3)[0], run_with_weight(gemm, a2, bt, false)[0]));
    }
  });
}

TEST_CASE("MatMul and Gemm in float16 and bfloat16 with an initializer B: packed once, the same bits as with B fed") {
  // A float16 model's weights: read from their float16 strips instead of widened on every call.
  testing::for_each_isa([&](Isa) {
    const int64_t K = 301, N = 517;
    auto narrow = [](DType type, Shape shape, unsigned seed) {
      const std::vector<float> v = random_floats(size_t(shape[0] * shape[1] * (shape.size() > 2 ? shape[2] : 1)), seed);
      if (type == DType::Float16) {
        std::vector<float16> h(v.size());
        std::transform(v.begin(), v.end(), h.begin(), [](float x) { return float16(x); });
        return tensor<float16>(shape, h);
      }
      std::vector<bfloat16> h(v.size());
      std::transform(v.begin(), v.end(), h.begin(), [](float x) { return bfloat16(x); });
      return tensor<bfloat16>(shape, h);
    };
    for (DType type : {DType::Float16, DType::BFloat16}) {
      CAPTURE(int(type));
      const Tensor b = narrow(type, {K, N}, 50), bt = narrow(type, {N, K}, 51);
      for (int64_t M : {1, 2, 4, 7, 33}) {
        CAPTURE(M);
        const Node matmul = node("MatMul", {"a", "b"}, {"y"});
        const Tensor a3 = narrow(type, {1, M, K}, 52);
        const uint64_t before = ops::constant_rhs_packs();
        const Value cached = run_with_weight(matmul, a3, b, true, 3)[0];
        CHECK(ops::constant_rhs_packs() == before + (ops::in_order_avx2_suits() || ops::in_order_avx512_suits() ? 1 : 0));
        CHECK(same_bits(cached, run_with_weight(matmul, a3, b, false)[0]));
        const Tensor a2 = narrow(type, {M, K}, 53);
        const Node gemm = node("Gemm", {"a", "b"}, {"y"}, {attr("transB", int64_t(1)), attr("alpha", 0.5f)});
        CHECK(same_bits(run_with_weight(gemm, a2, bt, true, 3)[0], run_with_weight(gemm, a2, bt, false)[0]));
        const Tensor at = narrow(type, {K, M}, 54);  // A stored transposed
        const Node gemm_ta = node("Gemm", {"a", "b"}, {"y"}, {attr("transA", int64_t(1))});
        CHECK(same_bits(run_with_weight(gemm_ta, at, b, true, 2)[0], run_with_weight(gemm_ta, at, b, false)[0]));
      }
    }
  });
}

TEST_CASE("Gemm with transB and MatMul with B's transpose: the same bits where an in-order kernel runs") {
  testing::for_each_isa([&](Isa) {
    // A classifier head exported as Gemm(transB) computes what the same layer as a MatMul does.
    const int64_t K = 1024, N = 1000;
    const std::vector<float> bv = random_floats(size_t(N * K), 20);
    const std::vector<float> bt = ops::untransposed(bv.data(), K, N);
    const Node gemm = node("Gemm", {"a", "b"}, {"y"}, {attr("transB", int64_t(1))});
    const Node matmul = node("MatMul", {"a", "b"}, {"y"});
    for (int64_t M : {1, 3, 8, 32}) {
      CAPTURE(M);
      if (!ops::in_order_avx2_takes(M) && !ops::gemm_small_m_suits(M, N, K)) continue;  // OpenBLAS may differ
      const Tensor a = tensor<float>({M, K}, random_floats(size_t(M * K), 21));
      const Value by_gemm = run_with_weight(gemm, a, tensor<float>({N, K}, bv), true, 2)[0];
      CHECK(same_bits(by_gemm, run_with_weight(matmul, a, tensor<float>({K, N}, bt), true)[0]));
      CHECK(same_bits(by_gemm, run_with_weight(gemm, a, tensor<float>({N, K}, bv), false)[0]));
    }
  });
}

TEST_CASE("MatMul: an initializer that a feed replaces is not cached") {
  testing::for_each_isa([&](Isa) {
    // B is an initializer and a graph input: a feed overrides it, so its panels must never be reused.
    const int64_t M = 32, K = 64, N = 200;
    const Tensor a = tensor<float>({M, K}, random_floats(size_t(M * K), 10));
    const Tensor b0 = tensor<float>({K, N}, random_floats(size_t(K * N), 11));
    const Tensor b1 = tensor<float>({K, N}, random_floats(size_t(K * N), 12));
    Graph g = build::graph("g", {node("MatMul", {"a", "b"}, {"y"})},
                           {build::tensor_info_unknown_rank("a", DType::Float), build::tensor_info_unknown_rank("b", DType::Float)},
                           {build::tensor_info_unknown_rank("y", DType::Float)}, {{"b", b0}});
    auto ev = ReferenceEvaluator::from_graph(g, {{"", 21}});
    const Value with_b0 = ev.run({}, {{"a", a}})[0];
    const Value with_b1 = ev.run({}, {{"a", a}, {"b", b1}})[0];
    const Node matmul = node("MatMul", {"a", "b"}, {"y"});
    CHECK(same_bits(with_b0, run_with_weight(matmul, a, b0, false)[0]));
    CHECK(same_bits(with_b1, run_with_weight(matmul, a, b1, false)[0]));
    CHECK_FALSE(same_bits(with_b0, with_b1));
  });
}

TEST_CASE("MatMul: an initializer B is packed once, as the session is made, not by its runs") {
  testing::for_each_isa([&](Isa) {
    if (!ops::in_order_avx2_suits() && !ops::in_order_avx512_suits()) return;  // the generic path reads B as it lies
    const int64_t M = 8, K = 64, N = 100;
    Graph g = build::graph("g", {node("MatMul", {"a", "b"}, {"y"})}, {build::tensor_info_unknown_rank("a", DType::Float)},
                           {build::tensor_info_unknown_rank("y", DType::Float)},
                           {{"b", tensor<float>({K, N}, random_floats(size_t(K * N), 13))}});
    const uint64_t before = ops::constant_rhs_packs();
    auto ev = ReferenceEvaluator::from_graph(g, {{"", 21}});
    CHECK(ops::constant_rhs_packs() == before + 1);
    for (int r = 0; r < 3; ++r) ev.run({}, {{"a", tensor<float>({M, K}, random_floats(size_t(M * K), 14 + r))}});
    CHECK(ops::constant_rhs_packs() == before + 1);
  });
}

TEST_CASE("MatMul: a weight made by a folded node (a float16 weight's Cast) is packed once, at the first run") {
  testing::for_each_isa([&](Isa) {
    const int64_t M = 2, K = 96, N = 200;
    const std::vector<float> wv = random_floats(size_t(K * N), 31);
    // The float16 weight, and the float one its Cast gives (float16 -> float is exact).
    std::vector<float16> halves;
    std::vector<float> widened;
    for (float v : wv) halves.push_back(float16(v)), widened.push_back(float(halves.back()));
    const Tensor w16 = Tensor::from_vector<float16>({K, N}, halves), w32 = tensor<float>({K, N}, widened);
    Graph g = build::graph("g", {node("Cast", {"w16"}, {"w"}, {attr("to", int64_t(DType::Float))}), node("MatMul", {"a", "w"}, {"y"})},
                           {build::tensor_info_unknown_rank("a", DType::Float)}, {build::tensor_info_unknown_rank("y", DType::Float)},
                           {{"w16", w16}});
    auto ev = ReferenceEvaluator::from_graph(g, {{"", 21}});
    const uint64_t before = ops::constant_rhs_packs();
    const bool packs = ops::in_order_avx2_suits() || ops::in_order_avx512_suits();
    for (int r = 0; r < 3; ++r) {
      const Tensor a = tensor<float>({M, K}, random_floats(size_t(M * K), 32 + r));
      const Value y = ev.run({}, {{"a", a}})[0];
      CHECK(same_bits(y, run_with_weight(node("MatMul", {"a", "b"}, {"y"}), a, w32, false)[0]));  // B fed: read where it lies
      CHECK(ops::constant_rhs_packs() == before + (packs ? 1 : 0));  // packed by the first run, reused after
    }
  });
}

TEST_CASE("MatMul reading Transpose(W) (a tied LM head): packed from W itself, the Transpose not made, the same bits as W^T fed") {
  // Qwen2 and Gemma read their 545 MB embedding table through Transpose for the LM head: folding
  // it would hold W^T beside W and the strips.
  struct Seen : Observer {
    bool every = true;
    std::vector<std::string> nodes;
    void before_node(const NodeEvent& e) override { nodes.push_back(e.id); }
    bool sees_every_node() const override { return every; }
  };
  testing::for_each_isa([&](Isa) {
    const int64_t K = 96, N = 517;
    const std::vector<float> wv = random_floats(size_t(N * K), 40);
    const std::vector<float> wt = ops::untransposed(wv.data(), K, N);
    auto head = [&](bool also_output) {
      std::vector<ValueInfo> outputs = {build::tensor_info_unknown_rank("y", DType::Float)};
      if (also_output) outputs.push_back(build::tensor_info_unknown_rank("wt", DType::Float));
      return ReferenceEvaluator::from_graph(
          build::graph("g", {node("Transpose", {"w"}, {"wt"}, {}, "t"), node("MatMul", {"a", "wt"}, {"y"}, {}, "head")},
                       {build::tensor_info_unknown_rank("a", DType::Float)}, outputs, {{"w", tensor<float>({N, K}, wv)}}),
          {{"", 21}});
    };
    const bool packs = ops::in_order_avx2_suits() || ops::in_order_avx512_suits();
    auto ev = head(false);
    Seen lean, every;
    lean.every = false;
    for (int64_t M : {1, 3, 5, 33, 130}) {  // 1 and 3: Eigen's small products
      CAPTURE(M);
      const Tensor a = tensor<float>({1, M, K}, random_floats(size_t(M * K), 41 + unsigned(M)));
      const Value fed = run_with_weight(node("MatMul", {"a", "b"}, {"y"}), a, tensor<float>({K, N}, wt), false)[0];
      ev.add_observer(&lean);
      CHECK(same_bits(ev.run({}, {{"a", a}})[0], fed));
      ev.remove_observer(&lean);
      ev.add_observer(&every);
      CHECK(same_bits(ev.run({}, {{"a", a}})[0], fed));  // the Transpose run and its W^T given: the same bits
      ev.remove_observer(&every);
      CHECK(same_bits(ev.run({}, {{"a", a}})[0], fed));
    }
    // One copy of the weight, in strips of 16 columns: no small-M blocks, and no W^T packed too.
    {
      auto lone = head(false);
      const uint64_t bytes = ops::packed_weight_bytes();
      lone.run({}, {{"a", tensor<float>({33, K}, random_floats(size_t(33 * K), 70))}});
      CHECK(ops::packed_weight_bytes() - bytes == (packs ? uint64_t((N + 15) / 16 * 16 * K) * sizeof(float) : 0));
    }
    CHECK(std::count(lean.nodes.begin(), lean.nodes.end(), "t") == (packs ? 0 : 5));  // the generic path reads W^T made
    ev.add_observer(&lean);
    testing::check_equal(ev.run({"wt"}, {{"a", tensor<float>({1, K}, random_floats(size_t(K), 80))}})[0], tensor<float>({K, N}, wt));
    ev.remove_observer(&lean);  // W^T asked for: made
    CHECK(std::count(every.nodes.begin(), every.nodes.end(), "t") == 5);
    lean.nodes.clear();
    // W^T also a graph output: made, and the product the same.
    auto shown = head(true);
    shown.add_observer(&lean);
    const Tensor a = tensor<float>({2, K}, random_floats(size_t(2 * K), 60));
    const Values both = shown.run({}, {{"a", a}});
    CHECK(same_bits(both[0], run_with_weight(node("MatMul", {"a", "b"}, {"y"}), a, tensor<float>({K, N}, wt), false)[0]));
    testing::check_equal(both[1], tensor<float>({K, N}, wt));
    CHECK(std::count(lean.nodes.begin(), lean.nodes.end(), "t") == 1);
  });
}
