// TensorScatter-24: axis (default -2, never 0), per-batch write_indices (default 0), linear and
// circular modes, any element type, and errors (out-of-range linear writes among them).
// Expected values come from an oracle written here from the specification's pseudocode.
#include "refeval/compute_vector.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {

// The specification's loop: for every prefix (batch, ...) before the axis and every update
// position s, present[prefix, w[batch] + s (mod max if circular), ...] = update[prefix, s, ...].
std::vector<double> oracle(const std::vector<double>& past, const Shape& ps, const std::vector<double>& upd, int64_t axis,
                           const std::vector<int64_t>& w, bool circular) {
  int64_t prefixes = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) prefixes *= ps[size_t(d)];
  for (size_t d = size_t(axis) + 1; d < ps.size(); ++d) inner *= ps[d];
  const int64_t max = ps[size_t(axis)], seq = int64_t(upd.size()) / (prefixes * inner), per_batch = prefixes / ps[0];
  std::vector<double> out = past;
  for (int64_t pre = 0; pre < prefixes; ++pre)
    for (int64_t s = 0; s < seq; ++s) {
      int64_t at = w[size_t(pre / per_batch)] + s;
      if (circular) at = ((at % max) + max) % max;
      for (int64_t i = 0; i < inner; ++i) out[size_t((pre * max + at) * inner + i)] = upd[size_t((pre * seq + s) * inner + i)];
    }
  return out;
}

std::vector<double> iota(int64_t n, double start) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(start + double(i));
  return v;
}

}  // namespace

TEST_CASE("TensorScatter against the oracle") {
  struct Case { const char* what; Shape past, upd; int64_t axis; std::vector<int64_t> w; bool circular; bool default_axis; };
  const Case cases[] = {
      {"default axis -2 of (B, H, max, D), linear", {2, 3, 5, 2}, {2, 3, 2, 2}, 2, {1, 3}, false, true},
      {"no write_indices: write at 0", {2, 2, 4, 3}, {2, 2, 3, 3}, 2, {}, false, true},
      {"axis 1 of (B, max, H, D)", {2, 6, 2, 2}, {2, 2, 2, 2}, 1, {4, 0}, false, false},
      {"last axis", {1, 2, 5}, {1, 2, 3}, 2, {2}, false, false},
      {"circular wraps past the end", {2, 2, 4, 1}, {2, 2, 3, 1}, 2, {2, 3}, true, true},
      {"circular with indices beyond the length and negative", {2, 1, 5, 2}, {2, 1, 2, 2}, 2, {7, -1}, true, true},
      {"circular writing the whole cache", {1, 3, 2}, {1, 3, 2}, 1, {2}, true, false},
      {"linear write ending exactly at the end", {2, 1, 4, 1}, {2, 1, 2, 1}, 2, {2, 2}, false, true},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    const std::vector<double> past = iota(shape_size(c.past), 0), upd = iota(shape_size(c.upd), 100);
    std::vector<Attribute> attrs;
    if (!c.default_axis) attrs.push_back(attr("axis", c.axis));
    if (c.circular) attrs.push_back(attr("mode", "circular"));
    Values in = {from_doubles(DType::Float, c.past, past), from_doubles(DType::Float, c.upd, upd)};
    std::vector<std::string> names = {"p", "u"};
    if (!c.w.empty()) {
      names.push_back("w");
      in.push_back(tensor<int64_t>({c.past[0]}, c.w));
    }
    const std::vector<int64_t> w = c.w.empty() ? std::vector<int64_t>(size_t(c.past[0]), 0) : c.w;
    auto out = run_node(node("TensorScatter", names, {"y"}, attrs), in, 24);
    check_equal(out[0], from_doubles(DType::Float, c.past, oracle(past, c.past, upd, c.axis, w, c.circular)), {0, 0});
  }
}

