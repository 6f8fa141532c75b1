#!/usr/bin/env bash
# `refeval tokenize` and `generate --tokenizer` as a user runs them.
# - The oracle: GPT-2, Llama-2 and bert-base-uncased tokenizer.json files made from the
#   vocabularies npm packages ship (tests/data/tokenizers/make_tokenizer_json.js), plus GPT-2's
#   vocabulary under Llama-3's and under DeepSeek-V3's Split pre-tokenizers and Llama-2's under a
#   Metaspace pre-tokenizer;
#   on hand-picked hard cases and seeded generated texts (texts.js), refeval's ids equal those of
#   Hugging Face's tokenizers.js (oracle.js), --decode of them equals its decoded text, and for
#   GPT-2 the original text byte for byte. A BERT variant takes the other normalizers and
#   pre-tokenizers tokenizers.js shares with the Rust library (bert_variants.json), and GPT-2's
#   vocabulary behind a Lowercase normalizer (byte-level ids show each code point's lowercase). The
#   texts take characters new in Unicode 15, 16 and 17 (categories, White_Space and lowercase
#   follow tools/tokenizer/unicode_tables.inc, Unicode 17, not PCRE2's Unicode 14 nor utf8proc's
#   15), those of 16 and 17 only when node's Unicode is 17 or newer (texts.js). Needs node
#   and tests/data/tokenizers/node_modules (`npm install` there, as scripts/install-deps.sh does); without them
#   this part is skipped with a note.
# - By expected values: single_word (tokenizers.js ignores it), the Metaspace decoder, the Split
#   behaviors tokenizers.js lacks, Metaspace's split, Punctuation, Digits, WordLevel.
# - Errors: corrupt JSON, unsupported components, a bad merge, an unknown id, bad input: one line
#   naming the problem, exit 2.
# - generate --tokenizer on a tiny decoder (vocabulary 96): a fitting tokenizer prints the text; a
#   larger one is refused naming both sizes, from the declared shape or after the first step.
# Usage: tokenize_test.sh REFEVAL SOURCE_DIR [GENERATED_TEXTS (default 40)] [SEED (default 1)]
set -u
refeval=$(realpath "$1")
src=$2
generated=${3:-40}
seed=${4:-1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/expect.sh"
cd "$src"
data=tests/data/tokenizers
py=/usr/bin/python3

# --- tests/data/tokenizers/ascii96.json: printable ASCII, one id per character but "~", whose id
# goes to the one merge "H e"; <unk> 95 (96 ids, the vocabulary of the tiny decoders). Variants:
# with <eos> 96 (97 ids), and broken ones.
$py - "$work" $data/ascii96.json <<'PY'
import copy, json, sys
work = sys.argv[1]
base = json.load(open(sys.argv[2]))
def added(i, content):
    return {"id": i, "content": content, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True}
def write(name, t):
    json.dump(t, open(f"{work}/{name}.json", "w"))
t = copy.deepcopy(base); t["added_tokens"].append(added(96, "<eos>")); write("ascii97", t)
t = copy.deepcopy(base); t["normalizer"] = {"type": "Precompiled", "precompiled_charsmap": "AAAA"}; write("precompiled", t)
t = copy.deepcopy(base); t["model"] = {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0]]}; write("unigram", t)
t = copy.deepcopy(base); t["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, {"type": "UnicodeScripts"}]}
write("unicode_scripts", t)
t = copy.deepcopy(base); t["decoder"] = {"type": "CTC", "pad_token": "<pad>"}; write("ctc", t)
t = copy.deepcopy(base); t["model"]["merges"] = ["H x"]; del t["model"]["vocab"]["x"]; write("bad_merge", t)
t = copy.deepcopy(base); t["pre_tokenizer"] = {"type": "Split", "pattern": {"Regex": "(?<=a+)b"}, "behavior": "Isolated"}; write("bad_regex", t)
t = copy.deepcopy(base); t["added_tokens"].append(dict(added(97, "ab"), single_word=True, special=False)); write("single_word", t)
# WordLevel over whole pieces, so the ids show where a pre-tokenizer splits
pieces = ["the", "-", "final", "countdown", "the-", "final-", "-final", "-countdown", "--", "\u2581hey", "\u2581you", "ab", "123", "c", ",", "<unk>"]
for behavior in ["Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"]:
    t = copy.deepcopy(base)
    t["model"] = {"type": "WordLevel", "vocab": {p: i for i, p in enumerate(pieces)}, "unk_token": "<unk>"}
    t["added_tokens"], t["decoder"] = [], None
    t["pre_tokenizer"] = {"type": "Split", "pattern": {"String": "-"}, "behavior": behavior, "invert": False}
    write(f"split_{behavior}", t)
    t["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [{"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
                                                              {"type": "Punctuation"}, {"type": "Digits", "individual_digits": False}]}
    write("metaspace_split", t)
