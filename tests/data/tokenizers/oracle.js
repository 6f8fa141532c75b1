#!/usr/bin/env node
// The oracle of the tokenizer test: Hugging Face's tokenizers.js (@huggingface/tokenizers, pinned in
// package.json) on each TEXTFILE (read byte for byte as UTF-8). For each file, two lines: the ids
// (space-separated; special tokens added), then the decoded text of those ids as a JSON string.
// Usage: node oracle.js TOKENIZER.json TEXTFILE...
"use strict";
const fs = require("fs");
const { Tokenizer } = require("@huggingface/tokenizers");

const [tokenizerFile, ...textFiles] = process.argv.slice(2);
if (!tokenizerFile) {
  console.error("usage: oracle.js TOKENIZER.json TEXTFILE...");
  process.exit(2);
}
// clean_up_tokenization_spaces is a transformers option, not part of tokenizer.json: off
const tokenizer = new Tokenizer(JSON.parse(fs.readFileSync(tokenizerFile, "utf8")), { clean_up_tokenization_spaces: false });
const lines = [];
for (const f of textFiles) {
  const ids = tokenizer.encode(fs.readFileSync(f, "utf8")).ids;
  lines.push(ids.join(" "), JSON.stringify(ids.length ? tokenizer.decode(ids) : ""));
}
process.stdout.write(lines.join("\n") + "\n");
