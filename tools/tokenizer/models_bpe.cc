// The BPE model as Hugging Face's tokenizers runs it: a pre-token's characters (each in the
// vocabulary, else its <0xNN> byte tokens with byte_fallback, else the unknown token, runs of
// which fuse with fuse_unk), then the merge of lowest rank applied first, the leftmost of equal
// rank, until none applies. A merge "a b" makes the token a+b, which must be in the vocabulary.
#include <queue>
#include <unordered_map>

#include <fmt/format.h>

#include "components.h"
#include "unicode.h"
#include "vocab.h"

namespace refeval::tokenizer {
namespace {

struct MergeTarget {
  uint32_t rank;
  int64_t id;
};

uint64_t pair_key(int64_t a, int64_t b) { return (uint64_t(a) << 32) | uint64_t(b); }

class Bpe : public Model {
 public:
  Bpe(const json& j, const std::string& at);
  void tokenize(const std::string& word, std::vector<int64_t>& ids) const override;
  const std::string* id_to_token(int64_t id) const override { return vocab_.token(id); }
  std::optional<int64_t> token_to_id(const std::string& token) const override { return vocab_.find(token); }
  int64_t id_end() const override { return vocab_.id_end(); }

 private:
  std::vector<int64_t> merge_word(const std::string& word) const;
  std::optional<int64_t> required_id(const std::string& token, const std::string& at, const char* what) const;

