// DictVectorizer: a map becomes a [1, V] tensor of its value type, column j holding the value of
// vocabulary[j] (string_vocabulary for string keys, int64_vocabulary for int64 keys), zero (""
// for strings) where the map has no such key. A sequence of N maps gives [N, V].
#include <unordered_map>

#include "ml_common.h"

namespace refeval::ops {
namespace {

class DictVectorizer : public OpRun {
 public:
  using Types = TypeList<int64_t, float, double, std::string>;
  explicit DictVectorizer(const NodeContext& ctx)
      : ints_(ctx.attr<std::vector<int64_t>>("int64_vocabulary", {})),
        strings_(ctx.attr<std::vector<std::string>>("string_vocabulary", {})) {
    if (!ints_.empty() && !strings_.empty()) ctx.fail("only one of int64_vocabulary and string_vocabulary may be set");
    for (size_t i = 0; i < ints_.size(); ++i) int_col_.emplace(ints_[i], int64_t(i));
    for (size_t i = 0; i < strings_.size(); ++i) string_col_.emplace(strings_[i], int64_t(i));
  }

  Values run(const Values& in, RunContext&) override {
    std::vector<const Map*> maps;
    if (in.at(0).is_sequence())
      for (const Value& v : in[0].sequence().items) maps.push_back(&v.map());
    else maps.push_back(&in.at(0).map());
    const int64_t width = int64_t(strings_.empty() ? ints_.size() : strings_.size());
    DType vt = maps.empty() ? DType::Float : maps[0]->values.dtype();
    Tensor y(vt, {int64_t(maps.size()), width});
    visit<Types>(vt, [&]<class V>() {
      for (size_t r = 0; r < maps.size(); ++r) {
        const Map& m = *maps[r];
        if (m.values.dtype() != vt) fail_runtime("all maps must have one value type");
        for (int64_t k = 0; k < m.keys.size(); ++k) {
          const int64_t col = column(m.keys, k);
          if (col >= 0) y.data<V>()[int64_t(r) * width + col] = m.values.data<V>()[k];
        }
      }
    });
    return {y};
  }

 private:
  int64_t column(const Tensor& keys, int64_t k) const {
    if (keys.dtype() == DType::String) {
      if (!ints_.empty()) fail_runtime("string keys need string_vocabulary");
      auto it = string_col_.find(keys.data<std::string>()[k]);
      return it == string_col_.end() ? -1 : it->second;
    }
    if (keys.dtype() != DType::Int64) fail_runtime("map keys must be int64 or string");
    if (!strings_.empty()) fail_runtime("int64 keys need int64_vocabulary");
    auto it = int_col_.find(keys.data<int64_t>()[k]);
    return it == int_col_.end() ? -1 : it->second;
  }
  std::vector<int64_t> ints_;
  std::vector<std::string> strings_;
  std::unordered_map<int64_t, int64_t> int_col_;
  std::unordered_map<std::string, int64_t> string_col_;
};

}  // namespace

void register_dict_vectorizer(Registry& reg) { reg.add(kMl, "DictVectorizer", {1}, make<DictVectorizer>); }

}  // namespace refeval::ops
