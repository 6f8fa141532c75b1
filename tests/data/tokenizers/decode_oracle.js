#!/usr/bin/env node
// The decoding oracle of the tokenizer test: Hugging Face's tokenizers.js decodes each list of ids
// (space-separated, special tokens kept) with TOKENIZER.json; one line each, the text as a JSON
// string. For ids no text encodes to (bytes that are not UTF-8, lowercase <0xnn> tokens).
// Usage: node decode_oracle.js TOKENIZER.json IDS...
"use strict";
const fs = require("fs");
const { Tokenizer } = require("@huggingface/tokenizers");

const [tokenizerFile, ...idLists] = process.argv.slice(2);
if (!tokenizerFile || idLists.length === 0) {
  console.error("usage: decode_oracle.js TOKENIZER.json IDS...");
  process.exit(2);
}
const tokenizer = new Tokenizer(JSON.parse(fs.readFileSync(tokenizerFile, "utf8")), { clean_up_tokenization_spaces: false });
for (const ids of idLists) console.log(JSON.stringify(tokenizer.decode(ids.trim().split(/\s+/).map(Number))));
