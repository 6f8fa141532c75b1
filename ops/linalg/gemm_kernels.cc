// GEMM kernels and the matmul shape rules. Large float products run on refeval's own kernels,
// every element one chain of fused multiply-adds over k in order, so a row's bits depend neither
// on the thread count nor on the CPU's instruction set: few rows of A on the small-M AVX-512
// kernel (gemm_small_m.cc: GPT-2's LM head, 32 x 768 x 50257, in 27 ms against OpenBLAS's 41-48)
// or the AVX2 tiles (gemm_in_order_avx2.cc), many rows on the AVX-512 panel kernel
// (gemm_panels_avx512.cc) or the AVX2 tiles, and the portable loops elsewhere. Large double
// products (fp64 judging) run on OpenBLAS (Debian's libopenblas, about twice Eigen's speed). Small
// ones run on Eigen, whose summation order gives numpy's float results on the small models the
// Python reference's golden traces are made of (OpenBLAS differs in the last bit).
//
// On a CPU with AVX-512, OpenBLAS runs its AVX-512 kernels whatever it would pick itself
// (avx512_blas_chosen): its AVX2 ones sum edge tiles in another order.
#include "refeval/compute_vector.h"
#include "refeval/isa.h"
#include "linalg_common.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "refeval/file_backed.h"
#include <cblas.h>
#include <fmt/format.h>

#include "refeval/elementwise.h"
#include "refeval/threads.h"

// OpenBLAS's run-time kernel choice (its DYNAMIC_ARCH builds export these; weak: other builds lack them).
extern "C" {
char* openblas_get_corename(void);
void gotoblas_dynamic_init(void) __attribute__((weak));
void gotoblas_dynamic_quit(void) __attribute__((weak));
}

namespace refeval::ops {
namespace {

std::atomic<uint64_t> g_fast_calls{0};

constexpr int64_t kBlasWork = int64_t(1) << 18;  // M * N * K from which Eigen hands over
// ... or from which B has this many values (64 KiB) and few rows read it: a decode step streams
// such a weight from memory (a key or value projection, 768 x 256), which Eigen's one-thread
// product read at 11-13 GB/s, the in-order kernel at twice that, split over the threads
// (benchmarks/gemv/sweep.sh with STREAMED). Weights in cache run as fast either way.
constexpr int64_t kStreamedWeight = int64_t(1) << 14;

// OpenBLAS runs on one thread, in fixed blocks of C, 1024 columns when C is wider than tall, else
// 128 rows, every call of one shape: the blocks depend on the shape only, never on the thread
// count, and OpenBLAS's AVX-512 kernels sum every element of a call the same way wherever it sits
// (benchmarks/blas/kernels.sh). Debian's serial OpenBLAS (libopenblas0-serial, linked for its
// quiet start-up) keeps its work buffers in tables it does not lock: two threads inside it at once
// compute into each other's buffers (a 512-token prefill's batched float MatMuls, when they still
// ran there, gave other logits run to run on two threads). So one thread of the process at a time
// calls it, refeval's pool threads and any other caller alike.
constexpr int64_t kColumnBlock = 1024, kRowBlock = 128;
std::mutex g_openblas_mutex;

// Eigen runs single-threaded: the library is built without OpenMP, so refeval's pool
// (refeval/threads.h) is the only one (Eigen's OpenMP products once waited 20-40 ms for a second
// thread on a busy machine, 100x the work of a 32 x 64 x 64 product).

// refeval's GEMM results depend on OpenBLAS's kernels: its AVX2 "Haswell" kernels sum edge tiles
// in another order than the inner ones, so equal rows of A gave unequal rows of C
// (light_squeezenet's 1000 equal channels came out unequal, a one-hot softmax where every runtime
// gives 0.001 each); its AVX-512 "SkylakeX" kernels sum every element the same way. OpenBLAS takes
// the Haswell kernels on a CPU with AVX-512 when OPENBLAS_CORETYPE says so (set on some machines
// to make numpy's results the same across hosts) or when it does not know the CPU (Debian 12's
// 0.3.21 and AMD Zen 5). refeval then re-runs OpenBLAS's choice with SkylakeX forced, once,
// before any BLAS call (a static initialiser runs after OpenBLAS's own and before main); the
// variable itself is put back as it was, for child processes. SkylakeX also ran the light suite
// as fast or faster on a Zen 5 (2.86 s against 2.92, medians of 3).
bool avx512_blas_chosen() {
  if (!gotoblas_dynamic_init || !gotoblas_dynamic_quit) return false;
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512cd");
  const std::string core = openblas_get_corename();
  if (!avx512 || core == "SkylakeX" || core == "Cooperlake" || core == "SapphireRapids") return false;
  const char* user = std::getenv("OPENBLAS_CORETYPE");
  const std::string saved = user ? user : "";
  setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);
  gotoblas_dynamic_quit();
  gotoblas_dynamic_init();
  if (user) setenv("OPENBLAS_CORETYPE", saved.c_str(), 1);
  else unsetenv("OPENBLAS_CORETYPE");
  return true;
}
[[maybe_unused]] const bool kAvx512Blas = avx512_blas_chosen();

void single_threaded_blas() {
  static const bool once = (openblas_set_num_threads(1), true);
  (void)once;
}

template <class T>
void eigen_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const T* a, const T* b, T* c, bool acc) {
  using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<Mat> C(c, M, N);
  Eigen::Map<const Mat> A(a, ta ? K : M, ta ? M : K);
  Eigen::Map<const Mat> B(b, tb ? N : K, tb ? K : N);
  auto run = [&](const auto& opa, const auto& opb) {
    if (acc) C.noalias() += opa * opb;
    else C.noalias() = opa * opb;
  };
  if (ta && tb) run(A.transpose(), B.transpose());
  else if (ta) run(A.transpose(), B);
  else if (tb) run(A, B.transpose());
  else run(A, B);
}

