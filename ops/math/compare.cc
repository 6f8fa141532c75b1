// Comparisons (Equal Greater GreaterOrEqual Less LessOrEqual) and boolean logic (And Or Xor Not),
// broadcasting, with a bool output.
#include <functional>

#include "math_common.h"

namespace refeval::ops {
namespace {

template <class F, class List>
class Compare : public OpRun {
 public:
  using Types = List;
  explicit Compare(const NodeContext& ctx) : legacy_(ctx) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor& a = input_tensor(in, 0);
    const Tensor b = legacy_.align(a, input_tensor(in, 1));
    require_same_dtype(a, b);
    return {visit<Types>(a.dtype(), [&]<class T>() { return map_binary<T, T, bool>(a, b, F{}); })};
  }
 private:
  LegacyBroadcast legacy_;
};

using Bool = TypeList<bool>;

class Not : public OpRun {
 public:
  using Types = Bool;
  explicit Not(const NodeContext&) {}
  Values run(const Values& in, RunContext&) override {
    return {map_unary_of<Types>(input_tensor(in, 0), [](bool v) { return !v; })};
  }
};

}  // namespace

void register_compare(Registry& reg) {
  using EqualTypes = Concat<Numeric, TypeList<bool, std::string>>;
  reg.add("", "Equal", {1, 7, 11, 13, 19}, make<Compare<std::equal_to<>, EqualTypes>>);
  reg.add("", "Greater", {1, 7, 9, 13}, make<Compare<std::greater<>, Numeric>>);
  reg.add("", "GreaterOrEqual", {12, 16}, make<Compare<std::greater_equal<>, Numeric>>);
  reg.add("", "Less", {1, 7, 9, 13}, make<Compare<std::less<>, Numeric>>);
  reg.add("", "LessOrEqual", {12, 16}, make<Compare<std::less_equal<>, Numeric>>);
  reg.add("", "And", {1, 7}, make<Compare<std::logical_and<>, Bool>>);
  reg.add("", "Or", {1, 7}, make<Compare<std::logical_or<>, Bool>>);
  reg.add("", "Xor", {1, 7}, make<Compare<std::not_equal_to<>, Bool>>);
  reg.add("", "Not", {1}, make<Not>);
}

}  // namespace refeval::ops
