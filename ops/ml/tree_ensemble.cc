// TreeEnsemble (ai.onnx.ml 5): trees given by arrays of nodes. Node i tests feature
// nodes_featureids[i] against nodes_splits[i] with nodes_modes[i] (0 <=, 1 <, 2 >=, 3 >, 4 ==,
// 5 !=, 6 member of the next NaN-terminated run of membership_values); a NaN feature goes the
// true way when nodes_missing_value_tracks_true[i] is set. The true / false successors are
// nodes (or leaves, when nodes_trueleafs / nodes_falseleafs say so). A leaf adds leaf_weights[j]
// to target leaf_targetids[j]; trees combine by aggregate_function (0 AVERAGE, 1 SUM, 2 MIN,
// 3 MAX), then post_transform (0 NONE, 1 SOFTMAX, 2 LOGISTIC, 3 SOFTMAX_ZERO, 4 PROBIT).
// Output [N, n_targets] of X's type.
#include <set>

#include "tree_common.h"

namespace refeval::ops {
namespace {

class TreeEnsemble : public OpRun {
 public:
  using Types = TypeList<float, double, float16>;
  explicit TreeEnsemble(const NodeContext& ctx)
      : aggregate_(Aggregate(ctx.attr<int64_t>("aggregate_function", 1))),
        leaf_targets_(ctx.required<std::vector<int64_t>>("leaf_targetids")),
        leaf_weights_(tensor_to_doubles(ctx.required<Tensor>("leaf_weights"))),
        n_targets_(ctx.required<int64_t>("n_targets")),
        false_leaf_(ctx.required<std::vector<int64_t>>("nodes_falseleafs")),
        false_id_(ctx.required<std::vector<int64_t>>("nodes_falsenodeids")),
        feature_(ctx.required<std::vector<int64_t>>("nodes_featureids")),
        modes_(tensor_to_doubles(ctx.required<Tensor>("nodes_modes"))),
        splits_(tensor_to_doubles(ctx.required<Tensor>("nodes_splits"))),
        true_leaf_(ctx.required<std::vector<int64_t>>("nodes_trueleafs")),
        true_id_(ctx.required<std::vector<int64_t>>("nodes_truenodeids")),
        roots_(ctx.required<std::vector<int64_t>>("tree_roots")) {
    const int64_t agg = int64_t(aggregate_), pt = ctx.attr<int64_t>("post_transform", 0);
    if (agg < 0 || agg > 3) ctx.fail("aggregate_function must be in [0, 3]");
    if (pt < 0 || pt > 4) ctx.fail("post_transform must be in [0, 4]");
    const PostTransform map[] = {PostTransform::None, PostTransform::Softmax, PostTransform::Logistic,
                                 PostTransform::SoftmaxZero, PostTransform::Probit};
    post_ = map[pt];
    if (auto h = ctx.optional_attr<Tensor>("nodes_hitrates")) (void)h;  // hit rates do not change results
    missing_true_ = ctx.attr<std::vector<int64_t>>("nodes_missing_value_tracks_true", {});
    const size_t n = feature_.size();
    if (modes_.size() != n || splits_.size() != n || true_id_.size() != n || false_id_.size() != n ||
        true_leaf_.size() != n || false_leaf_.size() != n || (!missing_true_.empty() && missing_true_.size() != n))
      ctx.fail("the nodes_* attributes must have one entry per node");
    if (leaf_targets_.size() != leaf_weights_.size()) ctx.fail("leaf_targetids and leaf_weights must have one entry per leaf");
    if (n_targets_ < 1) ctx.fail("n_targets must be positive");
    // Set membership: node i (mode 6) owns the next NaN-terminated run of membership_values.
    std::vector<double> members;
    if (auto m = ctx.optional_attr<Tensor>("membership_values")) members = tensor_to_doubles(*m);
    size_t pos = 0;
    members_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      if (modes_[i] < 0 || modes_[i] > 6) ctx.fail(fmt::format("node {} has an unknown mode {}", i, modes_[i]));
      if (modes_[i] != 6) continue;
      if (pos >= members.size()) ctx.fail("membership_values has too few sets for the MEMBER nodes");
      while (pos < members.size() && !std::isnan(members[pos])) members_[i].insert(members[pos++]);
      ++pos;
    }
    for (size_t i = 0; i < n; ++i) {
      check_ref(ctx, true_id_[i], true_leaf_[i] != 0);
      check_ref(ctx, false_id_[i], false_leaf_[i] != 0);
      if (feature_[i] < 0) ctx.fail("nodes_featureids must not be negative");
    }
    for (int64_t r : roots_) check_ref(ctx, r, false);
  }

  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const Rows r = read_rows<Types>(x);
    const double largest = visit<Types>(x.dtype(), [&]<class T>() {
      if constexpr (std::is_same_v<T, float16>) return 65504.0;  // the largest finite float16
      else return double(std::numeric_limits<T>::max());
    });
    std::vector<double> y;
    for (int64_t n = 0; n < r.n; ++n) {
      Accumulator acc(aggregate_, n_targets_, largest);
      for (int64_t root : roots_) {
        const int64_t leaf = find_leaf(root, r.row(n), r.c);
        acc.add(leaf_targets_[leaf], aggregate_ == Aggregate::Average ? leaf_weights_[leaf] / double(roots_.size())
                                                                       : leaf_weights_[leaf]);
      }
      apply_post_transform(acc.v.data(), n_targets_, post_);
      y.insert(y.end(), acc.v.begin(), acc.v.end());
    }
    Tensor out(x.dtype(), {r.n, n_targets_});
    visit<Types>(x.dtype(), [&]<class T>() {
      for (size_t i = 0; i < y.size(); ++i) out.data<T>()[i] = from_compute<T>(compute_t<T>(y[i]));
    });
    return {out};
  }