// Whether Eigen takes a float product: a small one, unless the in-order kernel streams its B for
// few rows, which it does on every CPU with AVX2 (AVX-512 and AVX2 give the same bits).
bool eigen_takes(bool ta, int64_t M, int64_t N, int64_t K) {
  if (M * N * K >= kBlasWork) return false;
  return ta || N * K < kStreamedWeight || !in_order_avx2_takes_anywhere(M);
}

// What every product does first: nothing when C is empty, zeros (or C as it is) when there is no
// k to sum over, Eigen for a small one (eigen_takes). true when that was all.
template <class T>
bool empty_or_small(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const T* a, const T* b, T* c, bool acc) {
  g_fast_calls.fetch_add(1, std::memory_order_relaxed);
  if (M == 0 || N == 0) return true;
  if (K == 0) {
    if (!acc) std::fill(c, c + M * N, T(0));
    return true;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (!eigen_takes(ta, M, N, K)) return false;
  } else if (M * N * K >= kBlasWork) {
    return false;
  }
  eigen_gemm(ta, tb, M, N, K, a, b, c, acc);
  return true;
}

// B where it lies (K x N, or stored N x K when transposed), copied a panel at a time into the
// panel kernel's strips of 16 columns.
class MatrixSource final : public PanelSource {
 public:
  MatrixSource(const float* b, bool trans_b, int64_t K, int64_t N) : b_(b), trans_b_(trans_b), K_(K), N_(N) {}
  void fill(int64_t k0, int64_t depth, int64_t n0, int64_t width, float* strips) const override {
    for (int64_t j = 0; j < width; j += 16) {
      const int64_t columns = std::min<int64_t>(16, width - j);
      float* strip = strips + j * depth;
      if (!trans_b_) {
        for (int64_t k = 0; k < depth; ++k) std::copy_n(b_ + (k0 + k) * N_ + n0 + j, columns, strip + k * 16);
        continue;
      }
      for (int64_t col = 0; col < columns; ++col) {
        const float* column = b_ + (n0 + j + col) * K_ + k0;
        for (int64_t k = 0; k < depth; ++k) strip[k * 16 + col] = column[k];
      }
    }
  }

