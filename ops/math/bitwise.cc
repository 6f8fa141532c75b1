// Bitwise operators on integers: BitwiseAnd BitwiseOr BitwiseXor BitwiseNot, and BitShift.
#include <functional>

#include "math_common.h"

namespace refeval::ops {
namespace {

template <class F>
class BitwiseBinary : public OpRun {
 public:
  using Types = Ints;
  explicit BitwiseBinary(const NodeContext&) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor& a = input_tensor(in, 0);
    const Tensor& b = input_tensor(in, 1);
    require_same_dtype(a, b);
    return {visit<Types>(a.dtype(), [&]<class T>() {
      return map_binary<T, T>(a, b, [](T x, T y) { return T(F{}(x, y)); });
    })};
  }
};

class BitwiseNot : public OpRun {
 public:
  using Types = Ints;
  explicit BitwiseNot(const NodeContext&) {}
  Values run(const Values& in, RunContext&) override {
    return {map_unary_of<Types>(input_tensor(in, 0), [](auto v) { return decltype(v)(~v); })};
  }
};

// Shifts unsigned integers; a shift by the bit width or more gives 0 (no undefined behaviour).
class BitShift : public OpRun {
 public:
  using Types = UnsignedInts;
  explicit BitShift(const NodeContext& ctx) {
    const auto d = ctx.required<std::string>("direction");
    if (d != "LEFT" && d != "RIGHT") ctx.fail("direction must be LEFT or RIGHT, got '" + d + "'");
    left_ = d == "LEFT";
  }
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const Tensor& n = input_tensor(in, 1);
    require_same_dtype(x, n);
    return {visit<Types>(x.dtype(), [&]<class T>() {
      return map_binary<T, T>(x, n, [&](T v, T s) -> T {
        if (s >= T(sizeof(T) * 8)) return T(0);
        using W = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, T>;
        return T(left_ ? W(v) << s : W(v) >> s);
      });
    })};
  }
 private:
  bool left_;
};

}  // namespace

void register_bitwise(Registry& reg) {
  reg.add("", "BitwiseAnd", {18}, make<BitwiseBinary<std::bit_and<>>>);
  reg.add("", "BitwiseOr", {18}, make<BitwiseBinary<std::bit_or<>>>);
  reg.add("", "BitwiseXor", {18}, make<BitwiseBinary<std::bit_xor<>>>);
  reg.add("", "BitwiseNot", {18}, make<BitwiseNot>);
  reg.add("", "BitShift", {11}, make<BitShift>);
}

}  // namespace refeval::ops
