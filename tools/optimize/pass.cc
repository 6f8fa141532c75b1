#include "pass.h"

namespace refeval::optimize {

Pass rewrite_pass(std::string name, Level level, Rewrite rewrite) {
  const std::string counter = "Fused " + rewrite.counter;
  return {name, counter, level,
          [r = std::move(rewrite), name](Model& m, PassContext& ctx) { return apply(r, m, ctx.inference, ctx.explain, name); }};
}

}  // namespace refeval::optimize