 private:
  const float* b_;
  bool trans_b_;
  int64_t K_, N_;
};

// C (M x N, row-major) = op(A) op(B) (+ C when acc); a transposed operand is stored K x M / N x K.
// `packed`: b in the in-order AVX2 kernel's panels, `small_m_blocks`: a transposed b in the few-row
// kernel's blocks (ConstantRhs), read in place of b by the kernels they are made for; every
// other path reads b.
void float_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* a, const float* b, float* c, bool acc,
                PackedStrips packed = {}, const float* small_m_blocks = nullptr) {
  if (empty_or_small(ta, tb, M, N, K, a, b, c, acc)) return;
  if (active_isa() == Isa::Generic) return gemm_in_order_portable(ta, tb, M, N, K, a, b, c, acc);
  // The in-order AVX2 kernel takes every product without AVX-512 and few-row ones with it; a
  // transposed operand is copied untransposed first (O(MK) or O(NK) against the product's O(MNK)).
  if (!ta && !tb && gemm_in_order_avx2(M, N, K, a, b, c, acc, packed)) return;
  if ((ta || tb) && in_order_avx2_takes(M)) {
    const std::vector<float> at = ta ? untransposed(a, M, K) : std::vector<float>();
    // The panels hold B untransposed already.
    const std::vector<float> bt = tb && !packed.data ? untransposed(b, K, N) : std::vector<float>();
    gemm_in_order_avx2(M, N, K, ta ? at.data() : a, tb && !packed.data ? bt.data() : b, c, acc, packed);
    return;
  }
  if (!ta && !tb && gemm_small_m(M, N, K, a, b, c, acc)) return;
  // A transposed B at few rows goes there too, untransposed into its blocks first: O(NK), which
  // OpenBLAS spent packing it on every call anyway (a constant B's are made once).
  if (!ta && tb && gemm_small_m_suits(M, N, K)) {
    AlignedVector<float> made;
    if (!small_m_blocks) made = pack_small_m(true, K, N, b), small_m_blocks = made.data();
    gemm_small_m(M, N, K, a, nullptr, c, acc, small_m_blocks);
    return;
  }
  // What is left runs on an AVX-512 CPU: its panel kernel, B gathered a panel at a time.
  const std::vector<float> at = ta ? untransposed(a, M, K) : std::vector<float>();
  if (!gemm_panels_avx512(M, N, K, ta ? at.data() : a, MatrixSource(b, tb, K, N), c, acc))
    throw std::logic_error("float_gemm: no kernel took the product");
}

// The double product: Eigen when small, else OpenBLAS block by block on the calling thread (one
// caller at a time: refeval's other threads would only wait for the lock).
void double_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const double* a, const double* b, double* c,
                 bool acc) {
  if (empty_or_small(ta, tb, M, N, K, a, b, c, acc)) return;
  single_threaded_blas();
  const bool by_columns = N >= M;
  const int64_t extent = by_columns ? N : M, step = std::min(extent, by_columns ? kColumnBlock : kRowBlock);
  const int64_t blocks = (extent + step - 1) / step;
  // C's block of `step` columns (rows) from `first`, written at `cb` with row stride ldc.
  auto product = [&](int64_t first, double* cb, int64_t ldc) {
    // A transposed operand is stored K x M (N x K for b): its block starts `first` columns (rows) in.
    const double* ab = by_columns ? a : a + (ta ? first : first * K);
    const double* bb = by_columns ? b + (tb ? first * K : first) : b;
    const int64_t m = by_columns ? M : step, n = by_columns ? step : N;
    std::lock_guard lock(g_openblas_mutex);
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, blasint(m), blasint(n),
                blasint(K), 1.0, ab, blasint(ta ? M : K), bb, blasint(tb ? K : N), acc ? 1.0 : 0.0, cb, blasint(ldc));
  };
  for (int64_t block = 0; block < blocks; ++block) {
    const int64_t first = block * step;
    if (first + step <= extent) {
      product(first, by_columns ? c + first : c + first * N, N);
      continue;
    }
    // The last, partial block runs as a full one ending at C's edge, into scratch (every call
    // has one shape, so equal inputs give equal bits: a narrower call summed differently); only
    // the part no other block wrote goes back.
    const int64_t start = extent - step, rows = by_columns ? M : step, cols = by_columns ? step : N;
    std::vector<double> scratch(size_t(rows * cols));
    double* origin = by_columns ? c + start : c + start * N;
    if (acc)
      for (int64_t i = 0; i < rows; ++i) std::copy(origin + i * N, origin + i * N + cols, scratch.data() + i * cols);
    product(start, scratch.data(), cols);
    const int64_t skip = first - start;  // columns (rows) the previous block wrote
    for (int64_t i = by_columns ? 0 : skip; i < rows; ++i)
      std::copy(scratch.data() + i * cols + (by_columns ? skip : 0), scratch.data() + (i + 1) * cols,
                origin + i * N + (by_columns ? skip : 0));
  }
}

