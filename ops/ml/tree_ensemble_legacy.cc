// TreeEnsembleClassifier and TreeEnsembleRegressor (ai.onnx.ml 1 and 3; 3 adds the *_as_tensor
// forms of the float attributes). Nodes are (nodes_treeids, nodes_nodeids) pairs; a tree's root
// is its first node. A node compares feature nodes_featureids[i] with nodes_values[i] by
// nodes_modes[i] (BRANCH_LEQ, BRANCH_LT, BRANCH_GTE, BRANCH_GT, BRANCH_EQ, BRANCH_NEQ, LEAF);
// a NaN feature goes the true way iff nodes_missing_value_tracks_true[i]. Each leaf reached adds
// its weights (class_* or target_* entries with that tree and node id) to its class or target.
//   Regressor: aggregate_function SUM, AVERAGE (sum / trees), MIN, MAX; then base_values are
//   added and the post transform applied. Output [N, n_targets] float.
//   Classifier: scores start at base_values; when every class_id is the same (binary), the
//   score s of class 1 gives [1 - s, s] (NONE, PROBIT) or [-s, s]; then the post transform;
//   label = argmax. Outputs: labels [N], scores [N, classes] float.
#include <algorithm>
#include <map>
#include <set>

#include "tree_common.h"

namespace refeval::ops {
namespace {

struct Forest {
  std::vector<int64_t> tree_ids, node_ids, features, true_ids, false_ids, missing_true;
  std::vector<std::string> modes;
  std::vector<double> values;
  std::map<std::pair<int64_t, int64_t>, int64_t> index;  // (tree, node) -> position
  std::vector<int64_t> roots;                             // position of each tree's root, by tree id

  void read(const NodeContext& ctx, bool tensor_form) {
    tree_ids = ctx.attr<std::vector<int64_t>>("nodes_treeids", {});
    node_ids = ctx.attr<std::vector<int64_t>>("nodes_nodeids", {});
    features = ctx.attr<std::vector<int64_t>>("nodes_featureids", {});
    true_ids = ctx.attr<std::vector<int64_t>>("nodes_truenodeids", {});
    false_ids = ctx.attr<std::vector<int64_t>>("nodes_falsenodeids", {});
    missing_true = ctx.attr<std::vector<int64_t>>("nodes_missing_value_tracks_true", {});
    modes = ctx.attr<std::vector<std::string>>("nodes_modes", {});
    values = floats_or_tensor(ctx, "nodes_values", tensor_form);
    floats_or_tensor(ctx, "nodes_hitrates", tensor_form);  // hit rates do not change results
    const size_t n = tree_ids.size();
    if (node_ids.size() != n || features.size() != n || modes.size() != n || values.size() != n ||
        (!missing_true.empty() && missing_true.size() != n))
      ctx.fail("the nodes_* attributes must have one entry per node");
    std::map<int64_t, int64_t> first;
    for (size_t i = 0; i < n; ++i) {
      const std::string& m = modes[i];
      if (m != "LEAF" && m != "BRANCH_LEQ" && m != "BRANCH_LT" && m != "BRANCH_GTE" && m != "BRANCH_GT" &&
          m != "BRANCH_EQ" && m != "BRANCH_NEQ")
        ctx.fail("unknown node mode '" + m + "'");
      if (m != "LEAF" && (true_ids.size() != n || false_ids.size() != n)) ctx.fail("branch nodes need true and false ids");
      index.emplace(std::make_pair(tree_ids[i], node_ids[i]), int64_t(i));
      first.emplace(tree_ids[i], int64_t(i));
    }
    for (auto& [tree, pos] : first) roots.push_back(pos);
    for (size_t i = 0; i < n; ++i)
      if (modes[i] != "LEAF")
        for (int64_t id : {true_ids[i], false_ids[i]})
          if (!index.count({tree_ids[i], id})) ctx.fail(fmt::format("tree {} has no node {}", tree_ids[i], id));
  }

