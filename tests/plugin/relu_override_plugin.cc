// A test plugin that replaces the built-in Relu at every opset (Registry::add_any_version):
// negative inputs become -1 instead of 0, so a test can see which kernel ran.
#include "refeval/elementwise.h"
#include "refeval/plugin.h"

namespace {

class MarkedRelu : public refeval::OpRun {
 public:
  using Types = refeval::Floats;
  explicit MarkedRelu(const refeval::NodeContext&) {}
  refeval::Values run(const refeval::Values& in, refeval::RunContext&) override {
    const refeval::Tensor& x = refeval::input_tensor(in, 0);
    return {refeval::visit<Types>(x.dtype(), [&]<class T>() {
      return refeval::map_unary<T>(x, [](auto v) { return v < 0 ? decltype(v)(-1) : v; });
    })};
  }
};

}  // namespace

extern "C" int refeval_register_ops(refeval::Registry* registry, int api_version) {
  if (api_version != refeval::kPluginApiVersion) return refeval::kPluginApiVersion;
  registry->add_any_version("", "Relu", refeval::make<MarkedRelu>);
  return 0;
}