// Panels of B read from its packed strips (pack_column_blocks, 16 columns): strip t holds rows
// 0..K-1 of columns 16t..16t+15 from 16 t K on, so a panel's strip is one contiguous copy.
class PackedStripsSource final : public PanelSource {
 public:
  PackedStripsSource(const float* strips, int64_t K) : strips_(strips), K_(K) {}
  void fill(int64_t k0, int64_t depth, int64_t n0, int64_t width, float* panel) const override {
    for (int64_t j = 0; j < width; j += 16)
      std::copy_n(strips_ + (n0 + j) * K_ + k0 * 16, depth * 16, panel + j * depth);
  }

 private:
  const float* strips_;
  int64_t K_;
};

}  // namespace

std::vector<float> untransposed(const float* x, int64_t rows, int64_t cols) {
  std::vector<float> out(size_t(rows * cols));
  for (int64_t c = 0; c < cols; ++c)
    for (int64_t r = 0; r < rows; ++r) out[size_t(r * cols + c)] = x[c * rows + r];
  return out;
}

void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* a, const float* b, float* c, bool acc) {
  float_gemm(ta, tb, M, N, K, a, b, c, acc);
}
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const double* a, const double* b, double* c, bool acc) {
  double_gemm(ta, tb, M, N, K, a, b, c, acc);
}
void gemm(bool ta, int64_t M, const float* a, const ConstantRhs& b, float* c, bool acc) {
  if (!b.holds_source() && (ta || acc || active_isa() == Isa::Generic || eigen_takes(ta, M, b.N(), b.K())))
    throw std::logic_error("gemm: a weight packed for plain products only was asked for another product");
  if (b.narrow()) {
    // float_gemm's first branches: Eigen for small products, the portable path, then the in-order
    // AVX2 kernel wherever it takes M rows, which alone reads the packed strips instead of B.
    const bool strips_read = !eigen_takes(ta, M, b.N(), b.K()) && active_isa() != Isa::Generic && in_order_avx2_takes(M);
    if (strips_read)
      return float_gemm(ta, b.trans_b(), M, b.N(), b.K(), a, nullptr, c, acc, b.packed().strips());
    const std::vector<float> wide = b.widened();
    return float_gemm(ta, b.trans_b(), M, b.N(), b.K(), a, wide.data(), c, acc);
  }
  if (!ta && !acc && b.packed().type == StripType::Float && !b.packed().wide.empty() && !in_order_avx2_takes(M) &&
      gemm_panels_suits(M, b.N(), b.K())) {
    // Many rows on an AVX-512 CPU: its panel kernel reads the packed strips, copied whole, instead
    // of gathering them from B (which may have left memory for its file).
    const PackedStripsSource strips(b.packed().wide.data(), b.K());
    if (gemm_panels_avx512(M, b.N(), b.K(), a, strips, c, false)) return;
  }
  float_gemm(ta, b.trans_b(), M, b.N(), b.K(), a, b.data(), c, acc, b.packed().strips(),
             b.small_m_blocks().empty() ? nullptr : b.small_m_blocks().data());
}
bool gemm_panels_suits(int64_t M, int64_t N, int64_t K) {
  // Below kBlasWork float_gemm takes Eigen, which a product this small suits better.
  return M * N * K >= kBlasWork && (in_order_avx2_suits() || in_order_avx512_suits());
}
void gemm_panels(int64_t M, int64_t N, int64_t K, const float* a, const PanelSource& b, float* c,
                 const float* row_bias) {
  g_fast_calls.fetch_add(1, std::memory_order_relaxed);
  if (!gemm_panels_avx512(M, N, K, a, b, c, false, row_bias)) gemm_in_order_avx2(M, N, K, a, b, c, false, row_bias);
}
uint64_t blas_gemm_calls() { return g_fast_calls.load(); }

