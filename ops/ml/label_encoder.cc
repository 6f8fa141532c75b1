// LabelEncoder: maps each input element through a key -> value table, with a default for keys
// that are absent.
//   v1: classes_strings; strings map to their index (default_int64), int64 indices map to their
//       string (default_string).
//   v2: keys_{floats,int64s,strings} -> values_{floats,int64s,strings}; the default is the
//       default_{float,int64,string} of the value type.
//   v4: also keys_tensor / values_tensor / default_tensor, and int16, int32, double types.
// Float keys match by value, NaN matching NaN.
#include <cstring>
#include <unordered_map>

#include "ml_common.h"

namespace refeval::ops {
namespace {

using LabelTypes = TypeList<std::string, int64_t, float, int32_t, int16_t, double>;

// A canonical key for hashing one element: the string, the integer, or the double's bits.
template <class T>
std::string key_of(const T& v) {
  if constexpr (std::is_same_v<T, std::string>) return "s" + v;
  else if constexpr (std::is_integral_v<T>) return "i" + std::to_string(int64_t(v));
  else {
    double d = std::isnan(v) ? NAN : double(v);
    if (d == 0) d = 0;  // -0 matches 0
    uint64_t bits;
    std::memcpy(&bits, &d, 8);
    return "f" + std::to_string(bits);
  }
}

struct Table {
  Tensor keys, values, dflt;
  std::unordered_map<std::string, int64_t> index;
  void build() {
    visit<LabelTypes>(keys.dtype(), [&]<class T>() {
      for (int64_t i = 0; i < keys.size(); ++i) index.emplace(key_of(keys.data<T>()[i]), i);
    });
  }
  Tensor apply(const Tensor& x) const {
    if (x.dtype() != keys.dtype())
      fail_runtime(fmt::format("input type {} does not match the keys' type {}", dtype_short_name(x.dtype()),
                               dtype_short_name(keys.dtype())));
    Tensor y(values.dtype(), x.shape());
    visit<LabelTypes>(x.dtype(), [&]<class K>() {
      visit<LabelTypes>(values.dtype(), [&]<class V>() {
        for (int64_t i = 0; i < x.size(); ++i) {
          auto it = index.find(key_of(x.data<K>()[i]));
          y.data<V>()[i] = it == index.end() ? dflt.data<V>()[0] : values.data<V>()[it->second];
        }
      });
    });
    return y;
  }
};

class LabelEncoder : public OpRun {
 public:
  using Types = LabelTypes;
  explicit LabelEncoder(const NodeContext& ctx) {
    const int v = ctx.since_version();
    const auto dflt_int = ctx.attr<int64_t>("default_int64", -1);
    const auto dflt_str = ctx.attr<std::string>("default_string", "_Unused");
    if (v == 1) {
      const auto classes = ctx.attr<std::vector<std::string>>("classes_strings", {});
      std::vector<int64_t> idx(classes.size());
      for (size_t i = 0; i < idx.size(); ++i) idx[i] = int64_t(i);
      const Shape n{int64_t(classes.size())};
      by_string_ = {Tensor::from_vector(n, classes), Tensor::from_vector(n, idx), Tensor::scalar(dflt_int), {}};
      by_int_ = {Tensor::from_vector(n, idx), Tensor::from_vector(n, classes), Tensor::scalar(dflt_str), {}};
      by_string_.build();
      by_int_.build();
      return;
    }
    const float dflt_float = ctx.attr<float>("default_float", -0.0f);
    std::optional<Tensor> keys, values, dflt;
    if (v >= 4) {
      keys = ctx.optional_attr<Tensor>("keys_tensor");
      values = ctx.optional_attr<Tensor>("values_tensor");
      dflt = ctx.optional_attr<Tensor>("default_tensor");
    }
    auto list = [&](const char* prefix, std::optional<Tensor>& out) {
      const std::string p(prefix);
      auto f = ctx.optional_attr<std::vector<float>>(p + "_floats");
      auto i = ctx.optional_attr<std::vector<int64_t>>(p + "_int64s");
      auto s = ctx.optional_attr<std::vector<std::string>>(p + "_strings");
      const int given = int(bool(f)) + int(bool(i)) + int(bool(s)) + int(bool(out));
      if (given != 1) ctx.fail("exactly one " + p + "_* attribute is required");
      if (f) out = Tensor::from_vector(Shape{int64_t(f->size())}, *f);
      if (i) out = Tensor::from_vector(Shape{int64_t(i->size())}, *i);
      if (s) out = Tensor::from_vector(Shape{int64_t(s->size())}, *s);
    };
    list("keys", keys);
    list("values", values);
    if (keys->size() != values->size()) ctx.fail("keys and values must have the same length");
    if (!LabelTypes::contains(keys->dtype()) || !LabelTypes::contains(values->dtype()))
      ctx.fail("keys and values must be string, int64, int32, int16, float or double");
    if (dflt) {
      if (dflt->size() != 1 || dflt->dtype() != values->dtype()) ctx.fail("default_tensor must be one value of the values' type");
    } else {
      dflt = visit<LabelTypes>(values->dtype(), [&]<class V>() {
        if constexpr (std::is_same_v<V, std::string>) return Tensor::scalar(dflt_str);
        else if constexpr (std::is_floating_point_v<V>) return Tensor::scalar(V(dflt_float));
        else return Tensor::scalar(V(dflt_int));
      });
    }
    table_ = {keys->reshaped({keys->size()}), values->reshaped({values->size()}), *dflt, {}};
    table_.build();
  }

  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    if (table_.keys.defined()) return {table_.apply(x)};
    return {x.dtype() == DType::String ? by_string_.apply(x) : by_int_.apply(x)};
  }

 private:
  Table table_, by_string_, by_int_;
};

}  // namespace

void register_label_encoder(Registry& reg) { reg.add(kMl, "LabelEncoder", {1, 2, 4}, make<LabelEncoder>); }

}  // namespace refeval::ops
