#include "my_fused_gelu.h"

#include <cmath>
#include <numbers>

#include <fmt/format.h>

#include "refeval/elementwise.h"

namespace example {
namespace {

class MyFusedGelu : public refeval::OpRun {
 public:
  using Types = refeval::Floats;  // float, double, float16, bfloat16

  // Attributes are read once, when the model is planned; a bad value is a model error that
  // names the node (NodeContext::fail).
  explicit MyFusedGelu(const refeval::NodeContext& ctx) : tanh_(false) {
    const std::string approximate = ctx.attr<std::string>("approximate", "none");
    if (approximate != "none" && approximate != "tanh")
      ctx.fail(fmt::format("approximate must be 'none' or 'tanh', got '{}'", approximate));
    tanh_ = approximate == "tanh";
  }

  refeval::Values run(const refeval::Values& in, refeval::RunContext& ctx) override {
    const refeval::Tensor& x = refeval::input_tensor(in, 0);
    const refeval::Tensor& bias = refeval::input_tensor(in, 1);
    if (bias.dtype() != x.dtype()) ctx.fail("bias must have X's element type");
    if (x.rank() == 0 || bias.rank() != 1 || bias.dim(0) != x.dim(x.rank() - 1))
      ctx.fail(fmt::format("bias must be 1-D with X's last dimension; X is {}, bias {}", refeval::shape_to_string(x.shape()),
                           refeval::shape_to_string(bias.shape())));
    return {refeval::visit<Types>(x.dtype(), [&]<class T>() {
      return refeval::map_binary<T, T>(x, bias, [&](auto a, auto b) {
        using C = decltype(a);  // the compute type: float for the narrow floats
        const C z = a + b;
        if (tanh_) {
          const C k = C(std::sqrt(2.0 / std::numbers::pi));
          return C(0.5) * z * (C(1) + std::tanh(k * (z + C(0.044715) * z * z * z)));
        }
        return C(0.5) * z * (C(1) + std::erf(z / C(std::numbers::sqrt2)));
      });
    })};
  }

 private:
  bool tanh_;
};

}  // namespace

void register_my_fused_gelu(refeval::Registry& registry) {
  registry.add(kDomain, "MyFusedGelu", {1}, refeval::make<MyFusedGelu>);
}

}  // namespace example
