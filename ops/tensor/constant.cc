// Constant and ConstantOfShape. Constant's value comes from exactly one attribute: `value`
// (all versions), `sparse_value` (from 11, densified on load), and the scalar / list forms
// value_float(s), value_int(s), value_string(s) (from 12). ConstantOfShape fills a shape given as
// an input with a one-element `value` (default float 0).
#include "tensor_common.h"

#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class Constant : public OpRun {
 public:
  using Types = All;
  explicit Constant(const NodeContext& ctx) {
    const int v = ctx.since_version();
    std::vector<Tensor> found;
    auto take = [&](const char* name, auto convert) {
      if (ctx.has_attr(name)) found.push_back(convert(name));
    };
    take("value", [&](const char* n) { return ctx.required<Tensor>(n); });
    if (v >= 11) take("sparse_value", [&](const char* n) { return ctx.required<Tensor>(n); });
    if (v >= 12) {
      take("value_float", [&](const char* n) { return Tensor::scalar<float>(ctx.required<float>(n)); });
      take("value_int", [&](const char* n) { return Tensor::scalar<int64_t>(ctx.required<int64_t>(n)); });
      take("value_string", [&](const char* n) { return Tensor::scalar<std::string>(ctx.required<std::string>(n)); });
      take("value_floats", [&](const char* n) {
        auto f = ctx.required<std::vector<float>>(n);
        return Tensor::from_vector<float>({int64_t(f.size())}, f);
      });
      take("value_ints", [&](const char* n) {
        auto f = ctx.required<std::vector<int64_t>>(n);
        return Tensor::from_vector<int64_t>({int64_t(f.size())}, f);
      });
      take("value_strings", [&](const char* n) {
        auto f = ctx.required<std::vector<std::string>>(n);
        return Tensor::from_vector<std::string>({int64_t(f.size())}, f);
      });
    }
    if (found.size() != 1)
      ctx.fail(fmt::format("Constant needs exactly one value attribute for opset {}, got {}", v, found.size()));
    value_ = found[0];
  }
  Values run(const Values&, RunContext&) override { return {value_}; }

 private:
  Tensor value_;
};

class ConstantOfShape : public OpRun {
 public:
  using Types = AllNumeric;
  explicit ConstantOfShape(const NodeContext& ctx) {
    value_ = ctx.attr<Tensor>("value", Tensor::from_vector<float>({1}, {0.0f}));
    if (value_.size() != 1) ctx.fail("ConstantOfShape: value must hold exactly one element");
    if (value_.dtype() == DType::String) ctx.fail("ConstantOfShape: value cannot be a string");
  }
  Values run(const Values& in, RunContext&) override {
    const std::vector<int64_t> shape = to_int64s(input_tensor(in, 0));
    for (int64_t d : shape)
      if (d < 0) fail_runtime(fmt::format("ConstantOfShape: negative dimension {}", d));
    Tensor y(value_.dtype(), shape);
    visit_by_width(value_.dtype(), [&]<class W>() {
      const W v = raw_as<W>(value_)[0];
      W* out = raw_as<W>(y);
      for (int64_t i = 0; i < y.size(); ++i) out[i] = v;
    });
    return {y};
  }

 private:
  Tensor value_;
};

}  // namespace

void register_constant(Registry& reg) {
  reg.add("", "Constant", {1, 9, 11, 12, 13, 19, 21, 23, 24, 25}, make<Constant>);
  reg.add("", "ConstantOfShape", {9, 20, 21, 23, 24, 25}, make<ConstantOfShape>);
}

}  // namespace refeval::ops
