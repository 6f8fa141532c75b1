// StringNormalizer: removes stopwords (compared case-sensitively or not) from a [C] or [1, C]
// string tensor, then lower- or upper-cases what remains. If every string is removed the output is
// one empty string, shape [1] or [1, 1]. Case mapping is locale-free (string_common.h); the
// `locale` attribute is read and accepted, and en_US semantics are used for every locale.
#include <unordered_set>

#include "refeval/registry.h"
#include "string_common.h"

namespace refeval::ops {
namespace {

class StringNormalizer : public OpRun {
 public:
  using Types = TypeList<std::string>;
  explicit StringNormalizer(const NodeContext& ctx)
      : case_sensitive_(ctx.attr<int64_t>("is_case_sensitive", 0) != 0) {
    const std::string action = ctx.attr<std::string>("case_change_action", "NONE");
    if (action == "LOWER") action_ = Action::Lower;
    else if (action == "UPPER") action_ = Action::Upper;
    else if (action != "NONE") ctx.fail("case_change_action must be NONE, LOWER or UPPER, got '" + action + "'");
    ctx.attr<std::string>("locale", "en_US");
    for (const std::string& w : ctx.attr<std::vector<std::string>>("stopwords", {}))
      stopwords_.insert(case_sensitive_ ? w : utf8_lower(w));
  }

  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    if (!(x.rank() == 1 || (x.rank() == 2 && x.dim(0) == 1)))
      fail_runtime("input must have shape [C] or [1, C], got " + shape_to_string(x.shape()));
    std::vector<std::string> kept;
    for (int64_t i = 0; i < x.size(); ++i) {
      const std::string& s = x.data<std::string>()[i];
      if (stopwords_.count(case_sensitive_ ? s : utf8_lower(s))) continue;
      kept.push_back(action_ == Action::Lower ? utf8_lower(s) : action_ == Action::Upper ? utf8_upper(s) : s);
    }
    if (kept.empty()) kept.push_back("");
    Shape shape{int64_t(kept.size())};
    if (x.rank() == 2) shape.insert(shape.begin(), 1);
    return {Tensor::from_vector<std::string>(shape, kept)};
  }

 private:
  enum class Action { None, Lower, Upper };
  Action action_ = Action::None;
  bool case_sensitive_;
  std::unordered_set<std::string> stopwords_;
};

}  // namespace

void register_string_normalizer(Registry& reg) { reg.add("", "StringNormalizer", {10}, make<StringNormalizer>); }

}  // namespace refeval::ops
