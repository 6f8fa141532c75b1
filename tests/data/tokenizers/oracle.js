#!/usr/bin/env node
// The oracle of the tokenizer test: Hugging Face's tokenizers.js (@huggingface/tokenizers, pinned in
// package.json) on each TEXTFILE (read byte for byte as UTF-8). For each file, two lines: the ids
// (space-separated; special tokens added), then the decoded text of those ids as a JSON string.
// With --decode, each argument is a list of ids (space-separated, special tokens kept) and the line
// is its decoded text as a JSON string: for ids no text encodes to (bytes that are not UTF-8,
// lowercase <0xnn> tokens).
// Usage: node oracle.js TOKENIZER.json TEXTFILE...
//        node oracle.js TOKENIZER.json --decode IDS...
"use strict";
const fs = require("fs");
const { Tokenizer } = require("@huggingface/tokenizers");

const [tokenizerFile, ...args] = process.argv.slice(2);
const decode = args[0] === "--decode";
if (!tokenizerFile || (decode && args.length === 1)) {
  console.error("usage: oracle.js TOKENIZER.json TEXTFILE... | oracle.js TOKENIZER.json --decode IDS...");
  process.exit(2);
}
// clean_up_tokenization_spaces is a transformers option, not part of tokenizer.json: off
const tokenizer = new Tokenizer(JSON.parse(fs.readFileSync(tokenizerFile, "utf8")), { clean_up_tokenization_spaces: false });
const lines = [];
if (decode) {
  for (const ids of args.slice(1)) lines.push(JSON.stringify(tokenizer.decode(ids.trim().split(/\s+/).map(Number))));
} else {
  for (const f of args) {
    const ids = tokenizer.encode(fs.readFileSync(f, "utf8")).ids;
    lines.push(ids.join(" "), JSON.stringify(ids.length ? tokenizer.decode(ids) : ""));
  }
}
process.stdout.write(lines.join("\n") + "\n");
