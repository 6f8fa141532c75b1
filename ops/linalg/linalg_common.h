// Helpers of the linalg family: the GEMM kernels (OpenBLAS or Eigen for float and double, a plain loop for
// the other types) and the numpy matmul shape rules shared by MatMul and MatMulInteger.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <type_traits>
#include <vector>

#include "refeval/aligned.h"
#include "refeval/op_run.h"
#include "refeval/tensor.h"

namespace refeval::ops {

// c (M x N, row-major) = op(a) * op(b), or c += op(a) * op(b) when `accumulate`. op(a) is
// M x K, op(b) is K x N; a transposed operand is stored K x M (resp. N x K). float and double
// go through OpenBLAS (gemm_kernels.cc).
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* a, const float* b, float* c,
          bool accumulate);
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const double* a, const double* b, double* c,
          bool accumulate);

// B laid out in gemm_in_order_avx2's strips of 16 columns (K x 16 each, the last zero-padded: K *
// N rounded up to 16 values), as float or, when every value of B is a float16 (bfloat16) exactly,
// in that type: half the bytes for a few-row product to stream, widened as the tiles load them,
// so the same floats and the same bits. A weight cast from float16 is the common case.
enum class StripType : uint8_t { Float, Float16, BFloat16 };
struct PackedStrips {
  const void* data = nullptr;  // null: B is read where it lies
  StripType type = StripType::Float;
};
struct PackedWeight {
  AlignedVector<float> wide;      // StripType::Float
  AlignedVector<uint16_t> narrow;  // the float16 or bfloat16 bits
  StripType type = StripType::Float;
  PackedStrips strips() const;
  uint64_t bytes() const { return wide.size() * sizeof(float) + narrow.size() * sizeof(uint16_t); }
};
// The narrowest StripType holding every one of the n floats bit for bit (negative zeros and NaN
// payloads included); with `bits`, a narrow type's bits of the n values are written there.
StripType exact_strip_type(const float* b, int64_t n, std::vector<uint16_t>* bits = nullptr);

// c (M x N) = a (M x K) b (K x N), or c += a b, on the small-M AVX-512 kernel
// (gemm_small_m.cc); false, doing nothing, when the CPU or the shape does not suit it. With
// `blocks` (pack_small_m's layout of b) it reads B there, each block of 48 columns one stream.
bool gemm_small_m(int64_t M, int64_t N, int64_t K, const float* a, const float* b, float* c, bool accumulate,
                  const float* blocks = nullptr);
bool gemm_small_m_suits(int64_t M, int64_t N, int64_t K);  // whether gemm_small_m takes this shape
// x (rows x cols, row-major) from its transpose, stored cols x rows.
std::vector<float> untransposed(const float* x, int64_t rows, int64_t cols);
// B (K x N, or stored N x K when trans_b) in blocks of `width` columns: columns w j .. w j + w - 1
// as K rows of w floats (the last block zero-padded) from w j K on. The kernels' layouts:
// release_read: with trans_b, each block's rows go back to their file once copied
// (release_file_pages).
AlignedVector<float> pack_column_blocks(bool trans_b, int64_t K, int64_t N, const float* b, int64_t width,
                                        bool release_read = false);
// The same layout of a float16 or bfloat16 B's bits.
AlignedVector<uint16_t> pack_column_blocks(bool trans_b, int64_t K, int64_t N, const uint16_t* b, int64_t width);
AlignedVector<float> pack_small_m(bool trans_b, int64_t K, int64_t N, const float* b);  // gemm_small_m's (48)

// The same contract on CPUs with AVX2 and FMA but without AVX-512, every element one in-order
// chain of fused multiply-adds (gemm_in_order_avx2.cc: OpenBLAS's kernels for these CPUs are not
// position-invariant); false, doing nothing, on other CPUs.
// With `packed` (pack_in_order_avx2's layout of this b) the kernel reads B there and copies nothing.
bool gemm_in_order_avx2(int64_t M, int64_t N, int64_t K, const float* a, const float* b, float* c, bool accumulate,
                        PackedStrips packed = {});
bool in_order_avx2_suits();  // whether gemm_in_order_avx2 runs on this CPU at every row count
bool in_order_avx2_takes(int64_t M);  // whether it takes M rows here (AVX-512 CPUs give it few-row products)
bool in_order_avx2_takes_all();  // whatever the rows (AVX2 CPUs; AVX-512 ones running it at half width)
bool in_order_avx2_takes_anywhere(int64_t M);  // whether it takes M rows on every CPU with AVX2
// The portable path's in-order product (gemm_in_order_portable.cc): the same chains, the same bits.
void gemm_in_order_portable(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* a, const float* b, float* c, bool accumulate);
// A right operand B (K x N) that is never stored whole (a convolution's im2col matrix): fill()
// writes rows [k0, k0 + depth) x columns [n0, n0 + width) into `strips`, in strips of 16 columns
// (strip t, columns n0 + 16 t .., at strips + 16 t depth, `depth` rows of 16 floats; columns past
// `width` in the last strip are never read, so need not be written).
class PanelSource {
 public:
  virtual void fill(int64_t k0, int64_t depth, int64_t n0, int64_t width, float* strips) const = 0;

