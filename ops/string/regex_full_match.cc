// RegexFullMatch: y[i] = whether x[i] matches `pattern` (RE2 syntax) in full.
#include <memory>

#include <re2/re2.h>

#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class RegexFullMatch : public OpRun {
 public:
  using Types = TypeList<std::string>;
  explicit RegexFullMatch(const NodeContext& ctx) {
    const std::string pattern = ctx.required<std::string>("pattern");
    re_ = std::make_unique<RE2>(pattern, RE2::Quiet);
    if (!re_->ok()) ctx.fail("invalid RE2 pattern '" + pattern + "': " + re_->error());
  }
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    Tensor y(DType::Bool, x.shape());
    const std::string* px = x.data<std::string>();
    for (int64_t i = 0; i < x.size(); ++i) y.data<bool>()[i] = RE2::FullMatch(px[i], *re_);
    return {y};
  }

 private:
  std::unique_ptr<RE2> re_;
};

}  // namespace

void register_regex_full_match(Registry& reg) { reg.add("", "RegexFullMatch", {20}, make<RegexFullMatch>); }

}  // namespace refeval::ops