  // The (tree, node) key of the leaf a row reaches from root position p.
  std::pair<int64_t, int64_t> leaf(int64_t p, const double* x, int64_t c) const {
    for (size_t steps = 0; steps <= modes.size(); ++steps) {
      const std::string& m = modes[p];
      if (m == "LEAF") return {tree_ids[p], node_ids[p]};
      if (features[p] < 0 || features[p] >= c) fail_runtime(fmt::format("feature {} is out of range", features[p]));
      const double v = x[features[p]], t = values[p];
      bool r;
      if (std::isnan(v)) r = !missing_true.empty() && missing_true[p] >= 1;
      else if (m == "BRANCH_LEQ") r = v <= t;
      else if (m == "BRANCH_LT") r = v < t;
      else if (m == "BRANCH_GTE") r = v >= t;
      else if (m == "BRANCH_GT") r = v > t;
      else if (m == "BRANCH_EQ") r = v == t;
      else r = v != t;
      p = index.at({tree_ids[p], r ? true_ids[p] : false_ids[p]});
    }
    fail_runtime("a tree has a cycle");
  }
};

// Leaf contributions: (tree, node) -> list of (output column, weight).
using Contributions = std::map<std::pair<int64_t, int64_t>, std::vector<std::pair<int64_t, double>>>;

Contributions read_contributions(const NodeContext& ctx, const std::string& prefix, const std::string& weights_name,
                                 bool tensor_form) {
  const auto trees = ctx.attr<std::vector<int64_t>>(prefix + "_treeids", {});
  const auto nodes = ctx.attr<std::vector<int64_t>>(prefix + "_nodeids", {});
  const auto ids = ctx.attr<std::vector<int64_t>>(prefix + "_ids", {});
  const auto w = floats_or_tensor(ctx, weights_name, tensor_form);
  if (nodes.size() != trees.size() || ids.size() != trees.size() || w.size() != trees.size())
    ctx.fail("the " + prefix + "_* attributes must have one entry per leaf weight");
  Contributions c;
  for (size_t i = 0; i < trees.size(); ++i) c[{trees[i], nodes[i]}].push_back({ids[i], w[i]});
  return c;
}

class TreeEnsembleRegressor : public OpRun {
 public:
  using Types = MlNumeric;
  explicit TreeEnsembleRegressor(const NodeContext& ctx) : post_(post_transform_attr(ctx)) {
    const bool tf = ctx.since_version() >= 3;
    forest_.read(ctx, tf);
    leaves_ = read_contributions(ctx, "target", "target_weights", tf);
    base_ = floats_or_tensor(ctx, "base_values", tf);
    n_targets_ = ctx.attr<int64_t>("n_targets", 1);
    const std::string agg = ctx.attr<std::string>("aggregate_function", "SUM");
    if (agg == "SUM") aggregate_ = Aggregate::Sum;
    else if (agg == "AVERAGE") aggregate_ = Aggregate::Average;
    else if (agg == "MIN") aggregate_ = Aggregate::Min;
    else if (agg == "MAX") aggregate_ = Aggregate::Max;
    else ctx.fail("aggregate_function must be SUM, AVERAGE, MIN or MAX, got '" + agg + "'");
    if (n_targets_ < 1) ctx.fail("n_targets must be positive");
    if (!base_.empty() && int64_t(base_.size()) != n_targets_) ctx.fail("base_values needs one value per target");
  }
  Values run(const Values& in, RunContext&) override {
    const Rows r = read_rows<Types>(input_tensor(in, 0));
    std::vector<double> y;
    for (int64_t n = 0; n < r.n; ++n) {
      Accumulator acc(aggregate_, n_targets_);
      for (int64_t root : forest_.roots) {
        auto it = leaves_.find(forest_.leaf(root, r.row(n), r.c));
        if (it != leaves_.end())
          for (auto [target, w] : it->second) acc.add(target, w);
      }
      for (int64_t t = 0; t < n_targets_; ++t) {
        if (aggregate_ == Aggregate::Average) acc.v[t] /= double(forest_.roots.size());
        if (!base_.empty()) acc.v[t] += base_[t];
      }
      apply_post_transform(acc.v.data(), n_targets_, post_);
      y.insert(y.end(), acc.v.begin(), acc.v.end());
    }
    return {float_tensor({r.n, n_targets_}, y)};
  }