  Vocab vocab_;
  std::unordered_map<uint64_t, MergeTarget> merges_;
  std::optional<int64_t> unk_;
  std::string prefix_, suffix_;  // continuing_subword_prefix, end_of_word_suffix
  bool fuse_unk_ = false, byte_fallback_ = false, ignore_merges_ = false;
  std::vector<int64_t> byte_ids_;  // <0xNN> -> id, -1 when absent
  mutable std::unordered_map<std::string, std::vector<int64_t>> cache_;
};

std::optional<int64_t> Bpe::required_id(const std::string& token, const std::string& at, const char* what) const {
  const auto id = vocab_.find(token);
  if (!id) fail_at(at, fmt::format("{} '{}' is not in the vocabulary", what, token));
  return id;
}

Bpe::Bpe(const json& j, const std::string& at) : vocab_(Vocab::from_json(container_field(j, "vocab", at, true), at)) {
  if (j.contains("dropout") && !j["dropout"].is_null() && (!j["dropout"].is_number() || j["dropout"].get<double>() != 0.0))
    fail_at(at, fmt::format("dropout {} is not supported (random merges are for training)", j["dropout"].dump()));
  const std::string unk = string_field(j, "unk_token", at, std::string());
  if (!unk.empty()) unk_ = required_id(unk, at, "unk_token");
  prefix_ = string_field(j, "continuing_subword_prefix", at, std::string());
  suffix_ = string_field(j, "end_of_word_suffix", at, std::string());
  fuse_unk_ = bool_field(j, "fuse_unk", at, false);
  byte_fallback_ = bool_field(j, "byte_fallback", at, false);
  ignore_merges_ = bool_field(j, "ignore_merges", at, false);
  byte_ids_.assign(256, -1);
  for (int b = 0; b < 256; ++b)
    if (const auto id = vocab_.find(fmt::format("<0x{:02X}>", b))) byte_ids_[size_t(b)] = *id;

  const json& merges = container_field(j, "merges", at);
  merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const json& m = merges[rank];
    std::string a, b;
    if (m.is_string()) {  // "a b"
      const std::string s = m.get<std::string>();
      const size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
        fail_at(at, fmt::format("merge {} (rank {}) is not two tokens separated by one space", m.dump(), rank));
      a = s.substr(0, space), b = s.substr(space + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {  // ["a", "b"]
      a = m[0].get<std::string>(), b = m[1].get<std::string>();
    } else {
      fail_at(at, fmt::format("merge {} (rank {}) is neither \"a b\" nor [\"a\", \"b\"]", m.dump(), rank));
    }
    const auto ia = vocab_.find(a), ib = vocab_.find(b);
    const std::string merged = a + (!prefix_.empty() && b.starts_with(prefix_) ? b.substr(prefix_.size()) : b);
    const auto im = vocab_.find(merged);
    if (!ia || !ib || !im)
      fail_at(at, fmt::format("merge \"{} {}\" (rank {}): '{}' is not in the vocabulary", a, b, rank, !ia ? a : !ib ? b : merged));
    merges_[pair_key(*ia, *ib)] = {uint32_t(rank), *im};  // a repeated pair keeps its last rank, as in Hugging Face's
  }
}

std::vector<int64_t> Bpe::merge_word(const std::string& w) const {
  struct Symbol {
    int64_t id;
    long prev, next;
    bool alive;
  };
  std::vector<Symbol> symbols;
  int64_t pending_unk = -1;  // an unknown token not added yet (fuse_unk extends it)
  const auto add = [&](int64_t id) {
    const long i = long(symbols.size());
    symbols.push_back({id, i - 1, i + 1, true});
  };
  for (size_t i = 0, n = 0; i < w.size(); i += n) {
    next_code_point(w, i, &n);
    std::string s = w.substr(i, n);
    if (i > 0) s = prefix_ + s;
    if (i + n >= w.size()) s += suffix_;
    if (const auto id = vocab_.find(s)) {
      if (pending_unk >= 0) add(pending_unk), pending_unk = -1;
      add(*id);
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (const unsigned char c : s) all = all && byte_ids_[c] >= 0;
      if (all) {
        for (const unsigned char c : s) add(byte_ids_[c]);  // (a pending unknown stays pending, as in Hugging Face's)
        continue;
      }
    }
    if (unk_) {
      if (pending_unk >= 0 && !fuse_unk_) add(pending_unk);
      pending_unk = *unk_;
    }
  }
  if (pending_unk >= 0) add(pending_unk);
  if (symbols.empty()) return {};
  symbols.back().next = -1;

  struct Candidate {
    uint32_t rank;
    long pos;
    int64_t id;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  const auto offer = [&](long pos) {
    const long next = symbols[size_t(pos)].next;
    if (next < 0) return;
    const auto it = merges_.find(pair_key(symbols[size_t(pos)].id, symbols[size_t(next)].id));
    if (it != merges_.end()) queue.push({it->second.rank, pos, it->second.id});
  };
  for (long i = 0; i + 1 < long(symbols.size()); ++i) offer(i);
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[size_t(top.pos)];
    if (!left.alive || left.next < 0) continue;
    Symbol& right = symbols[size_t(left.next)];
    const auto it = merges_.find(pair_key(left.id, right.id));
    if (it == merges_.end() || it->second.id != top.id) continue;  // a stale entry
    left.id = top.id;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) symbols[size_t(right.next)].prev = top.pos;
    if (left.prev >= 0) offer(left.prev);
    offer(top.pos);
  }
  std::vector<int64_t> out;
  for (const Symbol& s : symbols)
    if (s.alive) out.push_back(s.id);
  return out;
}

void Bpe::tokenize(const std::string& word, std::vector<int64_t>& ids) const {
  if (word.empty()) return;
  if (ignore_merges_)
    if (const auto id = vocab_.find(word)) {
      ids.push_back(*id);
      return;
    }
  auto it = cache_.find(word);
  if (it == cache_.end()) {
    if (cache_.size() >= 100000) cache_.clear();
    it = cache_.emplace(word, merge_word(word)).first;
  }
  ids.insert(ids.end(), it->second.begin(), it->second.end());
}

}  // namespace

std::unique_ptr<Model> make_bpe(const json& j, const std::string& where) { return std::make_unique<Bpe>(j, where); }

}  // namespace refeval::tokenizer
