#include "components.h"

#include <array>

#include <fmt/format.h>

#include "refeval/error.h"
#include "unicode.h"

namespace refeval::tokenizer {

void fail_at(const std::string& where, const std::string& what) { fail_usage(where + ": " + what); }

std::string type_of(const json& j, const std::string& where) {
  if (!j.is_object()) fail_at(where, fmt::format("expected an object, got {}", j.type_name()));
  const auto it = j.find("type");
  if (it == j.end()) fail_at(where, "no \"type\"");
  if (!it->is_string()) fail_at(where, fmt::format("\"type\" must be a string, got {}", it->type_name()));
  return it->get<std::string>();
}

namespace {
const json* field(const json& j, const char* key) {
  const auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}
}  // namespace

std::string string_field(const json& j, const char* key, const std::string& where, const std::optional<std::string>& dflt) {
  const json* f = field(j, key);
  if (!f) {
    if (!dflt) fail_at(where, fmt::format("no \"{}\"", key));
    return *dflt;
  }
  if (!f->is_string()) fail_at(where, fmt::format("\"{}\" must be a string, got {}", key, f->type_name()));
  return f->get<std::string>();
}

bool bool_field(const json& j, const char* key, const std::string& where, bool dflt) {
  const json* f = field(j, key);
  if (!f) return dflt;
  if (!f->is_boolean()) fail_at(where, fmt::format("\"{}\" must be true or false, got {}", key, f->type_name()));
  return f->get<bool>();
}

int64_t int_field(const json& j, const char* key, const std::string& where, const std::optional<int64_t>& dflt) {
  const json* f = field(j, key);
  if (!f) {
    if (!dflt) fail_at(where, fmt::format("no \"{}\"", key));
    return *dflt;
  }
  if (!f->is_number_integer()) fail_at(where, fmt::format("\"{}\" must be an integer, got {}", key, f->dump()));
  return f->get<int64_t>();
}

const json& container_field(const json& j, const char* key, const std::string& where, bool object) {
  const json* f = field(j, key);
  if (!f) fail_at(where, fmt::format("no \"{}\"", key));
  if (object ? !f->is_object() : !f->is_array())
    fail_at(where, fmt::format("\"{}\" must be an {}, got {}", key, object ? "object" : "array", f->type_name()));
  return *f;
}

Pattern Pattern::from_json(const json& j, const std::string& where) {
  Pattern p;
  if (j.is_object() && j.size() == 1 && j.contains("String") && j["String"].is_string() && !j["String"].get<std::string>().empty()) {
    p.literal_ = j["String"].get<std::string>();
  } else if (j.is_object() && j.size() == 1 && j.contains("String") && j["String"].is_string()) {
    // The libraries compile a String pattern as its escaped regex: an empty one matches between
    // every two characters (Replace inserts there, Split splits there), not nowhere.
    p.regex_ = Regex::oniguruma("");
  } else if (j.is_object() && j.size() == 1 && j.contains("Regex") && j["Regex"].is_string()) {
    try {
      p.regex_ = Regex::oniguruma(j["Regex"].get<std::string>());
    } catch (const std::invalid_argument& e) {
      fail_at(where, fmt::format("pattern {}: {}", j["Regex"].dump(), e.what()));
    }
  } else {
    fail_at(where, fmt::format("\"pattern\" must be {{\"String\": ...}} or {{\"Regex\": ...}}, got {}", j.dump()));
  }
  return p;
}

std::vector<std::pair<size_t, size_t>> Pattern::find_all(std::string_view s) const {
  return regex_ ? regex_->find_all(s) : find_literal(s, literal_);
}

std::unique_ptr<Model> make_model(const json& j, const std::string& where) {
  if (j.is_null()) fail_at(where, "a tokenizer needs a model");
  const std::string type = type_of(j, where);
  if (type == "BPE") return make_bpe(j, where + " (BPE)");
  if (type == "WordPiece") return make_wordpiece(j, where + " (WordPiece)");
  if (type == "WordLevel") return make_wordlevel(j, where + " (WordLevel)");
  fail_at(where, fmt::format("model type '{}' is not supported (supported: BPE, WordPiece, WordLevel)", type));
}

namespace {
// GPT-2's bytes_to_unicode: the printable bytes stand for themselves, the others (controls,
// space, DEL, NBSP, soft hyphen) for 256, 257, ... in byte order.
struct ByteMap {
  std::array<std::string, 256> to_unicode;
  std::array<int, 512> to_byte;
  ByteMap() {
    to_byte.fill(-1);
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const int cp = printable ? b : next++;
      to_unicode[size_t(b)] = utf8(cp);
      to_byte[size_t(cp)] = b;
    }
  }
};
const ByteMap& byte_map() {
  static const ByteMap map;
  return map;
}
}  // namespace

const std::string& byte_to_unicode(uint8_t byte) { return byte_map().to_unicode[byte]; }
int byte_of_unicode(int32_t cp) { return cp >= 0 && cp < 512 ? byte_map().to_byte[size_t(cp)] : -1; }

}  // namespace refeval::tokenizer