 private:
  Forest forest_;
  Contributions leaves_;
  std::vector<double> base_;
  int64_t n_targets_ = 1;
  Aggregate aggregate_ = Aggregate::Sum;
  PostTransform post_;
};

class TreeEnsembleClassifier : public OpRun {
 public:
  using Types = MlNumeric;
  explicit TreeEnsembleClassifier(const NodeContext& ctx) : post_(post_transform_attr(ctx)) {
    const bool tf = ctx.since_version() >= 3;
    forest_.read(ctx, tf);
    leaves_ = read_contributions(ctx, "class", "class_weights", tf);
    base_ = floats_or_tensor(ctx, "base_values", tf);
    labels_.read(ctx, "classlabels_int64s", "classlabels_strings");
    classes_ = int64_t(labels_.size());
    if (classes_ == 0) ctx.fail("classlabels_int64s or classlabels_strings is required");
    std::set<int64_t> ids;
    for (auto& [key, list] : leaves_)
      for (auto [id, w] : list) ids.insert(id);
    binary_ = ids.size() == 1;
    if (!base_.empty() && int64_t(base_.size()) != classes_) ctx.fail("base_values needs one value per class");
  }
  Values run(const Values& in, RunContext&) override {
    const Rows r = read_rows<Types>(input_tensor(in, 0));
    const int64_t width = binary_ && classes_ == 1 ? 2 : classes_;
    std::vector<double> scores;
    std::vector<int64_t> index(size_t(r.n));
    for (int64_t n = 0; n < r.n; ++n) {
      Accumulator acc(Aggregate::Sum, classes_);
      if (!base_.empty()) acc.v.assign(base_.begin(), base_.end());
      for (int64_t root : forest_.roots) {
        auto it = leaves_.find(forest_.leaf(root, r.row(n), r.c));
        if (it != leaves_.end())
          for (auto [id, w] : it->second) acc.add(id, w);
      }
      std::vector<double> s = acc.v;
      if (binary_) {
        if (classes_ == 1) s = {0.0, s[0]};
        else s[1] = s[0];
        s[0] = (post_ == PostTransform::None || post_ == PostTransform::Probit) ? 1.0 - s[1] : -s[1];
      }
      apply_post_transform(s.data(), width, post_);
      index[n] = int64_t(std::max_element(s.begin(), s.end()) - s.begin());
      scores.insert(scores.end(), s.begin(), s.end());
    }
    Tensor labels;
    if (classes_ == 1) {  // a single class label: argmax 1 is that label, 0 is 0
      if (labels_.use_strings) fail_runtime("a single string class label is not supported");
      labels = Tensor(DType::Int64, {r.n});
      for (int64_t n = 0; n < r.n; ++n) labels.data<int64_t>()[n] = index[n] == 1 ? labels_.ints[0] : 0;
    } else {
      labels = labels_.labels(index);
    }
    return {labels, float_tensor({r.n, width}, scores)};
  }

 private:
  Forest forest_;
  Contributions leaves_;
  std::vector<double> base_;
  ClassLabels labels_;
  int64_t classes_ = 0;
  bool binary_ = false;
  PostTransform post_;
};

}  // namespace

void register_tree_ensemble_legacy(Registry& reg) {
  reg.add(kMl, "TreeEnsembleClassifier", {1, 3}, make<TreeEnsembleClassifier>);
  reg.add(kMl, "TreeEnsembleRegressor", {1, 3}, make<TreeEnsembleRegressor>);
}

}  // namespace refeval::ops