 protected:
  ~PanelSource() = default;
};
// c (M x N) = a (M x K) b (or c += a b), b made a panel at a time (at most 256 x 96, in L2) just
// before the kernel reads it: the same bits as gemm_in_order_avx2 on b written out whole, with no
// copy of b in memory. false, doing nothing, on CPUs the kernel does not run on.
bool gemm_in_order_avx2(int64_t M, int64_t N, int64_t K, const float* a, const PanelSource& b, float* c,
                        bool accumulate, const float* row_bias = nullptr);
// The work of both kernels' PanelSource products: C's columns in blocks of 96 and, with fewer
// blocks than threads (ResNet-18's 7 x 7 outputs are one block), its rows in parts of a multiple
// of row_tile, each part on one thread gathering its own panels of b, 256 rows of k (k0 up) x the
// block's `width` columns from n0, into a buffer kept per thread (a fresh one would fault in its
// pages on every call); product(m0, rows, n0, width, k0, depth, panel) follows each fill. With
// row_bias, c's rows [m0, m0 + rows) x columns [n0, n0 + width) then get row_bias[m] added on the
// same thread, while they are in cache: each element the product's sum plus the bias, as a second
// pass over c would give, with no second pass.
using PanelProduct = std::function<void(int64_t m0, int64_t rows, int64_t n0, int64_t width, int64_t k0,
                                        int64_t depth, const float* panel)>;
void for_each_panel(int64_t M, int64_t N, int64_t K, int64_t row_tile, const PanelSource& b,
                    const PanelProduct& product, const float* row_bias = nullptr, float* c = nullptr);
// The same on AVX-512 CPUs (gemm_panels_avx512.cc), every element one in-order chain of fused
// multiply-adds from zero (from C's value with `accumulate`); false, doing nothing, on other CPUs.
bool gemm_panels_avx512(int64_t M, int64_t N, int64_t K, const float* a, const PanelSource& b, float* c,
                        bool accumulate, const float* row_bias = nullptr);
bool in_order_avx512_suits();  // whether gemm_panels_avx512 runs on this CPU
// Whether this CPU has one of the two in-order panel kernels and the product is large enough for
// them (gemm()'s threshold for its own kernels); then gemm_panels computes c = a b with b from a
// PanelSource, each element one chain of fused multiply-adds over k in order from zero: gemm()'s
// bits on b written out, on either kernel.
bool gemm_panels_suits(int64_t M, int64_t N, int64_t K);
// With row_bias, c[m, n] = (a b)[m, n] + row_bias[m] (a convolution's bias).
void gemm_panels(int64_t M, int64_t N, int64_t K, const float* a, const PanelSource& b, float* c,
                 const float* row_bias = nullptr);

// B (K x N, or stored N x K when trans_b) in gemm_in_order_avx2's strips (PackedStrips), in the
// narrowest exact type; empty on CPUs the kernel does not run on. release_read: a transposed B
// mapped from its file leaves memory row block by row block as float strips take it (a tied LM
// head's 545 MB table is never resident whole beside its strips).
PackedWeight pack_in_order_avx2(bool trans_b, int64_t K, int64_t N, const float* b, bool release_read = false);
PackedWeight pack_in_order_avx2(bool trans_b, int64_t K, int64_t N, const uint16_t* b, StripType type);

// A constant right operand (a weight), float, float16 or bfloat16, K x N (stored N x K when
// trans_b), laid out once as
// this CPU's kernels read it, so that a product no longer copies or transposes all of B on every
// call: in the in-order AVX2 kernel's panels (packed(); made on AVX-512 CPUs too, which run few-row
// products on that kernel); on AVX-512 CPUs, when trans_b, also in the AVX-512 small-M kernel's blocks (small_m_blocks(); a 1 x 1024 x 1000 classifier Gemm with transB took
// 0.35 ms through OpenBLAS, which packs B on every call, as against 0.06 as a MatMul; now 0.06).
// gemm() with it gives exactly the bits gemm() gives with B itself: the same kernel in the same
// summation order, only reading B from elsewhere. It holds B's tensor, so B's memory cannot be
// freed and handed to another tensor while the panels are keyed by its address, unless the
// strips alone serve every product of one that never accumulates nor takes A transposed
// (`plain_products`: MatMul's), when B is not transposed, float, and large enough that no
// product of it goes to Eigen: then B is not held, and its owner may let it go
// (NodeContext::absorb_input), while the strips are used only through the op that made them.
class ConstantRhs {
 public:
  // few_row_blocks: also the AVX-512 small-M kernel's blocks of a transposed B, which only products
  // that accumulate or take A transposed read once the strips exist (MatMul's never do).
  ConstantRhs(const Tensor& b, bool trans_b, bool few_row_blocks = true, bool plain_products = false);
  bool holds(const Tensor& b, bool trans_b) const {
    return b.raw_data() == source_ && b.shape() == shape_ && trans_b == trans_b_;
  }
  bool trans_b() const { return trans_b_; }
  int64_t K() const { return K_; }
  int64_t N() const { return N_; }
  bool narrow() const { return dtype_ != DType::Float; }  // float16 or bfloat16: packed() only
  bool holds_source() const { return b_.defined(); }
  const float* data() const { return b_.defined() ? b_.data<float>() : nullptr; }
  std::vector<float> widened() const;  // a narrow B's values as floats
  const PackedWeight& packed() const { return packed_; }
  const AlignedVector<float>& small_m_blocks() const { return small_m_blocks_; }
  ~ConstantRhs();