# An empty String pattern is the empty regex in the libraries: it matches between every two
# characters (Split splits there, Replace inserts there)
chars = {p: i for i, p in enumerate(["a", "b", "c", "-a-b-c-", "abc", "<unk>"])}
for name in ("empty_split", "empty_replace"):
    t = copy.deepcopy(base)
    t["model"] = {"type": "WordLevel", "vocab": chars, "unk_token": "<unk>"}
    t["added_tokens"], t["decoder"], t["post_processor"] = [], None, None
    t["pre_tokenizer"] = {"type": "Split", "pattern": {"String": ""}, "behavior": "Isolated", "invert": False} if name == "empty_split" else None
    t["normalizer"] = {"type": "Replace", "pattern": {"String": ""}, "content": "-"} if name == "empty_replace" else None
    write(name, t)
PY
printf '{"model": {"type": "BPE", "vocab": {"a": 0' >"$work/corrupt.json"

t=$data/ascii96.json
expect 0 "^94 76 76 79 12 0 87 79 82 76 68$" "" -- tokenize "$t" --text "Hello, world"  # H e merged (94)
expect 0 "^Hello, world$" "" -- tokenize "$t" --decode --text "94 76 76 79 12 0 87 79 82 76 68"
expect 0 "^$" "" -- tokenize "$t" --text ""
printf 'caf\xc3\xa9\xc3\xa8' >"$work/fused.txt"  # é and è are not in the vocabulary: one <unk> (fuse_unk)
expect 0 "^67 65 70 95$" "" -- tokenize "$t" --file "$work/fused.txt"
# Split's behaviors on "the-final--countdown" (a WordLevel model over the pieces: the, -, final,
# countdown, the-, final-, -final, -countdown, --), Metaspace's split, Punctuation, Digits
for b in "Removed 0 2 3" "Isolated 0 1 2 1 1 3" "MergedWithPrevious 4 5 1 3" "MergedWithNext 0 6 1 7" "Contiguous 0 1 2 8 3"; do
  expect 0 "^${b#* }$" "" -- tokenize "$work/split_${b%% *}.json" --text "the-final--countdown"
done
expect 0 "^0 1 2$" "" -- tokenize "$work/empty_split.json" --text "abc"  # as tokenizers.js and the Rust library
expect 0 "^3$" "" -- tokenize "$work/empty_replace.json" --text "abc"  # "-a-b-c-"
expect 0 "^9 10 15 12 13 14 14$" "" -- tokenize "$work/metaspace_split.json" --text "hey you ab123c,,"  # ▁hey ▁you ▁ab (unknown) 123 c , ,
# single_word: "ab" is found where no word character touches it (not in "cab")
expect 0 "^97 0 67 65 66 0 97 14$" "" -- tokenize "$work/single_word.json" --text "ab cab ab."
expect 2 "" "^refeval: error: .*corrupt.json: not a tokenizer.json: .*parse error" -- tokenize "$work/corrupt.json" --text hi
expect 2 "" "^refeval: error: .*precompiled.json: normalizer: normalizer type 'Precompiled' is not supported" -- tokenize "$work/precompiled.json" --text hi
expect 2 "" "^refeval: error: .*unigram.json: model: model type 'Unigram' is not supported" -- tokenize "$work/unigram.json" --text hi
expect 2 "" "^refeval: error: .*unicode_scripts.json: pre_tokenizer.pretokenizers\[1\]: pre_tokenizer type 'UnicodeScripts' is not supported" -- \
  tokenize "$work/unicode_scripts.json" --text hi