void for_each_panel(int64_t M, int64_t N, int64_t K, int64_t row_tile, const PanelSource& b,
                    const PanelProduct& product, const float* row_bias, float* c) {
  constexpr int64_t kBlockCols = 96, kDepth = 256;
  // Every element is the same chain however the work is split.
  const int64_t blocks = (N + kBlockCols - 1) / kBlockCols, groups = (M + row_tile - 1) / row_tile;
  const int64_t parts = std::min(groups, std::max<int64_t>(1, (thread_count() + blocks - 1) / blocks));
  const int64_t part_rows = (groups + parts - 1) / parts * row_tile;
  parallel_for(blocks * parts, 1, [&](int64_t first, int64_t last) {
    thread_local AlignedVector<float> panel(size_t(kDepth * kBlockCols));
    for (int64_t item = first; item < last; ++item) {
      const int64_t n0 = item / parts * kBlockCols, width = std::min(kBlockCols, N - n0);
      const int64_t m0 = item % parts * part_rows, rows = std::min(part_rows, M - m0);
      if (rows <= 0) continue;
      for (int64_t k0 = 0; k0 < K; k0 += kDepth) {
        const int64_t depth = std::min(kDepth, K - k0);
        b.fill(k0, depth, n0, width, panel.data());
        product(m0, rows, n0, width, k0, depth, panel.data());
      }
      if (row_bias)
        for (int64_t m = m0; m < m0 + rows; ++m)
          for (float *y = c + m * N + n0, *end = y + width; y < end; ++y) *y += row_bias[m];
    }
  });
}

namespace {
template <class E, class S, class Convert>
AlignedVector<E> column_blocks(bool trans_b, int64_t K, int64_t N, const S* b, int64_t width, Convert convert,
                              bool release_read = false) {
  AlignedVector<E> blocks(size_t((N + width - 1) / width * width * K), E(0));
  for (int64_t n0 = 0; n0 < N; n0 += width) {
    E* block = blocks.data() + n0 * K;
    const int64_t columns = std::min(width, N - n0);
    if (trans_b) {
      for (int64_t j = 0; j < columns; ++j)
        for (int64_t k = 0; k < K; ++k) block[k * width + j] = convert(b[(n0 + j) * K + k]);
      if (release_read) release_file_pages(b + n0 * K, size_t(columns * K) * sizeof(S));
    } else {
      for (int64_t k = 0; k < K; ++k) std::transform(b + k * N + n0, b + k * N + n0 + columns, block + k * width, convert);
    }
  }
  return blocks;
}
}  // namespace

AlignedVector<float> pack_column_blocks(bool trans_b, int64_t K, int64_t N, const float* b, int64_t width, bool release_read) {
  return column_blocks<float>(trans_b, K, N, b, width, [](float x) { return x; }, release_read);
}
AlignedVector<uint16_t> pack_column_blocks(bool trans_b, int64_t K, int64_t N, const uint16_t* b, int64_t width) {
  return column_blocks<uint16_t>(trans_b, K, N, b, width, [](uint16_t x) { return x; });
}

