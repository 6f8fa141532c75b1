#include "pass.h"

namespace refeval::optimize {

Pass rewrite_pass(std::string name, Level level, Rewrite rewrite) {
  const std::string counter = "Fused " + rewrite.counter;
  return {name, counter, level,
          [r = std::move(rewrite), name, level](Model& m, PassContext& ctx) {
            // The basic level's rewrites (MatMul + Add -> Gemm on 2-D operands) are clean-ups, not
            // fusions a user looks for: --explain covers the extended level.
            return apply(r, m, ctx.inference, level == Level::Extended ? ctx.explain : nullptr, name);
          }};
}

}  // namespace refeval::optimize
