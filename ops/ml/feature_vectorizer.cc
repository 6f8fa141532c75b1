// FeatureVectorizer: concatenates the columns of its inputs ([N, C_i] or [C_i]) into one float
// [N, sum(inputdimensions)] tensor; input i contributes inputdimensions[i] columns, truncated or
// padded with zeros.
#include "ml_common.h"

namespace refeval::ops {
namespace {

class FeatureVectorizer : public OpRun {
 public:
  using Types = MlNumeric;
  explicit FeatureVectorizer(const NodeContext& ctx)
      : dims_(ctx.attr<std::vector<int64_t>>("inputdimensions", {})) {
    for (int64_t d : dims_)
      if (d < 0) ctx.fail("inputdimensions must not be negative");
  }
  Values run(const Values& in, RunContext&) override {
    if (in.size() != dims_.size())
      fail_runtime(fmt::format("{} inputs but {} inputdimensions", in.size(), dims_.size()));
    int64_t width = 0, n = -1;
    std::vector<Rows> rows;
    for (size_t i = 0; i < in.size(); ++i) {
      rows.push_back(read_rows<Types>(input_tensor(in, i)));
      if (n >= 0 && rows.back().n != n) fail_runtime("all inputs must have the same number of rows");
      n = rows.back().n;
      width += dims_[i];
    }
    if (n < 0) n = 1;
    std::vector<double> y(size_t(n * width), 0.0);
    int64_t offset = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
      for (int64_t r = 0; r < n; ++r)
        for (int64_t j = 0; j < std::min(dims_[i], rows[i].c); ++j) y[r * width + offset + j] = rows[i].row(r)[j];
      offset += dims_[i];
    }
    return {float_tensor({n, width}, y)};
  }

 private:
  std::vector<int64_t> dims_;
};

}  // namespace

void register_feature_vectorizer(Registry& reg) { reg.add(kMl, "FeatureVectorizer", {1}, make<FeatureVectorizer>); }

}  // namespace refeval::ops
