#!/usr/bin/env node
// The texts of the tokenizer test: hand-picked hard cases, then N held-out texts made by a seeded
// generator (mulberry32, so the same seed gives the same texts everywhere), one file each:
// OUTDIR/hNN_name.txt and OUTDIR/gNNN.txt.
//
// Left out on purpose, where tokenizers.js (the oracle) and Hugging Face's Rust tokenizers (which
// refeval follows) disagree: U+0085 and U+FEFF (JavaScript's \s counts U+FEFF as white space and
// not U+0085; Unicode's White_Space the other way round), U+180E, a capital sigma ending a word
// (JavaScript lowercases it to ς, Rust's per-character lowercase to σ), ſ and the Kelvin sign
// (Unicode case folding in (?i:...), ASCII folding in tokenizers.js), CJK ideographs outside the
// BMP (tokenizers.js pads CJK by UTF-16 unit), unassigned code points (Rust's BertNormalizer drops
// them, tokenizers.js keeps them), and characters whose decomposition or composition is new in
// Unicode 16 or 17: Tulu-Tigalari, Kirat Rai and Gurung Khema vowels, Todhri U+105C9 and U+105E4,
// outlined letters and digits U+1CCD6-1CCF9, U+A7F1 (refeval's NFC, NFD, NFKC, NFKD are utf8proc's
// Unicode 15, node's are newer).
// Usage: node texts.js SEED N OUTDIR
"use strict";
const fs = require("fs");
const path = require("path");

const [seedArg, countArg, out] = process.argv.slice(2);
if (!out) {
  console.error("usage: texts.js SEED N OUTDIR");
  process.exit(2);
}
fs.mkdirSync(out, { recursive: true });

