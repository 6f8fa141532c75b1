// TfIdfVectorizer: counts the n-grams of a pool (pool_strings or pool_int64s) in each row of a
// [C] or [N, C] input. For every start position, skip distance k in [0, max_skip_count] and
// length n in [min_gram_length, max_gram_length], the tokens at start, start + (k + 1), ... form
// an n-gram (unigrams are counted once per position, whatever the skip). ngram_counts[n - 1] is
// where the n-grams of length n start in the pool; ngram_indexes maps the pool's i-th n-gram to
// an output column. Output (float) [max(ngram_indexes) + 1] or [N, ...]:
//   TF: count;  IDF: weight if count > 0;  TFIDF: count * weight  (weights default to 1).
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class TfIdfVectorizer : public OpRun {
 public:
  using Types = TypeList<std::string, int32_t, int64_t>;
  explicit TfIdfVectorizer(const NodeContext& ctx)
      : max_gram_(ctx.required<int64_t>("max_gram_length")),
        min_gram_(ctx.required<int64_t>("min_gram_length")),
        max_skip_(ctx.required<int64_t>("max_skip_count")),
        counts_(ctx.required<std::vector<int64_t>>("ngram_counts")),
        indexes_(ctx.required<std::vector<int64_t>>("ngram_indexes")),
        weights_(ctx.attr<std::vector<float>>("weights", {})) {
    const std::string mode = ctx.required<std::string>("mode");
    if (mode == "TF") mode_ = Mode::TF;
    else if (mode == "IDF") mode_ = Mode::IDF;
    else if (mode == "TFIDF") mode_ = Mode::TFIDF;
    else ctx.fail("mode must be TF, IDF or TFIDF, got '" + mode + "'");
    if (min_gram_ < 1 || max_gram_ < min_gram_) ctx.fail("need 1 <= min_gram_length <= max_gram_length");
    if (max_skip_ < 0) ctx.fail("max_skip_count must not be negative");
    auto strings = ctx.optional_attr<std::vector<std::string>>("pool_strings");
    auto ints = ctx.optional_attr<std::vector<int64_t>>("pool_int64s");
    if (bool(strings) == bool(ints)) ctx.fail("exactly one of pool_strings and pool_int64s is required");
    strings_ = bool(strings);
    std::vector<std::string> pool;
    if (strings) pool = *strings;
    else for (int64_t v : *ints) pool.push_back(std::to_string(v));
    if (!weights_.empty() && weights_.size() != indexes_.size()) ctx.fail("weights must have one entry per n-gram");
    // Walk the pool: entries from counts_[n-1] to counts_[n] (or the end) are n-grams of length n.
    size_t ngram = 0;
    for (size_t n = 1; n <= counts_.size(); ++n) {
      const int64_t begin = counts_[n - 1];
      const int64_t end = n < counts_.size() ? counts_[n] : int64_t(pool.size());
      if (begin < 0 || end < begin || end > int64_t(pool.size()) || (end - begin) % int64_t(n) != 0)
        ctx.fail(fmt::format("ngram_counts does not split the pool into n-grams of length {}", n));
      for (int64_t p = begin; p < end; p += int64_t(n), ++ngram) {
        if (ngram >= indexes_.size()) ctx.fail("ngram_indexes has fewer entries than the pool has n-grams");
        if (indexes_[ngram] < 0) ctx.fail("ngram_indexes must not be negative");
        pool_[std::vector<std::string>(pool.begin() + p, pool.begin() + p + int64_t(n))] = indexes_[ngram];
        weight_of_[indexes_[ngram]] = weights_.empty() ? 1.0f : weights_[ngram];
      }
    }
    for (int64_t i : indexes_) width_ = std::max(width_, i + 1);
  }

  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    if (x.rank() != 1 && x.rank() != 2) fail_runtime("input must be [C] or [N, C], got " + shape_to_string(x.shape()));
    if ((x.dtype() == DType::String) != strings_) fail_runtime("input type does not match the pool's");
    const int64_t rows = x.rank() == 2 ? x.dim(0) : 1;
    const int64_t cols = x.rank() == 2 ? x.dim(1) : x.size();
    std::vector<std::string> tokens(size_t(x.size()));
    visit<Types>(x.dtype(), [&]<class T>() {
      for (int64_t i = 0; i < x.size(); ++i) {
        if constexpr (std::is_same_v<T, std::string>) tokens[i] = x.data<T>()[i];
        else tokens[i] = std::to_string(int64_t(x.data<T>()[i]));
      }
    });
    Shape shape{width_};
    if (x.rank() == 2) shape.insert(shape.begin(), rows);
    Tensor y(DType::Float, shape);
    float* out = y.data<float>();
    std::vector<std::string> gram;
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<int64_t> count(size_t(width_), 0);
      const std::string* row = tokens.data() + r * cols;
      for (int64_t s = 0; s < cols; ++s)
        for (int64_t n = min_gram_; n <= max_gram_; ++n)
          for (int64_t k = 0; k <= (n == 1 ? 0 : max_skip_); ++k) {
            if (s + (n - 1) * (k + 1) >= cols) break;
            gram.clear();
            for (int64_t t = 0; t < n; ++t) gram.push_back(row[s + t * (k + 1)]);
            auto it = pool_.find(gram);
            if (it != pool_.end()) ++count[it->second];
          }
      for (int64_t c = 0; c < width_; ++c) {
        const float w = weight_of_.count(c) ? weight_of_[c] : 1.0f;
        out[r * width_ + c] = mode_ == Mode::TF ? float(count[c]) : mode_ == Mode::IDF ? (count[c] > 0 ? w : 0.0f)
                                                                                      : float(count[c]) * w;
      }
    }
    return {y};
  }

 private:
  enum class Mode { TF, IDF, TFIDF };
  Mode mode_ = Mode::TF;
  int64_t max_gram_, min_gram_, max_skip_;
  std::vector<int64_t> counts_, indexes_;
  std::vector<float> weights_;
  bool strings_ = true;
  std::map<std::vector<std::string>, int64_t> pool_;
  std::map<int64_t, float> weight_of_;
  int64_t width_ = 0;
};

}  // namespace

void register_tfidf_vectorizer(Registry& reg) { reg.add("", "TfIdfVectorizer", {9}, make<TfIdfVectorizer>); }

}  // namespace refeval::ops
