// StringSplit: splits each string like Python's str.split(delimiter, maxsplit): with no (or an
// empty) delimiter, on runs of whitespace ignoring leading and trailing whitespace; otherwise on
// every occurrence of the delimiter. Y has shape X.shape + [max count], padded with "";
// Z (int64, X.shape) holds each string's count.
#include <algorithm>

#include "refeval/registry.h"

namespace refeval::ops {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

class StringSplit : public OpRun {
 public:
  using Types = TypeList<std::string>;
  explicit StringSplit(const NodeContext& ctx)
      : delimiter_(ctx.attr<std::string>("delimiter", "")), maxsplit_(ctx.optional_attr<int64_t>("maxsplit")) {}

  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    std::vector<std::vector<std::string>> parts(size_t(x.size()));
    size_t width = 0;
    for (int64_t i = 0; i < x.size(); ++i) {
      parts[i] = split(x.data<std::string>()[i]);
      width = std::max(width, parts[i].size());
    }
    Shape shape = x.shape();
    shape.push_back(int64_t(width));
    Tensor y(DType::String, shape), z(DType::Int64, x.shape());
    for (int64_t i = 0; i < x.size(); ++i) {
      z.data<int64_t>()[i] = int64_t(parts[i].size());
      for (size_t k = 0; k < parts[i].size(); ++k) y.data<std::string>()[i * width + k] = parts[i][k];
    }
    return {y, z};
  }

 private:
  bool may_split(size_t done) const { return !maxsplit_ || *maxsplit_ < 0 || int64_t(done) < *maxsplit_; }

  std::vector<std::string> split(const std::string& s) const {
    std::vector<std::string> out;
    if (delimiter_.empty()) {
      size_t i = 0;
      while (true) {
        while (i < s.size() && is_space(s[i])) ++i;
        if (i == s.size()) break;
        if (!may_split(out.size())) {  // the rest, without trailing whitespace
          size_t end = s.size();
          while (end > i && is_space(s[end - 1])) --end;
          out.push_back(s.substr(i, end - i));
          break;
        }
        size_t j = i;
        while (j < s.size() && !is_space(s[j])) ++j;
        out.push_back(s.substr(i, j - i));
        i = j;
      }
      return out;
    }
    size_t start = 0;
    while (may_split(out.size())) {
      const size_t pos = s.find(delimiter_, start);
      if (pos == std::string::npos) break;
      out.push_back(s.substr(start, pos - start));
      start = pos + delimiter_.size();
    }
    out.push_back(s.substr(start));
    return out;
  }

  std::string delimiter_;
  std::optional<int64_t> maxsplit_;
};

}  // namespace

void register_string_split(Registry& reg) { reg.add("", "StringSplit", {20}, make<StringSplit>); }

}  // namespace refeval::ops
