// BitCast: reinterprets each element's bits as another type of the same bit width (little endian).
// The 4- and 2-bit types reinterpret their nibble / 2-bit field. A byte that is neither 0 nor 1
// read as bool becomes true (C++ has no other bool values).
#include <cstring>

#include "math_common.h"

namespace refeval::ops {
namespace {

int bit_width(DType t) {
  switch (t) {
    case DType::Int4: case DType::UInt4: case DType::Float4E2M1: return 4;
    case DType::Int2: case DType::UInt2: return 2;
    default: return int(dtype_size(t)) * 8;
  }
}

// The low `bits` bits of a sub-byte element, and back.
uint8_t sub_byte_bits(const Tensor& x, int64_t i, int bits) {
  const uint8_t mask = uint8_t((1u << bits) - 1);
  return visit<Concat<SmallInts, TypeList<float4e2m1>>>(x.dtype(), [&]<class T>() -> uint8_t {
    if constexpr (std::is_same_v<T, float4e2m1>) return x.data<T>()[i].bits & mask;
    else return uint8_t(x.data<T>()[i].value) & mask;
  });
}
void set_sub_byte(Tensor& y, int64_t i, uint8_t b) {
  visit<Concat<SmallInts, TypeList<float4e2m1>>>(y.dtype(), [&]<class T>() {
    if constexpr (std::is_same_v<T, float4e2m1>) y.data<T>()[i] = T::from_bits(b);
    else y.data<T>()[i] = T::wrap(b);
  });
}

class BitCast : public OpRun {
 public:
  using Types = AllNumeric;
  explicit BitCast(const NodeContext& ctx) {
    const auto v = ctx.required<int64_t>("to");
    to_ = is_valid_dtype(int32_t(v)) && v == int32_t(v) ? DType(v) : DType::Undefined;
    if (!Types::contains(to_)) ctx.fail("'to' must be a non-string element type");
  }
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    if (!Types::contains(x.dtype())) fail_unsupported_dtype(x.dtype(), Types::dtypes());
    const int bits = bit_width(x.dtype());
    if (bits != bit_width(to_))
      fail_runtime(fmt::format("cannot bitcast {} ({} bits) to {} ({} bits)", dtype_short_name(x.dtype()), bits,
                               dtype_short_name(to_), bit_width(to_)));
    Tensor y(to_, x.shape());
    if (bits < 8) {
      for (int64_t i = 0; i < x.size(); ++i) set_sub_byte(y, i, sub_byte_bits(x, i, bits));
    } else if (to_ == DType::Bool) {
      const auto* src = static_cast<const uint8_t*>(x.raw_data());
      bool* dst = y.data<bool>();
      for (int64_t i = 0; i < x.size(); ++i) dst[i] = src[i] != 0;
    } else {
      std::memcpy(y.raw_data(), x.raw_data(), x.nbytes());
    }
    return {y};
  }
 private:
  DType to_;
};

}  // namespace

void register_bitcast(Registry& reg) { reg.add("", "BitCast", {26}, make<BitCast>); }

}  // namespace refeval::ops