PackedStrips PackedWeight::strips() const {
  if (!narrow.empty()) return {narrow.data(), type};
  return {wide.empty() ? nullptr : wide.data(), StripType::Float};
}

namespace {
// Whether a constant B gets the AVX-512 small-M kernel's blocks beside its strips: transposed, and
// the kernel runs here for few rows.
bool small_m_blocks_read(bool trans_b, bool few_row_blocks) {
  return trans_b && few_row_blocks && in_order_avx512_suits() && !in_order_avx2_takes_all();
}
}  // namespace

std::atomic<uint64_t> g_packs{0};
std::atomic<uint64_t> g_packed_bytes{0};  // the packed panels' bytes, against packing_budget()

ConstantRhs::ConstantRhs(const Tensor& b, bool trans_b, bool few_row_blocks, bool plain_products)
    : b_(b), source_(b.raw_data()), shape_(b.shape()), dtype_(b.dtype()), trans_b_(trans_b), K_(b.dim(trans_b ? 1 : 0)),
      N_(b.dim(trans_b ? 0 : 1)),
      packed_(b.dtype() == DType::Float ? pack_in_order_avx2(trans_b, K_, N_, b.data<float>(), !few_row_blocks)
                                        : pack_in_order_avx2(trans_b, K_, N_, static_cast<const uint16_t*>(b.raw_data()),
                                                             b.dtype() == DType::Float16 ? StripType::Float16
                                                                                         : StripType::BFloat16)) {
  if (!narrow() && small_m_blocks_read(trans_b, few_row_blocks)) small_m_blocks_ = pack_small_m(true, K_, N_, b.data<float>());
  // From now on the kernels read the float strips for products of any number of rows (gemm()
  // below): a weight mapped from its file leaves memory, and is read back from the file only by
  // the rare product that takes B itself (tiny ones, on Eigen).
  if (!narrow() && packed_.type == StripType::Float && !packed_.wide.empty()) release_file_pages(b.raw_data(), b.nbytes());
  // Every product of at least one row is then at least kBlasWork multiply-adds: gemm() below
  // reads the strips for all of them (it checks).
  if (plain_products && !trans_b && !narrow() && packed_.type == StripType::Float && !packed_.wide.empty() &&
      K_ * N_ >= kBlasWork)
    b_ = Tensor();
  g_packs.fetch_add(1, std::memory_order_relaxed);
  g_packed_bytes.fetch_add(bytes(), std::memory_order_relaxed);
}
ConstantRhs::~ConstantRhs() { g_packed_bytes.fetch_sub(bytes(), std::memory_order_relaxed); }
uint64_t ConstantRhs::bytes() const { return packed_.bytes() + uint64_t(small_m_blocks_.size()) * sizeof(float); }
std::vector<float> ConstantRhs::widened() const { return to_compute<float>(b_); }
uint64_t constant_rhs_packs() { return g_packs.load(); }
uint64_t packed_weight_bytes() { return g_packed_bytes.load(); }

namespace {
// The packed panels are a second copy of the weights: they may take at most this many bytes in
// the process (REFEVAL_PACK_BUDGET_MB; default a quarter of physical memory), beyond which weights
// are packed per call as before, so a model near the memory's size still runs.
uint64_t packing_budget() {
  static const uint64_t budget = [] {
    if (const char* mb = std::getenv("REFEVAL_PACK_BUDGET_MB")) return uint64_t(std::strtoull(mb, nullptr, 10)) << 20;
    return uint64_t(sysconf(_SC_PHYS_PAGES)) * uint64_t(sysconf(_SC_PAGESIZE)) / 4;
  }();
  return budget;
}
std::shared_ptr<const ConstantRhs> packed_within_budget(const Tensor& b, bool trans_b, bool few_row_blocks = true,
                                                        bool plain_products = false) {
  // (Two sessions made at once may both fit and overshoot by one weight: harmless.)
  const uint64_t copies = small_m_blocks_read(trans_b, few_row_blocks) ? 2 : 1;  // strips, and the transposed B's blocks
  if (g_packed_bytes.load(std::memory_order_relaxed) + copies * uint64_t(b.nbytes()) > packing_budget())
    return nullptr;
  return std::make_shared<const ConstantRhs>(b, trans_b, few_row_blocks, plain_products);
}
}  // namespace

