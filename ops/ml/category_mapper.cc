// CategoryMapper: with the pairs (cats_strings[i], cats_int64s[i]), maps strings to integers
// (default_int64 when absent) or integers to strings (default_string), by the input's type.
#include <unordered_map>

#include "ml_common.h"

namespace refeval::ops {
namespace {

class CategoryMapper : public OpRun {
 public:
  using Types = TypeList<std::string, int64_t>;
  explicit CategoryMapper(const NodeContext& ctx)
      : default_int_(ctx.attr<int64_t>("default_int64", -1)),
        default_string_(ctx.attr<std::string>("default_string", "_Unused")) {
    const auto ints = ctx.attr<std::vector<int64_t>>("cats_int64s", {});
    const auto strings = ctx.attr<std::vector<std::string>>("cats_strings", {});
    if (ints.size() != strings.size()) ctx.fail("cats_int64s and cats_strings must have the same length");
    for (size_t i = 0; i < ints.size(); ++i) {
      to_int_.emplace(strings[i], ints[i]);
      to_string_.emplace(ints[i], strings[i]);
    }
  }
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    if (x.dtype() == DType::String) {
      Tensor y(DType::Int64, x.shape());
      for (int64_t i = 0; i < x.size(); ++i) {
        auto it = to_int_.find(x.data<std::string>()[i]);
        y.data<int64_t>()[i] = it == to_int_.end() ? default_int_ : it->second;
      }
      return {y};
    }
    visit<Types>(x.dtype(), [&]<class T>() {});  // refuses other types
    Tensor y(DType::String, x.shape());
    for (int64_t i = 0; i < x.size(); ++i) {
      auto it = to_string_.find(x.data<int64_t>()[i]);
      y.data<std::string>()[i] = it == to_string_.end() ? default_string_ : it->second;
    }
    return {y};
  }

 private:
  int64_t default_int_;
  std::string default_string_;
  std::unordered_map<std::string, int64_t> to_int_;
  std::unordered_map<int64_t, std::string> to_string_;
};

}  // namespace

void register_category_mapper(Registry& reg) { reg.add(kMl, "CategoryMapper", {1}, make<CategoryMapper>); }

}  // namespace refeval::ops
