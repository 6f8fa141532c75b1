// com.microsoft MatMulNBits (v1): a MatMul whose right operand is a block-quantized weight.
//   A (..., K) float, float16 or bfloat16 (any rank >= 1: every leading dimension is a row);
//   B uint8 (N, k_blocks, block_size * bits / 8) with k_blocks = ceil(K / block_size): column n's
//     K values in blocks along K, packed low bits first (the last block may be partial);
//   scales (N, k_blocks) or (N * k_blocks), A's type;
//   zero_points (optional): uint8 (N, ceil(k_blocks * bits / 8)) or its 1-D form, packed as B, or
//     A's type (N, k_blocks) or its 1-D form; absent: 2^(bits - 1);
//   g_idx (optional, deprecated): int32 (K) or (k_blocks * block_size), the block whose scale and
//     zero point apply to each k (values stay where they are in B);
//   bias (optional) [N], A's type.
//   Y (..., N) = A · Wᵀ + bias, W[n][k] = (q - zero_point) * scale (B's value q and its block's
//   parameters), computed in float like MatMul's float16 and bfloat16 (matmul_nbits_kernel.h).
// Attributes: K, N, bits (2, 4 or 8), block_size (a power of two >= 16) required; accuracy_level
// (0 to 4, default 0) only lets a runtime compute with less precision and is ignored unless
// --emulate-accuracy-level (refeval/numerics.h) asks level 4 to reproduce ONNX Runtime's CPU int8
// path (which ORT takes only when B is a constant); weight_prepacked (default 0) marks a CUDA-only
// layout of B and is refused.
#include "contrib_common.h"
#include "matmul_nbits_kernel.h"
#include "refeval/numerics.h"
#include "refeval/registry.h"

namespace refeval::ops::contrib {
namespace {

class MatMulNBits : public OpRun {
 public:
  using Types = TypeList<float, float16, bfloat16>;
  explicit MatMulNBits(const NodeContext& ctx)
      : K_(ctx.required<int64_t>("K")),
        N_(ctx.required<int64_t>("N")),
        bits_(ctx.required<int64_t>("bits")),
        block_size_(ctx.required<int64_t>("block_size")),
        accuracy_level_(ctx.attr<int64_t>("accuracy_level", 0)) {
    if (K_ < 1 || N_ < 1) ctx.fail(fmt::format("K and N must be positive, got K = {}, N = {}", K_, N_));
    if (bits_ != 2 && bits_ != 4 && bits_ != 8) ctx.fail(fmt::format("bits must be 2, 4 or 8, got {}", bits_));
    if (block_size_ < 16 || (block_size_ & (block_size_ - 1)) != 0)
      ctx.fail(fmt::format("block_size must be a power of two >= 16, got {}", block_size_));
    if (accuracy_level_ < 0 || accuracy_level_ > 4)
      ctx.fail(fmt::format("accuracy_level must be 0 to 4, got {}", accuracy_level_));
    if (const int64_t prepacked = ctx.attr<int64_t>("weight_prepacked", 0); prepacked != 0)
      ctx.fail(fmt::format("weight_prepacked = {} (B in a CUDA kernel's own layout) is not supported", prepacked));
    // A weight no feed replaces is laid out once for the int8 path's kernel; any other, per call.
    bool constant = ctx.constant_input(1) && ctx.constant_input(2);
    if (ctx.has_input(3)) constant = constant && ctx.constant_input(3);
    if (constant) int8_layout_ = std::make_unique<NBitsInt8Cache>();
    // Laid out now when the int8 path will run (the flag is set before models load), so that the
    // first run, a prompt's prefill, does not pay for it.
    if (constant && accuracy_level_ == 4 && emulate_accuracy_level()) lay_out_now(ctx);
  }