expect 2 "" "^refeval: error: .*ctc.json: decoder: decoder type 'CTC' is not supported" -- tokenize "$work/ctc.json" --text hi
expect 2 "" "^refeval: error: .*bad_merge.json: model \(BPE\): merge \"H x\" \(rank 0\): 'x' is not in the vocabulary" -- tokenize "$work/bad_merge.json" --text hi
expect 2 "" "^refeval: error: .*bad_regex.json: pre_tokenizer \(Split\): pattern .*lookbehind" -- tokenize "$work/bad_regex.json" --text hi
expect 2 "" "^refeval: error: .*ascii96.json: token id 96 is not in the vocabulary \(96 ids\)" -- tokenize "$t" --decode --text "40 96"
expect 2 "" "^refeval: error: --decode: '4x' is not a token id" -- tokenize "$t" --decode --text "40 4x"
expect 2 "" "^refeval: error: --decode: '-1' is not a token id" -- tokenize "$t" --decode --text "-1"
printf 'a\xffb' >"$work/bad_utf8.txt"
expect 2 "" "^refeval: error: the text is not valid UTF-8 \(byte 1 of 3\)" -- tokenize "$t" --file "$work/bad_utf8.txt"
expect 2 "" "^refeval: error: give the input: --text TEXT or --file FILE" -- tokenize "$t"
expect 2 "" "^refeval: error: .*nope.json: cannot open the tokenizer file" -- tokenize "$work/nope.json" --text hi
# A pattern that backtracks catastrophically on this text: PCRE2 gives up, and the error names the file.
/usr/bin/python3 - "$t" "$work/catastrophic.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
t["pre_tokenizer"] = {"type": "Split", "pattern": {"Regex": "(.*a){20}$"}, "behavior": "Isolated", "invert": False}
json.dump(t, open(sys.argv[2], "w"))
PY
expect 2 "" "^refeval: error: .*catastrophic.json: regular expression '\(\.\*a\)\{20\}[$]': match limit exceeded$" -- \
  tokenize "$work/catastrophic.json" --text "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"
# ... the pattern named as the file has it, not as rewritten for PCRE2 (\w, \p{L} written out)
/usr/bin/python3 - "$t" "$work/catastrophic_w.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
t["pre_tokenizer"] = {"type": "Split", "pattern": {"Regex": "^(\\w+\\s?)*$|\\p{L}"}, "behavior": "Isolated", "invert": False}
json.dump(t, open(sys.argv[2], "w"))
PY
expect 2 "" "^refeval: error: .*catastrophic_w.json: regular expression '\^\(\\\\w\+\\\\s\?\)\*[$]\|\\\\p\{L\}': match limit exceeded$" -- \
  tokenize "$work/catastrophic_w.json" --text "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx!"
# \C: one byte to PCRE2 (a\C took half of é, and NFC then met bytes that are not UTF-8), a
# control-character escape to Oniguruma, which refuses a bare \C: refused, naming the pattern
/usr/bin/python3 - "$t" "$work/backslash_c.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
t["normalizer"] = {"type": "Sequence", "normalizers": [{"type": "Replace", "pattern": {"Regex": "a\\C"}, "content": "x"}, {"type": "NFC"}]}
json.dump(t, open(sys.argv[2], "w"))
PY
expect 2 "" "^refeval: error: .*backslash_c.json: normalizer.normalizers\[0\] \(Replace\): pattern \"a\\\\\\\\C\": using \\\\C is disabled" -- \
  tokenize "$work/backslash_c.json" --text "aé"
# Sequences nested 10,000 deep (a crash before): refused at 64 levels, one line naming the file.
for step in normalizer:normalizers pre_tokenizer:pretokenizers decoder:decoders post_processor:processors; do
  /usr/bin/python3 - "$t" "${step%%:*}" "${step##*:}" "$work/deep.json" <<'PY'
import json, sys
source, field, key, out = sys.argv[1:5]
t = json.load(open(source))
t[field] = "DEEP"
text = json.dumps(t).replace('"DEEP"', ('{"type": "Sequence", "%s": [' % key) * 10000 + ']}' * 10000)
open(out, "w").write(text)
PY
  expect 2 "" "^refeval: error: .*deep.json: ${step%%:*}(\.${step##*:}\[0\]){64}: Sequence steps nested more than 64 deep$" -- tokenize "$work/deep.json" --text hi
done

# --- fields a file may leave out or leave empty, as Hugging Face's Rust library reads them
# (tokenizers.js differs on the first: it gives an empty added token its id)
$py - "$work" $data/ascii96.json <<'PY'
import copy, json, sys
work = sys.argv[1]
base = json.load(open(sys.argv[2]))
def write(name, change):
    t = copy.deepcopy(base)
    change(t)
    json.dump(t, open(f"{work}/{name}.json", "w"))
