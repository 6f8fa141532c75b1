// com.microsoft GatherBlockQuantized (v1): Gather from a block-quantized table, dequantized.
//   inputs: data (rank r >= 1); indices int32/int64 (any shape); scales (float, float16, bfloat16);
//           zero_points? (data's type)
//   output: (data.shape[:g], indices.shape, data.shape[g+1:]) in scales' type, the last
//           dimension widened by 8 / bits for packed uint8 data
//   attributes: gather_axis g (0), quantize_axis q (1), block_size (128), bits (4)
// Element e of the (logical) data tensor dequantizes with the scale (and zero point) at e's
// coordinates with the one along q divided by block_size:
//   y = (data[e] - zero_point) * scale
// data forms:
//   int4 / uint4: any g and q; zero point default 0; bits must be 4.
//   uint8: bits 2, 4 or 8, values packed along the last dimension, low-order bits first; g must
//     be 0 and q the last axis. zero_points are uint8 packed the same way along q, each row of
//     ceil(blocks / (8 / bits)) bytes; default zero point 2^(bits-1).
//   float8 (e4m3fn, e4m3fnuz, e5m2, e5m2fnuz) / float4e2m1: y = data[e] * scale, no zero points;
//     block_size 0 means one block over the whole of axis q; a scales dimension of 1 on another
//     axis broadcasts. (ORT main added these after 1.30, whose CPU kernel has no such types.)
// scales has data's rank, ceil(logical dim / block_size) blocks along q and data's dims elsewhere.
// An index outside [-s, s-1] (s = data.shape[g]) is an error, as the schema says and ORT 1.30
// does; a negative one counts from the end. (ORT main's CPU kernel now writes zeros instead.)
#include "contrib_common.h"

#include "../quant/quant_common.h"
#include "refeval/registry.h"