TEST_CASE("TensorScatter: hand-checked writes and other element types") {
  const Tensor past = tensor<float>({1, 4, 1}, {0, 0, 0, 0});
  const Tensor upd = tensor<float>({1, 2, 1}, {7, 8});
  check_equal(run_node(node("TensorScatter", {"p", "u", "w"}, {"y"}), {past, upd, tensor<int64_t>({1}, {1})}, 24)[0],
              tensor<float>({1, 4, 1}, {0, 7, 8, 0}));
  check_equal(run_node(node("TensorScatter", {"p", "u", "w"}, {"y"}, {attr("mode", "circular")}), {past, upd, tensor<int64_t>({1}, {3})}, 24)[0],
              tensor<float>({1, 4, 1}, {8, 0, 0, 7}));
  check_equal(run_node(node("TensorScatter", {"p", "u"}, {"y"}), {past, upd}, 24)[0], tensor<float>({1, 4, 1}, {7, 8, 0, 0}));
  check_equal(run_node(node("TensorScatter", {"p", "u", "w"}, {"y"}), {tensor<int8_t>({2, 3, 1}, {1, 2, 3, 4, 5, 6}),
                                                                        tensor<int8_t>({2, 1, 1}, {-1, -2}), tensor<int64_t>({2}, {2, 0})}, 24)[0],
              tensor<int8_t>({2, 3, 1}, {1, 2, -1, -2, 5, 6}));
  check_equal(run_node(node("TensorScatter", {"p", "u"}, {"y"}), {tensor<bool>({1, 2, 1}, {false, false}), tensor<bool>({1, 1, 1}, {true})}, 24)[0],
              tensor<bool>({1, 2, 1}, {true, false}));
  check_equal(run_node(node("TensorScatter", {"p", "u"}, {"y"}), {tensor<std::string>({1, 2, 1}, {"a", "b"}), tensor<std::string>({1, 1, 1}, {"z"})}, 24)[0],
              tensor<std::string>({1, 2, 1}, {"z", "b"}));
  // An empty cache takes an empty update, in either mode.
  const Tensor empty = tensor<float>({2, 0, 1}, {});
  check_equal(run_node(node("TensorScatter", {"p", "u", "w"}, {"y"}, {attr("mode", "circular")}), {empty, empty, tensor<int64_t>({2}, {3, -1})}, 24)[0],
              empty);
}

TEST_CASE("TensorScatter errors") {
  const Tensor past = tensor<float>({1, 4, 1}, {0, 0, 0, 0});
  const Tensor upd = tensor<float>({1, 2, 1}, {7, 8});
  auto run = [](std::vector<Attribute> attrs, Values in) {
    std::vector<std::string> names = {"p", "u", "w"};
    names.resize(in.size());
    return run_node(node("TensorScatter", names, {"y"}, std::move(attrs)), in, 24);
  };
  CHECK_THROWS_WITH_AS(run({}, {past, upd, tensor<int64_t>({1}, {3})}), doctest::Contains("writing 2 entries at 3 goes beyond the cache length 4"), Error);
  CHECK_THROWS_WITH_AS(run({}, {past, upd, tensor<int64_t>({1}, {-1})}), doctest::Contains("writing 2 entries at -1 goes beyond the cache length 4"), Error);
  CHECK_THROWS_WITH_AS(run({attr("axis", int64_t(0))}, {past, upd}), doctest::Contains("axis cannot be the batch axis"), Error);
  CHECK_THROWS_WITH_AS(run({attr("axis", int64_t(-3))}, {past, upd}), doctest::Contains("axis cannot be the batch axis"), Error);
  CHECK_THROWS_WITH_AS(run({attr("axis", int64_t(3))}, {past, upd}), doctest::Contains("axis 3 is out of range"), Error);
  CHECK_THROWS_WITH_AS(run({attr("mode", "ring")}, {past, upd}), doctest::Contains("mode must be linear or circular, got ring"), Error);
  CHECK_THROWS_WITH_AS(run({}, {past, tensor<float>({1, 2, 2}, {1, 2, 3, 4})}), doctest::Contains("update shape (1, 2, 2) differs from past_cache shape (1, 4, 1)"), Error);
  CHECK_THROWS_WITH_AS(run({}, {past, tensor<float>({1, 5, 1}, {1, 2, 3, 4, 5})}), doctest::Contains("update length 5 exceeds the cache length 4"), Error);
  CHECK_THROWS_WITH_AS(run({}, {past, tensor<double>({1, 2, 1}, {1, 2})}), doctest::Contains("update must match past_cache's rank and type"), Error);
  CHECK_THROWS_WITH_AS(run({}, {past, upd, tensor<int64_t>({2}, {0, 0})}), doctest::Contains("write_indices must be int64 of shape (1)"), Error);
  CHECK_THROWS_WITH_AS(run({}, {past, upd, tensor<int32_t>({1}, {0})}), doctest::Contains("write_indices must be int64 of shape (1)"), Error);
  CHECK_THROWS_WITH_AS(run({}, {tensor<float>({4}, {0, 0, 0, 0}), tensor<float>({2}, {1, 2})}), doctest::Contains("past_cache must have rank >= 2"), Error);
}
