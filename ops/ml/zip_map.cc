// ZipMap: each row of a float [N, C] tensor becomes a map from the class labels
// (classlabels_int64s or classlabels_strings, C of them) to the row's values; the output is the
// sequence of the N maps.
#include "ml_common.h"

namespace refeval::ops {
namespace {

class ZipMap : public OpRun {
 public:
  using Types = TypeList<float>;
  explicit ZipMap(const NodeContext& ctx) { labels_.read(ctx, "classlabels_int64s", "classlabels_strings"); }
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const Rows r = read_rows<Types>(x);
    if (size_t(r.c) != labels_.size())
      fail_runtime(fmt::format("input has {} columns but there are {} class labels", r.c, labels_.size()));
    Tensor keys = labels_.use_strings ? Tensor::from_vector(Shape{r.c}, labels_.strings)
                                      : Tensor::from_vector(Shape{r.c}, labels_.ints);
    Sequence out;
    for (int64_t i = 0; i < r.n; ++i) {
      Tensor values(DType::Float, {r.c});
      for (int64_t j = 0; j < r.c; ++j) values.data<float>()[j] = x.data<float>()[i * r.c + j];
      out.items.push_back(Map{keys, values});
    }
    return {out};
  }

 private:
  ClassLabels labels_;
};

}  // namespace

void register_zip_map(Registry& reg) { reg.add(kMl, "ZipMap", {1}, make<ZipMap>); }

}  // namespace refeval::ops