namespace refeval::ops::contrib {
namespace {

bool is_power_of_two(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

class GatherBlockQuantized : public OpRun {
 public:
  explicit GatherBlockQuantized(const NodeContext& ctx)
      : gather_axis_(ctx.attr<int64_t>("gather_axis", 0)),
        quantize_axis_(ctx.attr<int64_t>("quantize_axis", 1)),
        block_size_(ctx.attr<int64_t>("block_size", 128)),
        bits_(ctx.attr<int64_t>("bits", 4)) {
    if (block_size_ != 0 && (block_size_ < 16 || !is_power_of_two(block_size_)))
      ctx.fail(fmt::format("block_size must be a power of 2 and at least 16 (or 0 for float8/float4 data), got {}", block_size_));
    if (bits_ != 2 && bits_ != 4 && bits_ != 8) ctx.fail(fmt::format("bits must be 2, 4 or 8, got {}", bits_));
  }

  Values run(const Values& in, RunContext&) override {
    const Tensor& data = input_tensor(in, 0);
    const Tensor& indices_t = input_tensor(in, 1);
    const Tensor& scales = input_tensor(in, 2);
    const Tensor* zp = has_value(in, 3) ? &input_tensor(in, 3) : nullptr;
    require_types<TypeList<float, float16, bfloat16>>(scales.dtype());

    const DType dt = data.dtype();
    const bool packed = dt == DType::UInt8;
    const bool fp = dt == DType::Float8E4M3FN || dt == DType::Float8E4M3FNUZ || dt == DType::Float8E5M2 ||
                    dt == DType::Float8E5M2FNUZ || dt == DType::Float4E2M1;
    if (!packed && !fp && dt != DType::Int4 && dt != DType::UInt4)
      fail_runtime(fmt::format("data has element type {}, expected int4, uint4, uint8, a float8 type or float4e2m1",
                               dtype_short_name(dt)));
    if ((dt == DType::Int4 || dt == DType::UInt4) && bits_ != 4)
      fail_runtime(fmt::format("bits must be 4 for {} data, got {}", dtype_short_name(dt), bits_));
    if (!fp && block_size_ == 0) fail_runtime("block_size 0 (one block per axis) is only allowed for float8/float4 data");

    const int64_t r = int64_t(data.rank());
    if (r < 1) fail_runtime("data must have rank >= 1");
    const int64_t g = normalize_axis(gather_axis_, r, "gather_axis"), q = normalize_axis(quantize_axis_, r, "quantize_axis");
    const int64_t per_byte = packed ? 8 / bits_ : 1;
    if (packed && (g != 0 || q != r - 1))
      fail_runtime(fmt::format("uint8 data needs gather_axis 0 and quantize_axis {} (the last), got {} and {}", r - 1, g, q));
    if (packed && r < 2) fail_runtime("uint8 data must have rank >= 2 (gather and quantize axes differ)");

    Shape logical = data.shape();
    logical.back() *= per_byte;
    const int64_t block = block_size_ > 0 ? block_size_ : std::max<int64_t>(logical[size_t(q)], 1);
    check_scales(scales, logical, q, block, fp);
    if (zp) check_zero_points(*zp, scales, dt, q, per_byte, fp);

    const std::vector<int64_t> indices = to_int64s(indices_t, "indices");
    const int64_t axis_len = logical[size_t(g)];
    for (int64_t v : indices)
      if (v < -axis_len || v >= axis_len)
        fail_runtime(fmt::format("indices value {} is outside [{}, {}] for gather axis {} of size {}", v, -axis_len, axis_len - 1, g, axis_len));

    Shape out_shape(logical.begin(), logical.begin() + g);
    out_shape.insert(out_shape.end(), indices_t.shape().begin(), indices_t.shape().end());
    out_shape.insert(out_shape.end(), logical.begin() + g + 1, logical.end());

    // Row-major strides of the logical data and of scales; a broadcast scales axis gets stride 0.
    std::vector<int64_t> data_stride(size_t(r), 1), scale_stride(size_t(r), 1);
    for (int64_t a = r - 2; a >= 0; --a) {
      data_stride[size_t(a)] = data_stride[size_t(a + 1)] * logical[size_t(a + 1)];
      scale_stride[size_t(a)] = scale_stride[size_t(a + 1)] * scales.dim(size_t(a + 1));
    }
    for (int64_t a = 0; a < r; ++a)
      if (a != q && scales.dim(size_t(a)) == 1) scale_stride[size_t(a)] = 0;

    // Scales and zero points are read for the gathered rows only: a decode step gathers one row of
    // a 151936-row table, whose scales widened whole took 27 ms.
    const int64_t outer = shape_size(Shape(logical.begin(), logical.begin() + g));
    const int64_t inner = data_stride[size_t(g)];
    const int64_t n_idx = int64_t(indices.size());
    std::vector<double> y(size_t(outer * n_idx * inner));
    size_t o = 0;
    for (int64_t m = 0; m < outer; ++m)
      for (int64_t n = 0; n < n_idx; ++n) {
        const int64_t row = indices[size_t(n)] < 0 ? indices[size_t(n)] + axis_len : indices[size_t(n)];
        const int64_t base = (m * axis_len + row) * inner;
        for (int64_t i = 0; i < inner; ++i, ++o) {
          const int64_t e = base + i;
          int64_t s = 0;  // the scale (and zero point) index of element e
          for (int64_t a = 0, rest = e; a < r; ++a) {
            const int64_t coord = rest / data_stride[size_t(a)];
            rest %= data_stride[size_t(a)];
            s += (a == q ? coord / block : coord) * scale_stride[size_t(a)];
          }
          y[o] = (quantized(data, e, per_byte) - zero_point_at(zp, scales, dt, per_byte, s)) * element_as_double(scales, s);
        }
      }
    return {from_doubles(scales.dtype(), out_shape, y)};
  }

 private:
  static int64_t normalize_axis(int64_t axis, int64_t r, const char* name) {
    if (axis < -r || axis >= r) fail_runtime(fmt::format("{} {} is outside [{}, {}] for data of rank {}", name, axis, -r, r - 1, r));
    return axis < 0 ? axis + r : axis;
  }

  static void check_scales(const Tensor& scales, const Shape& logical, int64_t q, int64_t block, bool fp) {
    Shape want = logical;
    want[size_t(q)] = (logical[size_t(q)] + block - 1) / block;
    bool ok = scales.rank() == want.size();
    for (size_t a = 0; ok && a < want.size(); ++a)
      ok = scales.dim(a) == want[a] || (fp && int64_t(a) != q && scales.dim(a) == 1);
    if (!ok)
      fail_runtime(fmt::format("scales has shape {}, expected {} (data {} in blocks of {} along axis {})", shape_to_string(scales.shape()),
                               shape_to_string(want), shape_to_string(logical), block, q));
  }

  static void check_zero_points(const Tensor& zp, const Tensor& scales, DType dt, int64_t q, int64_t per_byte, bool fp) {
    if (fp) fail_runtime("zero_points must be absent for float8/float4 data");
    require_dtype(zp, dt, "zero_points");
    Shape want = scales.shape();
    want[size_t(q)] = (want[size_t(q)] + per_byte - 1) / per_byte;
    require_shape(zp, want, "zero_points");
  }

  // The zero point of scale s (the default when absent).
  int32_t zero_point_at(const Tensor* zp, const Tensor& scales, DType dt, int64_t per_byte, int64_t s) const {
    if (!zp) return default_zero(dt);
    if (dt == DType::Int4) return zp->data<int4>()[s].value;
    if (dt == DType::UInt4) return zp->data<uint4>()[s].value;
    // uint8: rows along the last (quantize) axis, each padded to whole bytes
    const int64_t blocks = scales.dim(scales.rank() - 1), row_bytes = zp->dim(zp->rank() - 1);
    const int64_t row = s / blocks, col = s % blocks;
    return (zp->data<uint8_t>()[row * row_bytes + col / per_byte] >> ((col % per_byte) * bits_)) & ((1 << bits_) - 1);
  }

  int32_t default_zero(DType dt) const { return dt == DType::UInt8 ? 1 << (bits_ - 1) : 0; }

  // The value of logical element e of data.
  double quantized(const Tensor& data, int64_t e, int64_t per_byte) const {
    if (data.dtype() == DType::UInt8) return (data.data<uint8_t>()[e / per_byte] >> ((e % per_byte) * bits_)) & ((1 << bits_) - 1);
    return element_as_double(data, e);  // int4, uint4, float8, float4
  }

  int64_t gather_axis_, quantize_axis_, block_size_, bits_;
};

}  // namespace

void register_gather_block_quantized(Registry& reg) {
  reg.add("com.microsoft", "GatherBlockQuantized", {1}, make<GatherBlockQuantized>);
}

}  // namespace refeval::ops::contrib