 private:
  Tensor b_;  // undefined when the strips serve every product alone
  const void* source_;
  Shape shape_;
  DType dtype_;
  bool trans_b_;
  int64_t K_, N_;
  uint64_t bytes() const;  // of the copies made
  PackedWeight packed_;
  AlignedVector<float> small_m_blocks_;  // on AVX-512 CPUs a transposed B gets both
};
uint64_t constant_rhs_packs();  // ConstantRhs objects made so far, so a test can tell no run packs
uint64_t packed_weight_bytes();  // the bytes of the ConstantRhs copies alive now (refeval/memory_stats.h)
// c (M x N) = op(a) B (+ c when accumulate), as gemm(trans_a, b.trans_b(), M, b.N(), b.K(), ...)
// with B's values as floats (a narrow B's strips where the in-order kernel takes the product, else
// B widened for the call, as the uncached path does).
void gemm(bool trans_a, int64_t M, const float* a, const ConstantRhs& b, float* c, bool accumulate);

// An operator's cache of the packed form of its B input, for nodes whose B is an initializer no
// feed can replace (constant for the session): packed when the operator is made (as ONNX Runtime
// prepacks its weights when a session is made), or the output of a folded node (a float16 weight's
// Cast: packed when the first run gives it; 1 x 4096 x 11008 from a float16 weight took 18.6 ms
// read where it lay, rows N apart, 7 ms packed); get() returns those panels while the node is
// given that tensor (packing anew, once, if it is given another); null when B is not constant,
// not a 2-D float, float16 or bfloat16, or the CPU's kernels read it as it is (then the op calls
// gemm() with B).
// The panels are a second copy of the weight: a float decoder's weights take twice the memory, up
// to a process-wide budget (REFEVAL_PACK_BUDGET_MB, default a quarter of physical memory); past it
// get() returns null and the weight is packed per call, as without the cache.
class ConstantRhsCache {
 public:
  // plain_products: the op's products never accumulate nor take A transposed (ConstantRhs).
  ConstantRhsCache(const NodeContext& ctx, size_t input, bool trans_b, bool plain_products = false);
  std::shared_ptr<const ConstantRhs> get(const Tensor& b, bool trans_b, bool few_row_blocks = true);
  static bool suits(const Tensor& b, bool trans_b);
  // The weight packed as the op was made, when its strips serve every product without B (the op
  // may then absorb B and run without it); null otherwise.
  std::shared_ptr<const ConstantRhs> self_sufficient() const { return rhs_ && !rhs_->holds_source() ? rhs_ : nullptr; }

 private:
  bool constant_;
  std::mutex mutex_;  // one OpRun may run on several threads at once (sessions are shared)
  std::shared_ptr<const ConstantRhs> rhs_;
};

// Number of calls that reached the OpenBLAS / Eigen kernels, so a test can tell the fast path ran.
uint64_t blas_gemm_calls();

// The same contract for integer types, with two's-complement wrap-around (as numpy does).
template <class T>
void gemm_loop(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const T* a, const T* b, T* c,
               bool accumulate) {
  using W = std::conditional_t<std::is_signed_v<T>, std::make_unsigned_t<T>, T>;
  using Acc = std::conditional_t<(sizeof(W) < sizeof(unsigned)), unsigned, W>;
  if (!accumulate)
    for (int64_t i = 0; i < M * N; ++i) c[i] = T(0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k) {
      const Acc av = Acc(W(trans_a ? a[k * M + i] : a[i * K + k]));
      if (av == 0) continue;
      T* row = c + i * N;
      for (int64_t j = 0; j < N; ++j) {
        const Acc bv = Acc(W(trans_b ? b[j * K + k] : b[k * N + j]));
        row[j] = T(W(Acc(W(row[j])) + av * bv));
      }
    }
}

// numpy matmul shapes: 1-D operands are promoted (and the added dimension removed from the
// result), batch dimensions broadcast. a_batch[i] / b_batch[i] index the matrix of each operand
// used by output matrix i.
struct MatMulShape {
  Shape out;
  int64_t M = 0, K = 0, N = 0;
  std::vector<int64_t> a_batch, b_batch;
  bool b_shared = false;  // every output matrix uses the same (single) b matrix
};
MatMulShape matmul_shape(const Shape& a, const Shape& b);

}  // namespace refeval::ops
