// `refeval tokenize TOKENIZER.json (--text T | --file F) [--decode] [--no-special]`: a Hugging Face
// tokenizer (tools/tokenizer) on one text. Encoding prints the ids on one line, space-separated;
// --decode reads ids (white-space separated) and prints the text exactly, with no newline added.
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "tokenizer/tokenizer.h"
#include "verbs.h"

namespace refeval::cli {
namespace {

class TokenizeVerb : public Verb {
 public:
  void setup(CLI::App* sub) override {
    sub->add_option("tokenizer", path_, "TOKENIZER.json: a Hugging Face tokenizer file")->required();
    text_opt_ = sub->add_option("--text", text_, "TEXT: the text to encode (with --decode: the ids, \"15496 995\")");
    auto* file = sub->add_option("--file", file_, "FILE: read the text (or the ids) from a file, byte for byte");
    text_opt_->excludes(file);
    sub->add_flag("--decode", decode_, "ids in, text out");
    sub->add_flag("--no-special", no_special_,
                  "encoding: add no special tokens ([CLS], <s>); decoding: leave special tokens out of the text");
  }

  int execute(const GlobalOptions&) override {
    if (text_opt_->count() == 0 && file_.empty()) fail_usage("give the input: --text TEXT or --file FILE");
    const std::string input = file_.empty() ? text_ : read_file(file_);
    const tokenizer::Tokenizer t = tokenizer::Tokenizer::load(path_);
    if (decode_) {
      const std::string text = t.decode(parse_ids(input), no_special_);
      std::fwrite(text.data(), 1, text.size(), stdout);
    } else {
      const std::vector<int64_t> ids = t.encode(input, !no_special_);
      std::string line;
      for (size_t i = 0; i < ids.size(); ++i) line += (i ? " " : "") + std::to_string(ids[i]);
      fmt::print("{}\n", line);
    }
    std::fflush(stdout);
    return kOk;
  }

 private:
  static std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail_usage(fmt::format("--file {}: cannot open the file", path));
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }

  static std::vector<int64_t> parse_ids(const std::string& input) {
    std::vector<int64_t> ids;
    std::istringstream in(input);
    for (std::string word; in >> word;) {
      size_t used = 0;
      int64_t id = -1;
      try {
        id = std::stoll(word, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != word.size() || id < 0) fail_usage(fmt::format("--decode: '{}' is not a token id (ids are integers >= 0)", word));
      ids.push_back(id);
    }
    return ids;
  }

  std::string path_, text_, file_;
  bool decode_ = false, no_special_ = false;
  CLI::Option* text_opt_ = nullptr;
};

}  // namespace

std::unique_ptr<Verb> make_tokenize_verb() { return std::make_unique<TokenizeVerb>(); }

}  // namespace refeval::cli
