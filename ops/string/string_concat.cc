// StringConcat: z = a + b elementwise on strings, with numpy broadcasting.
#include "refeval/elementwise.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class StringConcat : public OpRun {
 public:
  using Types = TypeList<std::string>;
  explicit StringConcat(const NodeContext&) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor& a = input_tensor(in, 0);
    const Tensor& b = input_tensor(in, 1);
    return {map_binary<std::string, std::string>(a, b, [](const std::string& x, const std::string& y) { return x + y; })};
  }
};

}  // namespace

void register_string_concat(Registry& reg) { reg.add("", "StringConcat", {20}, make<StringConcat>); }

}  // namespace refeval::ops
