// Identity: passes its input through, tensors and (from 14 / 16) sequences and optionals alike.
#include "tensor_common.h"

#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class Identity : public OpRun {
 public:
  using Types = All;
  explicit Identity(const NodeContext&) {}
  Values run(const Values& in, RunContext&) override {
    if (in.empty() || in[0].is_absent()) fail_runtime("Identity: missing input");
    return {in[0]};
  }
};

}  // namespace

void register_identity(Registry& reg) {
  reg.add("", "Identity", {1, 13, 14, 16, 19, 21, 23, 24, 25}, make<Identity>);
}

}  // namespace refeval::ops