const sentences = [
  "The quick brown fox jumps over the lazy dog.",
  "It's 3.14159 and I'm sure they're right; we've checked, you'll see, he'd agree.",
  "Numbers: 1234567890, 2024-01-01, 1,000,000 and 42%.",
];
const hard = {
  empty: "",
  hello: "Hello world",
  accents: "café naïve résumé Ångström Øresund façade São Paulo İstanbul Ελληνικά",
  combining: "cafe\u0301 n\u0303o a\u0308\u0304 Z\u0351\u0352\u0353algo\u0300\u0301",
  cjk: "北京欢迎你。日本語のテキスト、カタカナ。한국어 문장입니다. 中文，标点！",
  emoji: "I ❤️ 🍕! family 👩‍👩‍👧‍👦 thumbs 👍🏽 flag 🇫🇷 🧑🏿‍💻 keycap 1️⃣ 🏳️‍🌈",
  tabs: "a\tb\t\tc\t\t\t d \t e",
  spaces: "a  b   c    d     e      f",
  lead_trail: "   leading and trailing   ",
  newlines: "line one\nline two\r\n\nline four\n\n\n  indented\n",
  space_newline: "a \n b  \n\n  c \t\n",
  contractions: "It's they're we've I'm you'll he'd don't CAN'T IT'S We'Ve 's 'S",
  digits: "1234567890 3.14159 007 12 345 6789 ４２ ١٢٣ Ⅻ ½ x² (x²)+½=Ⅻ. ①②,",
  mixed_case: "HeLLo WoRLD McDonald's iPhone XMLHttpRequest camelCaseWord SCREAMING_SNAKE",
  punctuation: "Hello!!! What?! (yes) [no] {maybe} \"quoted\" 'single' -- dash — em … «guillemets» ¿qué? ¡sí!",
  code: "def f(x):\n    return x**2 + 1  # comment\n\nif __name__ == '__main__':\n\tprint(f(3))\n",
  specials: "<|endoftext|>text<s>more</s> [CLS] x [SEP][MASK] <|begin_of_text|> end<|eot_id|>",
  mask_spaces: "fill the [MASK] here  [MASK]  and\t[MASK]\nend [MASK]",
  scripts: "Привет мир! مرحبا بالعالم שלום עולם नमस्ते दुनिया สวัสดีชาวโลก Γειά σου κόσμε",
  rare: "☃ ⚡ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ꙮ ∮ ⅋ ℵ₀ ₿ 🜁",
  controls: "a\u0000b\u0007c\ufffdd\u200be\u00adf",
  unicode_spaces: "non\u00a0breaking thin\u2009space ideographic\u3000space em\u2003space",
  long_word: "x".repeat(150) + " " + "ab".repeat(60) + " pneumonoultramicroscopicsilicovolcanoconiosis",
  url: "https://example.com/path?query=1&b=2#frag user@mail.org C:\\Windows\\path",
  long: Array.from({ length: 200 }, (_, i) => sentences[i % 3] + (i % 7 === 0 ? "\n\n" : " ")).join(""),
  // characters new in Unicode 15 (PCRE2 10.42's own tables are Unicode 14: unassigned there):
  // symbols (So), Kawi letters (Lo), marks (Mn, Mc), punctuation (Po) and digits (Nd), Kaktovik
  // numerals (No), Nag Mundari letters and digits, Cyrillic modifier letters (Lm), Latin Ll
  unicode15: "I love you \u{1FA77} \u{1FA75}\u{1FA76}! \u{1F6DC}wifi \u{1FACE}\u{1FACF} (\u{1FAAD})... " +
    "Kawi \u{11F04}\u{11F05}\u{11F06}\u{11F34}\u{11F12}\u{11F13}\u{11F00} x\u{11F07}\u{11F08}\u{11F43} \u{11F50}\u{11F51}\u{11F52}\u{11F53}\u{11F54}, \u{11F04}\u{11F05}'s \u{11F50}'s, " +
    "\u{1D2C0}\u{1D2C1}\u{1D2C2}\u{1D2C3}. \u{1E4D0}\u{1E4D1}\u{1E4EB}\u{1E4EC} \u{1E4F0}\u{1E4F1}\u{1E4F2}\u{1E4F3}\u{1E4F4} " +
    "a\u{1E030}\u{1E031}b \u{1DF25}\u{1DF26}z \u0CB8\u0CF3 \u0EA5\u0ECE;\u{11B00}\u{11B01}\u{1F6DC}",
};
// Unicode 16 and 17 characters only from a node of Unicode 17 (refeval's tables): an older one's oracle follows its older Unicode.
const unicode17 = Number(process.versions.unicode.split(".")[0]) >= 17;
if (unicode17) {
  // Garay (16) capitals and small letters, digits, hyphen (Pd), marks, modifier letter, plus and
  // minus (Sm); Kirat Rai, Tulu-Tigalari, Sunuwar, Gurung Khema, Ol Onal, Todhri letters, their
  // punctuation (Po) and digits; Myanmar Extended-C digits; a Kawi nukta (Mn, 16) in a Unicode 15
  // word; new Latin and Cyrillic case pairs; ʕ (Ll until 15, Lo since 16); Beria Erfe capitals and
  // small letters, Sidetic, Tolong Siki letters and digits, Tai Yo (17); emoji and symbols of 16
  // and 17, the Saudi riyal sign (Sc, 17), legacy computing symbols (So, 16); Egyptian hieroglyphs
  hard.unicode16_17 = "Garay \u{10D50}\u{10D70}\u{10D71}\u{10D72} \u{10D51}\u{10D52}\u{10D53} \u{10D54}\u{10D73}'s " +
    "\u{10D40}\u{10D41}\u{10D42}\u{10D43}\u{10D44}, \u{10D55}\u{10D6E}\u{10D74} \u{10D56}\u{10D69}\u{10D6A}\u{10D75} \u{10D4E}\u{10D4A} \u{10D8E}1\u{10D8F}\u{10D45}. " +
    "\u{16D43}\u{16D44}\u{16D45}\u{16D6D} \u{16D70}\u{16D71}\u{16D72}\u{16D73}; \u{11392}\u{11393}\u{11394}\u{113D4} \u{11BC0}\u{11BC1}\u{11BE1} \u{11BF0}\u{11BF1} " +
    "\u{16100}\u{16101} \u{16130}\u{16131}\u{16132} \u{1E5D0}\u{1E5D1}\u{1E5FF} \u{1E5F1}\u{1E5F2} \u{105C0}\u{105C1} \u{116D0}\u{116D1}\u{116D2}\u{116D3} " +
    "\u{11F04}\u{11F5A}\u{11F05} \u{A7CB}\u{A7CC}\u{A7CD} \u{A7DA}\u{A7DB}\u{A7DC} \u{1C89}\u{1C8A} \u0295a " +
    "\u{16EA0}\u{16EBB}\u{16EBC} \u{16EA1}\u{16EA2}'S \u{10940}\u{10941} \u{11DB0}\u{11DB1} \u{11DE0}\u{11DE1}\u{11DE2}\u{11DE3} \u{1E6C0}\u{1E6C1}\n" +
    "I love you \u{1FAC6} \u{1FAE9}\u{1FABE}! \u{1FADC}\u{1FA89}\u{1FA8F}\u{1FADF} (\u{1FAEA})... \u{1FAC8}\u{1FA8A}\u{1F6D8}\u{1FAEF}\u{1FA8E}\u{1FACD} " +
    "\u{20C1}100 \u{1CC00}\u{1CC01}x \u{13460}\u{13461}";
}
const names = Object.keys(hard);
names.forEach((name, i) => fs.writeFileSync(path.join(out, `h${String(i).padStart(2, "0")}_${name}.txt`), hard[name]));

