// NonMaxSuppression (10, 11): per batch and class, boxes whose score exceeds score_threshold are
// taken greedily by decreasing score (ties: lower index first), skipping any box whose IoU with
// an already selected box exceeds iou_threshold, up to max_output_boxes_per_class boxes.
// Output rows [batch, class, box]. IoU is computed in float, as the boxes are.
#include <algorithm>
#include <numeric>

#include "vision_common.h"

namespace refeval::ops {
namespace {

struct Box { float y1, x1, y2, x2; };

class NonMaxSuppression : public OpRun {
 public:
  using Types = TypeList<float>;
  explicit NonMaxSuppression(const NodeContext& ctx) : center_point_box_(ctx.attr<int64_t>("center_point_box", 0)) {
    if (center_point_box_ != 0 && center_point_box_ != 1) ctx.fail("center_point_box must be 0 or 1");
  }

  Values run(const Values& in, RunContext&) override {
    const Tensor& boxes_t = input_tensor(in, 0);
    const Tensor& scores_t = input_tensor(in, 1);
    visit<Types>(boxes_t.dtype(), [&]<class T>() {});
    visit<Types>(scores_t.dtype(), [&]<class T>() {});
    if (boxes_t.rank() != 3 || boxes_t.dim(2) != 4) fail_runtime("boxes must be (num_batches, spatial_dimension, 4)");
    if (scores_t.rank() != 3 || scores_t.dim(0) != boxes_t.dim(0) || scores_t.dim(2) != boxes_t.dim(1))
      fail_runtime("scores must be (num_batches, num_classes, spatial_dimension)");
    const int64_t max_out = has_value(in, 2) && input_tensor(in, 2).size() > 0 ? ints_of(input_tensor(in, 2))[0] : 0;
    const float iou_threshold = has_value(in, 3) && input_tensor(in, 3).size() > 0 ? input_tensor(in, 3).data<float>()[0] : 0.0f;
    const bool has_score_threshold = has_value(in, 4) && input_tensor(in, 4).size() > 0;
    const float score_threshold = has_score_threshold ? input_tensor(in, 4).data<float>()[0] : 0.0f;
    const int64_t batches = boxes_t.dim(0), spatial = boxes_t.dim(1), classes = scores_t.dim(1);
    const float* bp = boxes_t.data<float>();
    const float* sp = scores_t.data<float>();
    std::vector<int64_t> out;
    for (int64_t b = 0; b < batches && max_out > 0; ++b) {
      std::vector<Box> boxes(static_cast<size_t>(spatial));
      for (int64_t i = 0; i < spatial; ++i) boxes[size_t(i)] = corners(bp + (b * spatial + i) * 4);
      for (int64_t c = 0; c < classes; ++c) {
        const float* s = sp + (b * classes + c) * spatial;
        std::vector<int64_t> order;
        for (int64_t i = 0; i < spatial; ++i)
          if (!has_score_threshold || s[i] > score_threshold) order.push_back(i);
        std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return s[i] > s[j]; });
        std::vector<int64_t> kept;
        for (int64_t i : order) {
          if (int64_t(kept.size()) >= max_out) break;
          bool suppressed = false;
          for (int64_t k : kept) suppressed = suppressed || iou(boxes[size_t(i)], boxes[size_t(k)]) > iou_threshold;
          if (suppressed) continue;
          kept.push_back(i);
          out.insert(out.end(), {b, c, i});
        }
      }
    }
    return {Tensor::from_vector<int64_t>({int64_t(out.size() / 3), 3}, out)};
  }

 private:
  // Ordered corners (y_min, x_min, y_max, x_max) of a box in either encoding.
  Box corners(const float* v) const {
    if (center_point_box_) {
      const float xc = v[0], yc = v[1], w = v[2], h = v[3];
      return {yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2};
    }
    return {std::min(v[0], v[2]), std::min(v[1], v[3]), std::max(v[0], v[2]), std::max(v[1], v[3])};
  }

  static float iou(const Box& a, const Box& b) {
    const float ix1 = std::max(a.x1, b.x1), iy1 = std::max(a.y1, b.y1);
    const float ix2 = std::min(a.x2, b.x2), iy2 = std::min(a.y2, b.y2);
    if (ix2 <= ix1 || iy2 <= iy1) return 0;
    const float inter = (ix2 - ix1) * (iy2 - iy1);
    const float area_a = (a.x2 - a.x1) * (a.y2 - a.y1), area_b = (b.x2 - b.x1) * (b.y2 - b.y1);
    const float uni = area_a + area_b - inter;
    if (area_a <= 0 || area_b <= 0 || uni <= 0) return 0;
    return inter / uni;
  }

  int64_t center_point_box_;
};

}  // namespace

void register_non_max_suppression(Registry& reg) {
  reg.add("", "NonMaxSuppression", {10, 11}, make<NonMaxSuppression>);
}

}  // namespace refeval::ops
