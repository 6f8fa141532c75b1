// If: runs then_branch or else_branch, chosen by a one-element bool condition, and returns
// that branch's outputs. Both branches can read every value of the enclosing graphs.
#include "control_common.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class If : public OpRun {
 public:
  using Types = All;  // values are moved or passed on, never computed on
  explicit If(const NodeContext& ctx) : then_(ctx.subgraph("then_branch")), else_(ctx.subgraph("else_branch")) {
    const size_t n_then = plan_output_names(*then_).size(), n_else = plan_output_names(*else_).size();
    if (n_then != n_else)
      ctx.fail(fmt::format("then_branch has {} outputs but else_branch has {}", n_then, n_else));
    if (ctx.num_outputs() != n_then)
      ctx.fail(fmt::format("the node has {} outputs but its branches have {}", ctx.num_outputs(), n_then));
  }

  Values run(const Values& in, RunContext& ctx) override {
    const bool cond = condition_value(input_tensor(in, 0), "the condition");
    return ctx.run_body(cond ? *then_ : *else_, {}, cond ? "then_branch" : "else_branch");
  }

 private:
  std::shared_ptr<const Plan> then_, else_;
};

}  // namespace

void register_if(Registry& reg) { reg.add("", "If", {1, 11, 13, 16, 19, 21, 23, 24, 25}, make<If>); }

}  // namespace refeval::ops
