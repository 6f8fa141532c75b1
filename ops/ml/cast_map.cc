// CastMap: a map from int64 keys to strings or floats becomes a [1, N] tensor of cast_to
// (TO_FLOAT, TO_STRING, TO_INT64). DENSE: the values in ascending key order. SPARSE: max_map
// columns, value k at column k (keys must be in [0, max_map)), other columns zero ("0" for
// strings). Strings parse as numbers; floats print as std::to_string does ("1.500000").
#include <algorithm>
#include <numeric>

#include "ml_common.h"

namespace refeval::ops {
namespace {

class CastMap : public OpRun {
 public:
  explicit CastMap(const NodeContext& ctx)
      : cast_to_(ctx.attr<std::string>("cast_to", "TO_FLOAT")),
        map_form_(ctx.attr<std::string>("map_form", "DENSE")),
        max_map_(ctx.attr<int64_t>("max_map", 1)) {
    if (cast_to_ != "TO_FLOAT" && cast_to_ != "TO_STRING" && cast_to_ != "TO_INT64")
      ctx.fail("cast_to must be TO_FLOAT, TO_STRING or TO_INT64, got '" + cast_to_ + "'");
    if (map_form_ != "DENSE" && map_form_ != "SPARSE") ctx.fail("map_form must be DENSE or SPARSE, got '" + map_form_ + "'");
    if (map_form_ == "SPARSE" && max_map_ < 1) ctx.fail("max_map must be positive");
  }

  Values run(const Values& in, RunContext&) override {
    const Map& m = in.at(0).map();
    if (m.keys.dtype() != DType::Int64) fail_runtime("CastMap needs a map with int64 keys");
    const int64_t n = m.keys.size();
    const int64_t* keys = m.keys.data<int64_t>();
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return keys[a] < keys[b]; });
    const bool dense = map_form_ == "DENSE";
    const int64_t width = dense ? n : max_map_;
    const DType out_type = cast_to_ == "TO_FLOAT" ? DType::Float : cast_to_ == "TO_STRING" ? DType::String : DType::Int64;
    Tensor y(out_type, {1, width});
    if (out_type == DType::String)
      for (int64_t j = 0; j < width; ++j) y.data<std::string>()[j] = "0";
    for (int64_t k = 0; k < n; ++k) {
      const int64_t i = order[k];
      const int64_t col = dense ? k : keys[i];
      if (col < 0 || col >= width) fail_runtime(fmt::format("key {} is outside [0, max_map = {})", keys[i], width));
      write(y, col, m.values, i);
    }
    return {y};
  }

 private:
  static void write(Tensor& y, int64_t col, const Tensor& values, int64_t i) {
    if (values.dtype() == DType::String) {
      const std::string& s = values.data<std::string>()[i];
      try {
        if (y.dtype() == DType::String) y.data<std::string>()[col] = s;
        else if (y.dtype() == DType::Float) y.data<float>()[col] = std::stof(s);
        else y.data<int64_t>()[col] = std::stoll(s);
      } catch (const std::exception&) {
        fail_runtime("cannot parse '" + s + "' as a number");
      }
    } else if (values.dtype() == DType::Float) {
      const float v = values.data<float>()[i];
      if (y.dtype() == DType::String) y.data<std::string>()[col] = std::to_string(v);
      else if (y.dtype() == DType::Float) y.data<float>()[col] = v;
      else {
        if (!(std::fabs(v) < 9.2e18f)) fail_runtime(fmt::format("{} does not fit int64", v));
        y.data<int64_t>()[col] = int64_t(v);
      }
    } else {
      fail_runtime("CastMap needs a map with string or float values");
    }
  }
  std::string cast_to_, map_form_;
  int64_t max_map_;
};

}  // namespace

void register_cast_map(Registry& reg) { reg.add(kMl, "CastMap", {1}, make<CastMap>); }

}  // namespace refeval::ops
