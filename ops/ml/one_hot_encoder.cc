// OneHotEncoder: each element becomes a one-hot row over the categories (cats_strings for string
// inputs, cats_int64s for numeric ones, numbers compared as int64); Y is float with shape
// X.shape + [number of categories]. An unknown category gives a zero row if zeros = 1 (default)
// and is an error otherwise.
#include <unordered_map>

#include "ml_common.h"

namespace refeval::ops {
namespace {

class OneHotEncoder : public OpRun {
 public:
  using Types = TypeList<std::string, int64_t, int32_t, float, double>;
  explicit OneHotEncoder(const NodeContext& ctx)
      : ints_(ctx.attr<std::vector<int64_t>>("cats_int64s", {})),
        strings_(ctx.attr<std::vector<std::string>>("cats_strings", {})),
        zeros_(ctx.attr<int64_t>("zeros", 1) != 0) {
    if (ints_.empty() == strings_.empty()) ctx.fail("exactly one of cats_int64s and cats_strings is required");
    for (size_t i = 0; i < ints_.size(); ++i) int_col_.emplace(ints_[i], int64_t(i));
    for (size_t i = 0; i < strings_.size(); ++i) string_col_.emplace(strings_[i], int64_t(i));
  }
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const int64_t k = int64_t(ints_.size() + strings_.size());
    Shape shape = x.shape();
    shape.push_back(k);
    Tensor y(DType::Float, shape);
    visit<Types>(x.dtype(), [&]<class T>() {
      for (int64_t i = 0; i < x.size(); ++i) {
        int64_t col = -1;
        if constexpr (std::is_same_v<T, std::string>) {
          if (strings_.empty()) fail_runtime("string input needs cats_strings");
          auto it = string_col_.find(x.data<T>()[i]);
          if (it != string_col_.end()) col = it->second;
        } else {
          if (ints_.empty()) fail_runtime("numeric input needs cats_int64s");
          const double v = double(x.data<T>()[i]);
          auto it = std::isfinite(v) ? int_col_.find(int64_t(v)) : int_col_.end();
          if (it != int_col_.end() && double(it->first) == v) col = it->second;
        }
        if (col < 0 && !zeros_) fail_runtime("unknown category with zeros = 0");
        if (col >= 0) y.data<float>()[i * k + col] = 1.0f;
      }
    });
    return {y};
  }

 private:
  std::vector<int64_t> ints_;
  std::vector<std::string> strings_;
  bool zeros_;
  std::unordered_map<int64_t, int64_t> int_col_;
  std::unordered_map<std::string, int64_t> string_col_;
};

}  // namespace

void register_one_hot_encoder(Registry& reg) { reg.add(kMl, "OneHotEncoder", {1}, make<OneHotEncoder>); }

}  // namespace refeval::ops
