// Reshape: a new shape for the same elements; 0 copies the input dim (unless allowzero), -1 is
// inferred. Version 1 takes the shape as an attribute. The output shares the input's storage.
#include "tensor_common.h"

#include "refeval/registry.h"

namespace refeval::ops {
namespace {

Shape resolve_shape(const Shape& in, const std::vector<int64_t>& requested, bool allowzero) {
  Shape out(requested.size());
  int64_t infer = -1, known = 1;
  bool has_zero = false;
  for (size_t i = 0; i < requested.size(); ++i) {
    int64_t d = requested[i];
    if (d == -1) {
      if (infer >= 0) fail_runtime("Reshape: more than one -1 in the shape " + shape_to_string(requested));
      infer = int64_t(i);
      continue;
    }
    if (d < -1) fail_runtime(fmt::format("Reshape: invalid dimension {} in the shape", d));
    if (d == 0 && !allowzero) {
      if (i >= in.size())
        fail_runtime(fmt::format("Reshape: 0 at position {} but the input has rank {}", i, in.size()));
      d = in[i];
    }
    has_zero = has_zero || d == 0;
    out[i] = d;
    if (__builtin_mul_overflow(known, d, &known)) fail_runtime("Reshape: the shape's element count overflows");
  }
  const int64_t total = shape_size(in);
  if (infer >= 0) {
    // With a 0 among the other dims any size fits the -1: numpy and ONNX Runtime refuse it.
    if (known == 0) {
      if (allowzero && has_zero) fail_runtime("Reshape: allowzero shape holds both 0 and -1");
      fail_runtime(fmt::format("Reshape: cannot infer the -1 of {} beside a dim of 0 (any size fits)", shape_to_string(requested)));
    } else {
      if (total % known != 0)
        fail_runtime(fmt::format("Reshape: cannot reshape {} into {}", shape_to_string(in), shape_to_string(requested)));
      out[size_t(infer)] = total / known;
    }
  }
  if (shape_size(out) != total)
    fail_runtime(fmt::format("Reshape: cannot reshape {} into {}", shape_to_string(in), shape_to_string(requested)));
  return out;
}

class Reshape : public OpRun {
 public:
  using Types = All;
  explicit Reshape(const NodeContext& ctx) {
    if (ctx.since_version() < 5) {
      ctx.ignore("consumed_inputs");
      shape_attr_ = ctx.attr<std::vector<int64_t>>("shape", {});
    }
    if (ctx.since_version() >= 14) allowzero_ = ctx.attr<int64_t>("allowzero", 0) != 0;
    v1_ = ctx.since_version() < 5;
  }
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const std::vector<int64_t> shape = v1_ ? shape_attr_ : to_int64s(input_tensor(in, 1));
    return {x.reshaped(resolve_shape(x.shape(), shape, allowzero_))};
  }

 private:
  bool v1_ = false, allowzero_ = false;
  std::vector<int64_t> shape_attr_;
};

}  // namespace

void register_reshape(Registry& reg) {
  reg.add("", "Reshape", {1, 5, 13, 14, 19, 21, 23, 24, 25}, make<Reshape>);
}

}  // namespace refeval::ops