ConstantRhsCache::ConstantRhsCache(const NodeContext& ctx, size_t input, bool trans_b, bool plain_products) {
  const Initializer* init = ctx.constant_input(input);
  constant_ = init != nullptr || ctx.folded_input(input);  // a folded one is packed as the first run gives it
  // Packed now, as a session is made, so that the first run (a prompt's prefill) does not pay for it.
  if (init && suits(init->value, trans_b)) rhs_ = packed_within_budget(init->value, trans_b, true, plain_products);
}

bool ConstantRhsCache::suits(const Tensor& b, bool trans_b) {
  const bool type = b.dtype() == DType::Float || b.dtype() == DType::Float16 || b.dtype() == DType::BFloat16;
  return type && b.rank() == 2 && b.size() > 0 && (in_order_avx2_suits() || in_order_avx512_suits());
}

std::shared_ptr<const ConstantRhs> ConstantRhsCache::get(const Tensor& b, bool trans_b, bool few_row_blocks) {
  if (!constant_ || !suits(b, trans_b)) return nullptr;
  std::lock_guard lock(mutex_);
  if (!rhs_ || !rhs_->holds(b, trans_b)) {
    rhs_.reset();  // its bytes go back to the budget first
    rhs_ = packed_within_budget(b, trans_b, few_row_blocks);
  }
  return rhs_;
}

MatMulShape matmul_shape(const Shape& a_in, const Shape& b_in) {
  if (a_in.empty() || b_in.empty()) fail_runtime("MatMul operands must have rank >= 1 (got a scalar)");
  Shape a = a_in, b = b_in;
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  MatMulShape s;
  s.M = a[a.size() - 2];
  s.K = a.back();
  s.N = b.back();
  if (b[b.size() - 2] != s.K)
    fail_runtime(fmt::format("MatMul: inner dimensions differ: {} x {}", shape_to_string(a_in), shape_to_string(b_in)));
  const Shape ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  const Shape batch = broadcast_shapes({ab, bb});
  const size_t r = batch.size();
  // Row-major strides (in matrices) of each operand's batch dims, aligned right; 0 when broadcast.
  auto strides = [&](const Shape& s) {
    std::vector<int64_t> st(r, 0);
    int64_t stride = 1;
    for (size_t i = 0; i < s.size(); ++i) {
      const size_t d = r - 1 - i, sd = s.size() - 1 - i;
      st[d] = s[sd] == 1 ? 0 : stride;
      stride *= s[sd];
    }
    return st;
  };
  const auto sa = strides(ab), sb = strides(bb);
  const int64_t nb = shape_size(batch);
  s.a_batch.resize(size_t(nb));
  s.b_batch.resize(size_t(nb));
  std::vector<int64_t> idx(r, 0);
  for (int64_t i = 0; i < nb; ++i) {
    int64_t oa = 0, ob = 0;
    for (size_t d = 0; d < r; ++d) { oa += idx[d] * sa[d]; ob += idx[d] * sb[d]; }
    s.a_batch[size_t(i)] = oa;
    s.b_batch[size_t(i)] = ob;
    for (size_t d = r; d-- > 0;) {
      if (++idx[d] < batch[d]) break;
      idx[d] = 0;
    }
  }
  s.b_shared = shape_size(bb) == 1;
  s.out = batch;
  if (!a_vec) s.out.push_back(s.M);
  if (!b_vec) s.out.push_back(s.N);
  return s;
}

}  // namespace refeval::ops
