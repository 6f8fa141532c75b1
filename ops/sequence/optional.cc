// Optional, OptionalHasElement, OptionalGetElement.
//   Optional(x)            an optional holding x; Optional() an empty one of the `type` attribute
//   OptionalHasElement(o)  true if o holds a value; from opset 18 also true for a plain tensor or
//                          sequence and false for an omitted input
//   OptionalGetElement(o)  the value o holds (an error if empty); from opset 18 a plain tensor or
//                          sequence passes through
#include <memory>

#include "refeval/registry.h"
#include "sequence_common.h"

namespace refeval::ops {
namespace {

class OptionalOp : public OpRun {
 public:
  using Types = All;  // values are moved or passed on, never computed on
  explicit OptionalOp(const NodeContext& ctx) {
    if (auto t = ctx.optional_attr<ValueType>("type")) type_ = std::make_shared<const ValueType>(*t);
    if (!ctx.has_input(0) && !type_) ctx.fail("an Optional without input needs the 'type' attribute");
  }
  Values run(const Values& in, RunContext&) override {
    Optional o;
    o.type = type_;
    if (has_value(in, 0)) {
      if (!in[0].is_tensor() && !in[0].is_sequence())
        fail_runtime(fmt::format("the input must be a tensor or a sequence, got a {}", in[0].kind_name()));
      o.value = std::make_shared<const Value>(in[0]);
    }
    return {std::move(o)};
  }

 private:
  std::shared_ptr<const ValueType> type_;
};

class OptionalHasElement : public OpRun {
 public:
  using Types = All;  // values are moved or passed on, never computed on
  explicit OptionalHasElement(const NodeContext& ctx) : plain_ok_(ctx.since_version() >= 18) {
    if (!plain_ok_ && !ctx.has_input(0)) ctx.fail("OptionalHasElement before opset 18 needs its input");
  }
  Values run(const Values& in, RunContext&) override {
    if (!has_value(in, 0)) return {Tensor::scalar<bool>(false)};
    if (in[0].is_optional()) return {Tensor::scalar<bool>(in[0].optional().has_value())};
    if (!plain_ok_) fail_runtime(fmt::format("the input must be an optional before opset 18, got a {}", in[0].kind_name()));
    return {Tensor::scalar<bool>(true)};
  }

 private:
  bool plain_ok_;
};

class OptionalGetElement : public OpRun {
 public:
  using Types = All;  // values are moved or passed on, never computed on
  explicit OptionalGetElement(const NodeContext& ctx) : plain_ok_(ctx.since_version() >= 18) {}
  Values run(const Values& in, RunContext&) override {
    if (!has_value(in, 0)) fail_runtime("the input is missing");
    if (in[0].is_optional()) {
      const Optional& o = in[0].optional();
      if (!o.has_value()) fail_runtime("the optional is empty");
      return {*o.value};
    }
    if (!plain_ok_) fail_runtime(fmt::format("the input must be an optional before opset 18, got a {}", in[0].kind_name()));
    return {in[0]};
  }

 private:
  bool plain_ok_;
};

}  // namespace

void register_optional(Registry& reg) {
  reg.add("", "Optional", {15}, make<OptionalOp>);
  reg.add("", "OptionalHasElement", {15, 18}, make<OptionalHasElement>);
  reg.add("", "OptionalGetElement", {15, 18}, make<OptionalGetElement>);
}

}  // namespace refeval::ops
