// WordPiece (BERT): each pre-token split greedily into the longest vocabulary entries from the
// left, every piece after the first written with the continuing prefix ("##"); a pre-token that
// cannot be split, or longer than max_input_chars_per_word characters, is the unknown token.
// WordLevel: a pre-token is one vocabulary entry or the unknown token.
#include <fmt/format.h>

#include "refeval/error.h"

#include "components.h"
#include "unicode.h"
#include "vocab.h"

namespace refeval::tokenizer {
namespace {

class VocabModel : public Model {
 public:
  VocabModel(const json& j, const std::string& at) : vocab_(Vocab::from_json(container_field(j, "vocab", at, true), at)) {
    const std::string unk = string_field(j, "unk_token", at, std::string("[UNK]"));
    unk_ = vocab_.find(unk);
    unk_name_ = unk;
  }
  const std::string* id_to_token(int64_t id) const override { return vocab_.token(id); }
  std::optional<int64_t> token_to_id(const std::string& token) const override { return vocab_.find(token); }
  int64_t id_end() const override { return vocab_.id_end(); }

 protected:
  int64_t unk(const std::string& word) const {
    if (!unk_) fail_input(fmt::format("'{}' is not in the vocabulary and the unknown token '{}' is not either", word, unk_name_));
    return *unk_;
  }
  Vocab vocab_;
  std::optional<int64_t> unk_;
  std::string unk_name_;
};

class WordPiece : public VocabModel {
 public:
  WordPiece(const json& j, const std::string& at)
      : VocabModel(j, at),
        prefix_(string_field(j, "continuing_subword_prefix", at, std::string("##"))),
        max_chars_(int_field(j, "max_input_chars_per_word", at, 100)) {}

  void tokenize(const std::string& word, std::vector<int64_t>& ids) const override {
    if (word.empty()) return;
    std::vector<size_t> starts;  // the byte offset of each character, and the end
    for (size_t i = 0, n = 0; i < word.size(); i += n) next_code_point(word, i, &n), starts.push_back(i);
    starts.push_back(word.size());
    const size_t chars = starts.size() - 1;
    if (int64_t(chars) > max_chars_) {
      ids.push_back(unk(word));
      return;
    }
    std::vector<int64_t> pieces;
    for (size_t start = 0; start < chars;) {
      std::optional<int64_t> found;
      size_t end = chars;
      for (; end > start; --end) {
        std::string sub = word.substr(starts[start], starts[end] - starts[start]);
        if (start > 0) sub = prefix_ + sub;
        if ((found = vocab_.find(sub))) break;
      }
      if (!found) {
        ids.push_back(unk(word));
        return;
      }
      pieces.push_back(*found);
      start = end;
    }
    ids.insert(ids.end(), pieces.begin(), pieces.end());
  }

 private:
  std::string prefix_;
  int64_t max_chars_;
};

class WordLevel : public VocabModel {
 public:
  using VocabModel::VocabModel;
  void tokenize(const std::string& word, std::vector<int64_t>& ids) const override {
    if (word.empty()) return;
    const auto id = vocab_.find(word);
    ids.push_back(id ? *id : unk(word));
  }
};

}  // namespace

std::unique_ptr<Model> make_wordpiece(const json& j, const std::string& where) { return std::make_unique<WordPiece>(j, where); }
std::unique_ptr<Model> make_wordlevel(const json& j, const std::string& where) { return std::make_unique<WordLevel>(j, where); }

}  // namespace refeval::tokenizer
