// Cast and CastLike: elementwise conversion to the type named by `to` (Cast) or to the type of a
// second input (CastLike). The conversions themselves are in cast_impl.cc.
#include "math_common.h"

namespace refeval::ops {
namespace {

CastOptions read_cast_options(const NodeContext& ctx) {
  CastOptions o;
  if (ctx.since_version() >= 19) o.saturate = ctx.attr<int64_t>("saturate", 1) != 0;
  if (ctx.since_version() >= 24) {
    const auto mode = ctx.attr<std::string>("round_mode", "up");
    if (mode == "up") o.round_mode = E8M0Rounding::Up;
    else if (mode == "down") o.round_mode = E8M0Rounding::Down;
    else if (mode == "nearest") o.round_mode = E8M0Rounding::Nearest;
    else ctx.fail("round_mode must be 'up', 'down' or 'nearest', got '" + mode + "'");
  }
  return o;
}

class Cast : public OpRun {
 public:
  using Types = CastTypes;
  explicit Cast(const NodeContext& ctx) : options_(read_cast_options(ctx)) {
    // Opsets 1-5 name the type as a string ("FLOAT"); later ones as a TensorProto.DataType number.
    if (ctx.since_version() < 6 && is_string_to(ctx)) {
      to_ = dtype_from_name(ctx.required<std::string>("to"));
    } else {
      const auto v = ctx.required<int64_t>("to");
      to_ = is_valid_dtype(int32_t(v)) && v == int32_t(v) ? DType(v) : DType::Undefined;
    }
    if (!Types::contains(to_)) ctx.fail("'to' is not an element type Cast supports");
  }
  Values run(const Values& in, RunContext&) override { return {cast_tensor(input_tensor(in, 0), to_, options_)}; }

 private:
  static bool is_string_to(const NodeContext& ctx) {
    for (const auto& a : ctx.node().attributes)
      if (a.name == "to") return a.type == AttrType::String;
    return false;
  }
  CastOptions options_;
  DType to_ = DType::Undefined;
};

class CastLike : public OpRun {
 public:
  using Types = CastTypes;
  explicit CastLike(const NodeContext& ctx) : options_(read_cast_options(ctx)) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor& target = input_tensor(in, 1);
    if (!Types::contains(target.dtype())) fail_unsupported_dtype(target.dtype(), Types::dtypes());
    return {cast_tensor(input_tensor(in, 0), target.dtype(), options_)};
  }
 private:
  CastOptions options_;
};

}  // namespace

void register_cast(Registry& reg) {
  reg.add("", "Cast", {1, 6, 9, 13, 19, 21, 23, 24, 25, 28}, make<Cast>);
  reg.add("", "CastLike", {15, 19, 21, 23, 24, 25}, make<CastLike>);
}

}  // namespace refeval::ops
