// A Hugging Face tokenizer read from its tokenizer.json: text to token ids and back, as the
// `tokenizers` library computes them.
//
//   Tokenizer t = Tokenizer::load("tokenizer.json");
//   std::vector<int64_t> ids = t.encode("Hello world");       // special tokens added ([CLS], <s>)
//   std::string text = t.decode(ids, /*skip_special_tokens=*/true);
//
// tokenizer.json's "truncation" (max_length, direction) applies to the one sequence encoded; its
// "padding" does not (refeval encodes one unpadded sequence) and is reported as a warning.
//
// Encoding: added tokens are found in the raw text, each other piece is normalized and searched
// for the normalized added tokens, pre-tokenized and given to the model; the post-processor adds
// the special tokens. Decoding: the ids' tokens, through the decoder, joined.
//
// Supported (anything else in the file is an error naming where it is and its type):
//   normalizers     BertNormalizer, NFC, NFD, NFKC, NFKD, Lowercase, StripAccents, Strip, Replace,
//                   Prepend, ByteLevel, Sequence
//   pre-tokenizers  ByteLevel, Split, Metaspace, BertPreTokenizer, Whitespace, WhitespaceSplit,
//                   Punctuation, Digits, CharDelimiterSplit, Sequence
//   models          BPE (byte-level or with byte_fallback), WordPiece, WordLevel
//   post-processors TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel, Sequence
//   decoders        ByteLevel, ByteFallback, Fuse, Replace, Strip, Metaspace, WordPiece, BPEDecoder,
//                   Sequence
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "added_tokens.h"
#include "components.h"

namespace refeval::tokenizer {

class Tokenizer {
 public:
  // ErrorKind::Usage naming the file: unreadable, not JSON, or a component that is not supported.
  static Tokenizer load(const std::string& path);
  static Tokenizer from_json(const json& j, const std::string& name);

  // `text` must be valid UTF-8 (ErrorKind::Input otherwise); a regular expression of the file that
  // gives up on it (catastrophic backtracking) is ErrorKind::Input naming the file.
  std::vector<int64_t> encode(std::string_view text, bool add_special_tokens = true) const;
  // ErrorKind::Input naming an id that is neither in the vocabulary nor an added token.
  std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens = false) const;
  // The largest id the tokenizer can produce or read, plus one (model vocabulary and added tokens).
  int64_t vocab_size() const;

 private:
  std::vector<int64_t> encode_valid(std::string_view text, bool add_special_tokens) const;
  std::string name_;
  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<PostProcessor> post_processor_;
  std::unique_ptr<Decoder> decoder_;
  AddedVocabulary added_;
  struct Truncation {
    int64_t max_length = 0;
    bool left = false;  // keep the last max_length ids
  };
  std::optional<Truncation> truncation_;
};

}  // namespace refeval::tokenizer