empty = {"id": 96, "content": "", "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True}
write("empty_added", lambda t: t["added_tokens"].append(empty))
write("added_no_id", lambda t: t["added_tokens"].append({"content": "<eos>", "special": True}))
write("no_merges", lambda t: t["model"].pop("merges"))
PY
# an added token with empty content is skipped (added_vocabulary.rs: `if token.content.is_empty()
# { ignored += 1; continue; }`): its id is no token, the vocabulary stays 96 ids, the text is as before
expect 2 "" "^refeval: error: .*empty_added.json: token id 96 is not in the vocabulary \(96 ids\)$" -- tokenize "$work/empty_added.json" --decode --text "40 96"
expect 0 "^94 76 76 79$" "" -- tokenize "$work/empty_added.json" --text "Hello"
# an added token needs its id; BPE needs its merges (Rust: "Missing vocab/merges")
expect 2 "" "^refeval: error: .*added_no_id.json: added_tokens\[1\]: no \"id\"$" -- tokenize "$work/added_no_id.json" --text "Hello"
expect 2 "" "^refeval: error: .*no_merges.json: model \(BPE\): no \"merges\"$" -- tokenize "$work/no_merges.json" --text "Hello"

# --- generate --tokenizer on a decoder with a vocabulary of 96 (declared), and the same model with
# the vocabulary left symbolic (known once the prefill's logits are there)
optimum=tests/data/ort/decoders_optimum/b1/model.onnx
$py - "$optimum" "$work/symbolic_vocab.onnx" <<'PY'
import sys, onnx
m = onnx.load(sys.argv[1])
m.graph.output[0].type.tensor_type.shape.dim[2].dim_param = "vocab"
onnx.save(m, sys.argv[2])
PY
expect 0 '^text 0: ".*"$' "" -- -q generate $optimum --tokenizer "$t" --prompt-text "Hello, world" --new-tokens 12 --json "$work/g.json"
row=$(sed -n 's/^row 0: //p' "$work/out")
want=$("$refeval" tokenize "$t" --decode --no-special --text "$row")
check "generate prints the decoded ids, JSON-quoted, and --json has them as 'text'" $py -c "
import json, sys
j = json.load(open('$work/g.json'))
want = sys.argv[1]
line = [l for l in open('$work/out') if l.startswith('text 0: ')][0]
assert json.loads(line[len('text 0: '):]) == want, (line, want)
assert j['text'] == [want] and len(j['tokens'][0]) == 12, j
" "$want"
check "generate --prompt-text feeds the encoded prompt: the same ids as --prompt" bash -c \
  "cmp -s <('$refeval' -q generate $optimum --prompt '94 76 76 79 12 0 87 79 82 76 68' --new-tokens 12 | head -1) <(head -1 '$work/out')"
expect 2 "" "^refeval: error: the tokenizer's vocabulary \(97 ids\) is larger than the model's \(96, the last dimension of 'logits'\)" -- \
  -q generate $optimum --tokenizer "$work/ascii97.json" --prompt-text "Hello"
expect 2 "" "^refeval: error: the tokenizer's vocabulary \(97 ids\) is larger than the model's \(96, the last dimension of 'logits'\)" -- \
  -q generate "$work/symbolic_vocab.onnx" --tokenizer "$work/ascii97.json" --prompt "1 2"
expect 0 '^text 0: ' "" -- -q generate "$work/symbolic_vocab.onnx" --tokenizer "$t" --prompt "1 2" --new-tokens 3
expect 2 "" "^refeval: error: --prompt-text needs --tokenizer TOKENIZER.json" -- -q generate $optimum --prompt-text "Hello"

# --- the oracle
if ! command -v node >/dev/null || [[ ! -d $data/node_modules/@huggingface/tokenizers ]]; then
  echo "note: the tokenizers.js oracle part is skipped: no node or no $data/node_modules (npm install there, as scripts/install-deps.sh does)"
  finish
  exit
fi
node $data/make_tokenizer_json.js "$work/tok" >/dev/null || { echo "FAIL: make_tokenizer_json.js"; exit 1; }
node -e '
const t = require(process.argv[1]);
t.normalizer = { type: "Lowercase" };
require("fs").writeFileSync(process.argv[2], JSON.stringify(t));' "$work/tok/gpt2.json" "$work/tok/gpt2_lowercase.json"
node $data/texts.js "$seed" "$generated" "$work/texts"
texts=("$work"/texts/*.txt)
# oracle_check NAME TEXT...: $work/tok/NAME.json encodes each text file to the ids tokenizers.js
# gives, and decodes them to its text (GPT-2: the original bytes too)
oracle_check() {
  local name=$1
  shift
  local tok=$work/tok/$name.json
  mkdir -p "$work/$name"
  # one text a process (each loads the tokenizer), on every core: ctest runs this test alone
  printf '%s\0' "$@" | xargs -0 -n 1 -P "$(nproc)" bash -c '
    refeval=$1 tok=$2 out=$3 f=$4
    base=$(basename "$f" .txt)
    # a crash prints nothing: its exit status is kept with the messages
    if "$refeval" -q tokenize "$tok" --file "$f" >"$out/$base.ids" 2>"$out/$base.err"; then
      "$refeval" -q tokenize "$tok" --decode --file "$out/$base.ids" >"$out/$base.dec" 2>>"$out/$base.err" ||
        echo "--decode: exit $?" >>"$out/$base.err"
    else
      echo "exit $?" >>"$out/$base.err"
    fi' _ "$refeval" "$tok" "$work/$name"
  node $data/oracle.js "$tok" "$@" >"$work/$name.oracle"
  check "$name: ids and decoded text equal to tokenizers.js on $# texts" node - "$name" "$work" "$@" <<'JS'
const fs = require("fs");
const [name, work, ...texts] = process.argv.slice(2);
const oracle = fs.readFileSync(`${work}/${name}.oracle`, "utf8").split("\n");
let ids = 0, bad = 0, roundTrips = 0;
texts.forEach((f, i) => {
  const base = f.replace(/^.*\//, "").replace(/\.txt$/, "");
  const err = fs.readFileSync(`${work}/${name}/${base}.err`, "utf8");
  const got = fs.readFileSync(`${work}/${name}/${base}.ids`, "utf8").trim();
  const want = oracle[2 * i];
  const decoded = fs.existsSync(`${work}/${name}/${base}.dec`) ? fs.readFileSync(`${work}/${name}/${base}.dec`) : Buffer.alloc(0);
  const wantText = Buffer.from(JSON.parse(oracle[2 * i + 1]), "utf8");
  const problems = [];
  if (err) problems.push(`stderr: ${err.trim()}`);
  if (got !== want) {
    const g = got.split(" "), w = want.split(" ");
    let k = 0;
    while (k < g.length && g[k] === w[k]) ++k;
    problems.push(`ids differ at ${k}: refeval ${g.slice(k, k + 6).join(" ")} | tokenizers.js ${w.slice(k, k + 6).join(" ")}`);
  }
  if (!decoded.equals(wantText)) problems.push(`decoded ${JSON.stringify(decoded.toString())} != ${JSON.stringify(wantText.toString())}`);
  if (name === "gpt2") {
    if (decoded.equals(fs.readFileSync(f))) ++roundTrips;
    else problems.push("decode does not give the original text back");
  }
  if (problems.length) {
    ++bad;
    console.log(`  ${name} ${base}: ${problems.join("; ")}`);
  }
  ids += want ? want.split(" ").length : 0;
});
console.log(`${name}: ${texts.length} texts, ${ids} ids compared with tokenizers.js, ${texts.length - bad} equal in ids and decoded text` +
            (name === "gpt2" ? `, ${roundTrips} decoded back to the original bytes` : ""));
process.exit(bad ? 1 : 0);
JS
}
for name in gpt2 gpt2_lowercase gpt2_llama3_split gpt2_deepseek3_split llama2 llama2_metaspace bert bert_variants; do
  oracle_check "$name" "${texts[@]}"
done

# --- components and forms the files above do not take, against tokenizers.js
# CLIP (NFC, BPE with end_of_word_suffix "</w>", the BPEDecoder), NFKD, and DeepSeek's added tokens
# (fullwidth bars and ▁, which stand for no byte: the ByteLevel decoder keeps their text), on the
# texts above and a chat text
mkdir -p "$work/extra"
printf '%s' '<｜begin▁of▁sentence｜><｜User｜>Hello, 你好 🎉!<｜Assistant｜>Hi   there.<｜end▁of▁sentence｜>' >"$work/extra/x00_chat.txt"
printf '%s' 'a photo of a CAT, 2 dogs <|endoftext|> Ångström ＡＢＣ ﬁ' >"$work/extra/x01_clip.txt"
for name in clip bert_nfkd gpt2_deepseek3_specials; do
  oracle_check "$name" "${texts[@]}" "$work"/extra/*.txt
done
# Variants: WordPiece without max_input_chars_per_word (100 in both libraries: a word of 101
# characters is [UNK]); BPE without unk_token (characters not in the vocabulary are left out, a
# word of them gives no id); a POSIX class inside a class ([[:alpha:]\d], ASCII texts: PCRE2's
# [:alpha:] is \p{L}, tokenizers.js's \p{Alphabetic}); no decoder (tokens joined by spaces);
# Llama-2's byte tokens spelled <0xc3> (the ByteFallback decoder reads lowercase hex too, as
# Rust's u8::from_str_radix does; encoding looks up <0xC3> only)
node - "$work/tok" $data/ascii96.json <<'JS'
const fs = require("fs");
const [dir, ascii96] = process.argv.slice(2);
const variant = (from, name, change) => {
  const t = JSON.parse(fs.readFileSync(from, "utf8"));
  change(t);
  fs.writeFileSync(`${dir}/${name}.json`, JSON.stringify(t));
};
variant(`${dir}/bert.json`, "bert_default_max", (t) => delete t.model.max_input_chars_per_word);
variant(`${dir}/bert.json`, "bert_no_decoder", (t) => (t.decoder = null));
variant(ascii96, "ascii96_no_unk", (t) => (t.model.unk_token = null));
variant(`${dir}/gpt2.json`, "gpt2_posix_class", (t) => (t.pre_tokenizer = {
  type: "Sequence",
  pretokenizers: [
    { type: "Split", pattern: { Regex: " ?[[:alpha:]\\d]+| ?[^[:alpha:]\\d\\s]+|\\s+" }, behavior: "Isolated", invert: false },
    { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: false },
  ],
}));
variant(`${dir}/llama2.json`, "llama2_lowercase_bytes", (t) => {
  t.model.vocab = Object.fromEntries(Object.entries(t.model.vocab).map(([k, id]) => [/^<0x[0-9A-F]{2}>$/.test(k) ? k.toLowerCase() : k, id]));
});
variant(`${dir}/gpt2.json`, "gpt2_bytelevel_normalizer", (t) => ((t.normalizer = { type: "ByteLevel" }), (t.pre_tokenizer = null)));
variant(`${dir}/gpt2.json`, "gpt2_no_pre_tokenizer", (t) => (t.pre_tokenizer = null));
JS
mkdir -p "$work/long_words" "$work/unknown" "$work/posix"
ab50=$(printf 'ab%.0s' {1..50})
printf '%s' "$ab50" >"$work/long_words/w100.txt"
printf '%s' "$ab50 ${ab50}x" >"$work/long_words/w101.txt"
printf '%s' 'éü' >"$work/unknown/u0.txt"
printf '%s' 'Hé, ünï!' >"$work/unknown/u1.txt"
printf '%s' 'abc123 x9[y] z]]!' >"$work/posix/p0.txt"
printf '%s' "It's [[ok]] 42]a] b_c-d" >"$work/posix/p1.txt"
oracle_check bert_default_max "$work"/long_words/*.txt
oracle_check ascii96_no_unk "$work"/unknown/*.txt
oracle_check gpt2_posix_class "$work"/posix/*.txt

# decode_check TOKENIZER WHAT IDS...: refeval's --decode of each list of ids is tokenizers.js's
# text (oracle.js --decode), byte for byte
decode_check() {
  local tok=$1 what=$2 ids k=0 bad=0
  shift 2
  node $data/oracle.js "$tok" --decode "$@" >"$work/decode.oracle" || bad=1
  for ids in "$@"; do
    k=$((k + 1))
    node -e 'process.stdout.write(JSON.parse(process.argv[1]))' "$(sed -n "${k}p" "$work/decode.oracle")" >"$work/decode.want"
    "$refeval" -q tokenize "$tok" --decode --text "$ids" >"$work/decode.got" 2>&1
    if ! cmp -s "$work/decode.want" "$work/decode.got"; then
      bad=1
      echo "  $what: $ids: refeval $(od -An -c "$work/decode.got" | head -2 | tr -s ' ') | tokenizers.js $(sed -n "${k}p" "$work/decode.oracle")"
    fi
  done
  check "$what: --decode gives tokenizers.js's text on $# lists of ids" test $bad -eq 0
}
decode_check "$work/tok/bert_no_decoder.json" "no decoder" "101 7592 2088 1010 2009 1005 1055 102"
decode_check "$work/tok/llama2_lowercase_bytes.json" "ByteFallback, <0xnn>" "15043 198 172" "15043 243 162 145 140 29991" "15043 234"
# GPT-2's byte tokens making bytes that are not UTF-8: each maximal ill-formed part is one U+FFFD
# (F0 9F before a space, E0 80, ED A0 80 (a surrogate), F4 90 (past U+10FFFF), C3 '(', E2 82 at the
# end), as the Rust library's from_utf8_lossy and tokenizers.js's TextDecoder do; E2 82 A9 is ₩
decode_check "$work/tok/gpt2.json" "ByteLevel, invalid UTF-8" "15496 172 253 995" "156 222 15496" "169 254 222" \
  "176 238 222 222" "127 7" "15496 158 224" "158 224 102"
# The ByteLevel normalizer (byte stand-ins before the model, no pre-tokenizer): the text's
# normalized form is the one Hugging Face's own test gives (normalizers/byte_level.rs,
# test_byte_level_normalize), so the ids are tokenizers.js's on that form; decoding gives the text
printf '%s' 'HelloĠæĪĳä»Ĭå¤©èĥ½ä¸ºä½łåģļä»Ģä¹Ī' >"$work/byte_level_normalized.txt"
want=$(node $data/oracle.js "$work/tok/gpt2_no_pre_tokenizer.json" "$work/byte_level_normalized.txt" | head -1)
expect 0 "^$want$" "" -- tokenize "$work/tok/gpt2_bytelevel_normalizer.json" --text "Hello 我今天能为你做什么"
expect 0 "^Hello 我今天能为你做什么$" "" -- tokenize "$work/tok/gpt2_bytelevel_normalizer.json" --decode --text "$want"

# An empty BPEDecoder suffix matches before every character and at the end, as Rust's str::replace
# and tokenizers.js's replaceAll: a space there in every token but the last (refeval matched
# nowhere); a Metaspace decoder's replacement must be one character (a char in Rust)
node -e '
const fs = require("fs");
const t = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
t.decoder = { type: "BPEDecoder", suffix: "" };
fs.writeFileSync(process.argv[2], JSON.stringify(t));
t.decoder = { type: "Metaspace", replacement: "", prepend_scheme: "always", split: true };
fs.writeFileSync(process.argv[3], JSON.stringify(t));' "$work/tok/clip.json" "$work/tok/clip_empty_suffix.json" "$work/tok/clip_metaspace_empty.json"
decode_check "$work/tok/clip_empty_suffix.json" "BPEDecoder, empty suffix" "$("$refeval" -q tokenize "$work/tok/clip.json" --text "a photo of café")"
expect 2 "" "^refeval: error: .*clip_metaspace_empty.json: decoder \(Metaspace\): \"replacement\" must be one character$" -- \
  tokenize "$work/tok/clip_metaspace_empty.json" --decode --text "1 2"

# special tokens left out: encoding adds none, decoding drops them
bert=$work/tok/bert.json
expect 0 "^101 7592 2088 102$" "" -- tokenize "$bert" --text "Hello world"
expect 0 "^7592 2088$" "" -- tokenize "$bert" --text "Hello world" --no-special
expect 0 "^hello world$" "" -- tokenize "$bert" --decode --text "101 7592 2088 102" --no-special
# the Metaspace decoder (not in the files above): ▁ back to spaces, the first token's dropped
node -e '
const t = require(process.argv[1]);
t.decoder = { type: "Metaspace", replacement: "\u2581", prepend_scheme: "first", split: false };
require("fs").writeFileSync(process.argv[2], JSON.stringify(t));' "$work/tok/llama2_metaspace.json" "$work/metaspace_decoder.json"
ids=$("$refeval" tokenize "$work/metaspace_decoder.json" --text "Hello big world" --no-special)
expect 0 "^Hello big world$" "" -- tokenize "$work/metaspace_decoder.json" --decode --text "$ids"
finish