  Values run(const Values& in, RunContext&) override {
    const Tensor& a = input_tensor(in, 0);
    require_types<Types>(a.dtype());
    if (a.rank() == 0 || a.dim(a.rank() - 1) != K_)
      fail_runtime(fmt::format("A has shape {}, expected a last dimension of K = {}", shape_to_string(a.shape()), K_));
    const int64_t k_blocks = (K_ + block_size_ - 1) / block_size_;
    const Tensor& b = input_tensor(in, 1);
    require_dtype(b, DType::UInt8, "B");
    require_shape(b, {N_, k_blocks, block_size_ * bits_ / 8}, "B");
    const Tensor& scales = input_tensor(in, 2);
    require_dtype(scales, a.dtype(), "scales");
    require_matrix(scales, k_blocks, "scales");

    const Tensor* zero_points = has_value(in, 3) ? &input_tensor(in, 3) : nullptr;
    if (zero_points && zero_points->dtype() == DType::UInt8) {
      require_matrix(*zero_points, (k_blocks * bits_ + 7) / 8, "zero_points");
    } else if (zero_points) {
      if (zero_points->dtype() != a.dtype())
        fail_runtime(fmt::format("zero_points has element type {}, expected uint8 or A's type {}",
                                 dtype_short_name(zero_points->dtype()), dtype_short_name(a.dtype())));
      require_matrix(*zero_points, k_blocks, "zero_points");
    }
    const Tensor* g_idx = has_value(in, 4) ? &input_tensor(in, 4) : nullptr;
    if (g_idx) check_g_idx(*g_idx, k_blocks);
    const Tensor* bias = has_value(in, 5) ? &input_tensor(in, 5) : nullptr;
    if (bias) {
      require_dtype(*bias, a.dtype(), "bias");
      require_shape(*bias, {N_}, "bias");
    }

    Shape out_shape = a.shape();
    out_shape.back() = N_;
    Tensor y(a.dtype(), out_shape);
    const int64_t M = a.size() / K_;
    visit<Types>(a.dtype(), [&]<class T>() {
      NBitsWeight<T> w;
      w.K = K_, w.N = N_, w.bits = bits_, w.block_size = block_size_, w.k_blocks = k_blocks;
      w.data = b.data<uint8_t>();
      w.scales = scales.data<T>();
      if (zero_points && zero_points->dtype() == DType::UInt8) w.packed_zero_points = zero_points->data<uint8_t>();
      else if (zero_points) w.zero_points = zero_points->data<T>();
      if (g_idx) w.g_idx = g_idx->data<int32_t>();
      std::vector<float> a_wide, bias_wide;  // float16 and bfloat16 compute in float
      const float* pa = nullptr;
      const float* pbias = nullptr;
      if constexpr (std::is_same_v<T, float>) {
        pa = a.data<float>();
        if (bias) pbias = bias->data<float>();
      } else {
        a_wide = widen<T>(a);
        pa = a_wide.data();
        if (bias) pbias = (bias_wide = widen<T>(*bias)).data();
      }
      const bool int8 = accuracy_level_ == 4 && emulate_accuracy_level() &&
                        ort_int8_path(bits_, block_size_, g_idx != nullptr, w.zero_points != nullptr);
      if constexpr (std::is_same_v<T, float>) {
        if (int8) nbits_gemm_int8<T>(w, pa, M, pbias, y.data<float>(), int8_layout_.get());
        else nbits_gemm<T>(w, pa, M, pbias, y.data<float>());
      } else {
        std::vector<float> out(size_t(y.size()));
        if (int8) nbits_gemm_int8<T>(w, pa, M, pbias, out.data(), int8_layout_.get());
        else nbits_gemm<T>(w, pa, M, pbias, out.data());
        T* py = y.data<T>();
        for (size_t i = 0; i < out.size(); ++i) py[i] = T(out[i]);
      }
    });
    return {y};
  }

 private:
  template <class T>
  static std::vector<float> widen(const Tensor& t) {
    std::vector<float> v(size_t(t.size()));
    const T* p = t.data<T>();
    for (size_t i = 0; i < v.size(); ++i) v[i] = float(p[i]);
    return v;
  }
  // (N, cols) or its flattened 1-D form, which older models use.
  void require_matrix(const Tensor& t, int64_t cols, const std::string& name) const {
    if (t.shape() != Shape{N_, cols} && t.shape() != Shape{N_ * cols})
      fail_runtime(fmt::format("{} has shape {}, expected {} or {}", name, shape_to_string(t.shape()),
                               shape_to_string(Shape{N_, cols}), shape_to_string(Shape{N_ * cols})));
  }
  // The int8 layout of constant weights, when they are what run() accepts (else run() says why).
  void lay_out_now(const NodeContext& ctx) {
    const int64_t k_blocks = (K_ + block_size_ - 1) / block_size_;
    const Tensor& b = ctx.constant_input(1)->value;
    const Tensor& scales = ctx.constant_input(2)->value;
    const Tensor* zero_points = ctx.has_input(3) ? &ctx.constant_input(3)->value : nullptr;
    if (ctx.has_input(4) || b.dtype() != DType::UInt8 || b.shape() != Shape{N_, k_blocks, block_size_ * bits_ / 8} ||
        !Types::contains(scales.dtype()) || scales.size() != N_ * k_blocks ||
        (zero_points && (zero_points->dtype() != DType::UInt8 || zero_points->size() != N_ * ((k_blocks * bits_ + 7) / 8))))
      return;
    visit<Types>(scales.dtype(), [&]<class T>() {
      NBitsWeight<T> w;
      w.K = K_, w.N = N_, w.bits = bits_, w.block_size = block_size_, w.k_blocks = k_blocks;
      w.data = b.data<uint8_t>(), w.scales = scales.data<T>();
      if (zero_points) w.packed_zero_points = zero_points->data<uint8_t>();
      if (ort_int8_path(bits_, block_size_, false, false)) int8_layout_->get(w);
    });
  }
  void check_g_idx(const Tensor& g_idx, int64_t k_blocks) const {
    require_dtype(g_idx, DType::Int32, "g_idx");
    if (g_idx.shape() != Shape{K_} && g_idx.shape() != Shape{k_blocks * block_size_})
      fail_runtime(fmt::format("g_idx has shape {}, expected {} or {}", shape_to_string(g_idx.shape()), shape_to_string(Shape{K_}),
                               shape_to_string(Shape{k_blocks * block_size_})));
    const int32_t* p = g_idx.data<int32_t>();
    for (int64_t i = 0; i < g_idx.size(); ++i)
      if (p[i] < 0 || p[i] >= k_blocks)
        fail_runtime(fmt::format("g_idx[{}] = {} is not a block index in [0, {})", i, p[i], k_blocks));
  }

  int64_t K_, N_, bits_, block_size_, accuracy_level_;
  std::unique_ptr<NBitsInt8Cache> int8_layout_;  // null unless B and its parameters are constants
};

}  // namespace

void register_matmul_nbits(Registry& reg) { reg.add("com.microsoft", "MatMulNBits", {1}, make<MatMulNBits>); }

}  // namespace refeval::ops::contrib