// The generator: words and symbols of many kinds, separated by runs of white space.
function mulberry32(a) {
  return () => {
    a |= 0;
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rand = mulberry32(Number(seedArg));
const pick = (list) => list[Math.floor(rand() * list.length)];
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
const range = (lo, hi) => String.fromCodePoint(int(lo, hi));
const words = ("the of and to in is was that for it with as his on be at by had are but from or have an they which one " +
  "you were all her she there would their we him been has when who will no more if out so up said what its about than " +
  "into them can only other time new some could these two may first then do any like my now over such our man me even " +
  "most made after also did many off before must well back through years much where your way down should because each " +
  "tokenizer transformer encoding unbelievable internationalization antidisestablishmentarianism").split(" ");
const emoji = ["😀", "❤️", "👍🏽", "👩‍💻", "👨‍👩‍👧‍👦", "🇯🇵", "🏳️‍🌈", "✨", "🤖", "☕", "1️⃣", "🧑🏿‍🚀"];
const spaces = [" ", " ", " ", " ", "  ", "   ", "\t", "\n", "\n\n", " \n", "\r\n", "\u00a0", "\u3000"];
const pieces = [
  () => pick(words),
  () => pick(words),
  () => pick(words).toUpperCase(),
  () => { const w = pick(words); return w[0].toUpperCase() + w.slice(1); },
  () => pick(words) + pick(["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "n't"]),
  () => String(int(0, 10 ** int(1, 9))),
  () => pick([".", ",", "!", "?", ";", ":", "...", "--", "(", ")", "\"", "'", "-", "/", "#", "@", "&", "*", "%", "$", "[", "]", "{", "}"]),
  () => Array.from({ length: int(1, 6) }, () => range(0xe0, 0xff)).join(""),  // Latin-1 letters
  () => pick(words) + range(0x300, 0x36f),  // a combining mark
  () => Array.from({ length: int(1, 4) }, () => range(0x4e00, 0x9fa5)).join(""),  // CJK
  () => Array.from({ length: int(2, 6) }, () => range(0x3041, 0x3093)).join(""),  // hiragana
  () => Array.from({ length: int(2, 8) }, () => range(0x430, 0x44f)).join(""),  // Cyrillic
  () => Array.from({ length: int(2, 8) }, () => range(0xac00, 0xd7a3)).join(""),  // hangul
  () => pick(emoji),
  () => Array.from({ length: int(1, 3) }, () => range(0x2190, 0x22ff)).join(""),  // arrows, math
  () => pick(["²", "³", "½", "¾", "Ⅳ", "①", "₂"]) + pick(["", ".", ")", "!", "a"]),  // numbers not decimal digits
];
// Unicode 16 and 17 (as above): letters that neither decompose nor compose, digits, symbols
const cased17 = [[0x10d50, 0x10d65, 0x10d70, 0x10d85], [0x16ea0, 0x16eb8, 0x16ebb, 0x16ed3]];  // Garay, Beria Erfe: Lu, Ll
const letters17 = [[0x16d43, 0x16d62], [0x11392, 0x113b5], [0x11bc0, 0x11be0], [0x16100, 0x1611d], [0x1e5d0, 0x1e5ed],
  [0x105c0, 0x105c8], [0x10940, 0x10959], [0x11db0, 0x11dd8], [0x1e6c0, 0x1e6de]];  // Kirat Rai ... Tai Yo
const digits17 = [0x10d40, 0x16d70, 0x11bf0, 0x16130, 0x1e5f1, 0x116d0, 0x11de0];  // each script's zero
const symbols17 = ["\u{1FAC6}", "\u{1FAE9}", "\u{1FABE}", "\u{1FADC}", "\u{1FA89}", "\u{1FAEA}", "\u{1FAC8}", "\u{1F6D8}",
  "\u{1FAEF}", "\u{20C1}", "\u{10D6E}", "\u{16D6D}", "\u{1E5FF}", "\u{10D8E}"];
if (unicode17) {
  pieces.push(
    () => { const [ul, uh, ll, lh] = pick(cased17); return (rand() < 0.5 ? range(ul, uh) : "") + Array.from({ length: int(1, 5) }, () => range(ll, lh)).join(""); },
    () => { const [lo, hi] = pick(letters17); return Array.from({ length: int(1, 6) }, () => range(lo, hi)).join(""); },
    () => { const zero = pick(digits17); return Array.from({ length: int(1, 5) }, () => range(zero, zero + 9)).join(""); },
    () => pick(symbols17),
  );
}
const total = Number(countArg);
for (let k = 0; k < total; ++k) {
  const n = int(1, 40);
  let text = rand() < 0.2 ? pick(spaces) : "";
  for (let i = 0; i < n; ++i) text += pick(pieces)() + (rand() < 0.3 ? "" : pick(spaces));
  fs.writeFileSync(path.join(out, `g${String(k).padStart(3, "0")}.txt`), text);
}
console.log(`${names.length} hand-picked and ${total} generated texts (seed ${seedArg}) in ${out}`);
