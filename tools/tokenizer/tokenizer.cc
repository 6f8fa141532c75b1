#include "tokenizer.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "refeval/error.h"
#include "unicode.h"

namespace refeval::tokenizer {

Tokenizer Tokenizer::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_usage(fmt::format("{}: cannot open the tokenizer file", path));
  std::ostringstream text;
  text << in.rdbuf();
  json j;
  try {
    j = json::parse(text.str());
  } catch (const json::exception& e) {
    fail_usage(fmt::format("{}: not a tokenizer.json: {}", path, e.what()));
  }
  return from_json(j, path);
}

Tokenizer Tokenizer::from_json(const json& j, const std::string& name) {
  if (!j.is_object()) fail_usage(fmt::format("{}: not a tokenizer.json: the top level is {}, not an object", name, j.type_name()));
  if (!j.contains("model")) fail_usage(fmt::format("{}: not a tokenizer.json: no \"model\"", name));
  const auto member = [&](const char* key) -> const json& {
    static const json null;
    const auto it = j.find(key);
    return it == j.end() ? null : *it;
  };
  Tokenizer t;
  t.name_ = name;
  t.normalizer_ = make_normalizer(member("normalizer"), name + ": normalizer");
  t.pre_tokenizer_ = make_pre_tokenizer(member("pre_tokenizer"), name + ": pre_tokenizer");
  t.model_ = make_model(member("model"), name + ": model");
  t.post_processor_ = make_post_processor(member("post_processor"), name + ": post_processor");
  t.decoder_ = make_decoder(member("decoder"), name + ": decoder");
  t.added_ = AddedVocabulary(member("added_tokens"), name + ": added_tokens", t.normalizer_.get());
  if (const json& trunc = member("truncation"); !trunc.is_null()) {
    const std::string at = name + ": truncation";
    if (!trunc.is_object()) fail_at(at, "must be an object or null");
    const std::string direction = string_field(trunc, "direction", at, std::string("Right"));
    if (direction != "Right" && direction != "Left") fail_at(at, fmt::format("direction '{}' is not Right or Left", direction));
    t.truncation_ = Truncation{int_field(trunc, "max_length", at), direction == "Left"};
    if (t.truncation_->max_length < 0) fail_at(at, "max_length must be >= 0");
  }
  if (!member("padding").is_null())
    spdlog::warn("{}: \"padding\" is not applied: refeval encodes one sequence, unpadded", name);
  return t;
}

std::vector<int64_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  if (const size_t bad = invalid_utf8_at(text); bad != std::string_view::npos)
    fail_input(fmt::format("the text is not valid UTF-8 (byte {} of {})", bad, text.size()));
  try {
    return encode_valid(text, add_special_tokens);
  } catch (const RegexMatchError& e) {  // a pattern of the file, not the text, is at fault: name the file
    fail_input(fmt::format("{}: {}", name_, e.what()));
  }
}

std::vector<int64_t> Tokenizer::encode_valid(std::string_view text, bool add_special_tokens) const {
  std::vector<Piece> pieces{{std::string(text), -1, true}};
  added_.split(pieces, false);
  for (Piece& p : pieces)
    if (p.added_id < 0 && normalizer_) p.text = normalizer_->normalize(std::move(p.text));
  std::erase_if(pieces, [](const Piece& p) { return p.text.empty(); });
  added_.split(pieces, true);
  if (pre_tokenizer_) pre_tokenizer_->pre_tokenize(pieces);
  std::vector<int64_t> ids;
  for (const Piece& p : pieces) {
    if (p.added_id >= 0) ids.push_back(p.added_id);
    else model_->tokenize(p.text, ids);
  }
  if (truncation_) {
    int64_t keep = truncation_->max_length;
    if (add_special_tokens && post_processor_) keep -= int64_t(post_processor_->process({}, true).size());
    if (keep < 0) fail_input(fmt::format("{}: truncation max_length {} is shorter than the special tokens", name_, truncation_->max_length));
    if (int64_t(ids.size()) > keep) {
      if (truncation_->left) ids.erase(ids.begin(), ids.end() - keep);
      else ids.resize(size_t(keep));
    }
  }
  return post_processor_ ? post_processor_->process(std::move(ids), add_special_tokens) : ids;
}

std::string Tokenizer::decode(const std::vector<int64_t>& ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (const int64_t id : ids) {
    if (const AddedToken* t = added_.find(id)) {
      if (!(skip_special_tokens && t->special)) tokens.push_back(t->normalized ? t->match_form : t->content);
      continue;
    }
    const std::string* token = model_->id_to_token(id);
    if (!token) fail_input(fmt::format("{}: token id {} is not in the vocabulary ({} ids)", name_, id, vocab_size()));
    tokens.push_back(*token);
  }
  if (!decoder_) {
    std::string out;
    for (size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
    return out;
  }
  decoder_->decode_chain(tokens);
  std::string out;
  for (const std::string& t : tokens) out += t;
  return out;
}

int64_t Tokenizer::vocab_size() const { return std::max(model_->id_end(), added_.id_end()); }

}  // namespace refeval::tokenizer
