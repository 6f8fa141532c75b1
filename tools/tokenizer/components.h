// The five steps of a Hugging Face tokenizer, as tokenizer.json declares them: normalizer,
// pre-tokenizer, model, post-processor, decoder. Each step is read from its JSON object by one
// make_* function; an unknown "type", a missing or mistyped field is an error naming where it sits
// in the file ("t.json: pre_tokenizer.pretokenizers[1] (Split): ...").
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pieces.h"
#include "regex.h"

namespace refeval::tokenizer {

using json = nlohmann::json;

// ErrorKind::Usage, "WHERE: WHAT".
[[noreturn]] void fail_at(const std::string& where, const std::string& what);
// j["type"] as a string.
std::string type_of(const json& j, const std::string& where);
// Typed fields: a missing (or null) field gives the default; a required one (no default) or a
// field of another JSON type is an error.
std::string string_field(const json& j, const char* key, const std::string& where, const std::optional<std::string>& dflt = std::nullopt);
bool bool_field(const json& j, const char* key, const std::string& where, bool dflt);
int64_t int_field(const json& j, const char* key, const std::string& where, const std::optional<int64_t>& dflt = std::nullopt);
// j[key], which must be an array (or an object when `object` is set).
const json& container_field(const json& j, const char* key, const std::string& where, bool object = false);
// Sequences nested deeper than this are refused, as Hugging Face's tokenizers refuse them
// ("recursion limit exceeded", serde_json's 128 levels of JSON): each level is a C++ call and a
// longer path in the messages, so a file nested 10,000 deep would exhaust the stack.
inline constexpr int kMaxSequenceDepth = 64;

// A "Sequence" step's list j[key], each made by make(item, "WHERE.KEY[i]"); null steps are left out.
template <class Step, class Make>
std::vector<std::unique_ptr<Step>> sequence_steps(const json& j, const char* key, const std::string& where,
                                                  const std::string& at, Make make) {
  thread_local int depth = 0;
  if (depth >= kMaxSequenceDepth) fail_at(where, "Sequence steps nested more than " + std::to_string(kMaxSequenceDepth) + " deep");
  struct Level {
    Level() { ++depth; }
    ~Level() { --depth; }
  } level;
  const json& list = container_field(j, key, at);
  std::vector<std::unique_ptr<Step>> steps;
  for (size_t i = 0; i < list.size(); ++i)
    if (auto step = make(list[i], where + "." + key + "[" + std::to_string(i) + "]")) steps.push_back(std::move(step));
  return steps;
}

// A Replace/Split "pattern": {"String": "..."} (literal; an empty one is the empty regex, as the
// libraries compile it) or {"Regex": "..."} (Oniguruma).
class Pattern {
 public:
  static Pattern from_json(const json& j, const std::string& where);
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view s) const;

 private:
  std::string literal_;
  std::optional<Regex> regex_;
};

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual std::string normalize(std::string s) const = 0;
};

// Splits the pieces that are not added tokens and rewrites their text.
class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  virtual void pre_tokenize(std::vector<Piece>& pieces) const = 0;
};

class Model {
 public:
  virtual ~Model() = default;
  // The ids of one pre-token, appended to `ids`.
  virtual void tokenize(const std::string& word, std::vector<int64_t>& ids) const = 0;
  virtual const std::string* id_to_token(int64_t id) const = 0;
  virtual std::optional<int64_t> token_to_id(const std::string& token) const = 0;
  virtual int64_t id_end() const = 0;  // the largest id + 1
};

// Rewrites the list of token strings; the decoded text is the list joined.
class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
};

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // One sequence's ids with the special tokens it adds when add_special_tokens is set.
  virtual std::vector<int64_t> process(std::vector<int64_t> ids, bool add_special_tokens) const = 0;
};

// Each returns nullptr for a JSON null.
std::unique_ptr<Normalizer> make_normalizer(const json& j, const std::string& where);
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const json& j, const std::string& where);
std::unique_ptr<Model> make_model(const json& j, const std::string& where);
std::unique_ptr<Model> make_bpe(const json& j, const std::string& where);
std::unique_ptr<Model> make_wordpiece(const json& j, const std::string& where);
std::unique_ptr<Model> make_wordlevel(const json& j, const std::string& where);
std::unique_ptr<Decoder> make_decoder(const json& j, const std::string& where);
std::unique_ptr<PostProcessor> make_post_processor(const json& j, const std::string& where);

// GPT-2's reversible map of the 256 byte values to printable code points (byte-level BPE).
const std::string& byte_to_unicode(uint8_t byte);
// The byte a code point stands for, or -1.
int byte_of_unicode(int32_t cp);

}  // namespace refeval::tokenizer