 private:
  void check_ref(const NodeContext& ctx, int64_t id, bool leaf) const {
    const size_t limit = leaf ? leaf_weights_.size() : feature_.size();
    if (id < 0 || size_t(id) >= limit) ctx.fail(fmt::format("{} id {} is out of range", leaf ? "leaf" : "node", id));
  }

  // Follows a tree from node `i` to a leaf; returns the leaf index. A degenerate tree whose root's
  // two successors are the same leaf is that leaf.
  int64_t find_leaf(int64_t i, const double* x, int64_t c) const {
    for (size_t steps = 0; steps <= feature_.size(); ++steps) {
      if (feature_[i] >= c) fail_runtime(fmt::format("feature {} is out of range for {} features", feature_[i], c));
      const double v = x[feature_[i]];
      bool go_true;
      if (std::isnan(v) && !missing_true_.empty() && missing_true_[i]) go_true = true;
      else switch (int(modes_[i])) {
        case 0: go_true = v <= splits_[i]; break;
        case 1: go_true = v < splits_[i]; break;
        case 2: go_true = v >= splits_[i]; break;
        case 3: go_true = v > splits_[i]; break;
        case 4: go_true = v == splits_[i]; break;
        case 5: go_true = v != splits_[i]; break;
        default: go_true = members_[i].count(v) > 0; break;
      }
      if (go_true ? true_leaf_[i] : false_leaf_[i]) return go_true ? true_id_[i] : false_id_[i];
      i = go_true ? true_id_[i] : false_id_[i];
    }
    fail_runtime("the tree has a cycle");
  }

  Aggregate aggregate_;
  PostTransform post_ = PostTransform::None;
  std::vector<int64_t> leaf_targets_;
  std::vector<double> leaf_weights_;
  int64_t n_targets_;
  std::vector<int64_t> false_leaf_, false_id_, feature_;
  std::vector<double> modes_, splits_;
  std::vector<int64_t> true_leaf_, true_id_, roots_, missing_true_;
  std::vector<std::set<double>> members_;
};

}  // namespace

void register_tree_ensemble(Registry& reg) { reg.add(kMl, "TreeEnsemble", {5}, make<TreeEnsemble>); }

}  // namespace refeval::ops
