#!/usr/bin/env bash
# The documentation against the binary it documents:
# - every verb `refeval --help` lists has a page docs/cli/VERB.md naming every option (long and
#   short) that `refeval VERB --help` prints, and docs/cli/README.md names every global option;
#   no page documents a verb that is gone;
# - every docs/cli page is linked from README.md, and README.md has at most 400 lines;
# - every relative link (and #anchor) of README.md, docs/*.md, docs/cli/*.md and
#   benchmarks/README.md resolves (benchmarks/RESULTS.md may be missing: report.sh writes it);
# - README.md, docs/*.md and docs/cli/*.md are a manual, not a log: no "session" (except ONNX
#   Runtime's own names: InferenceSession, session options, its profile's "Session" events and
#   session_initialization), no "helper", no "issue 12" / "issues #3"; README.md and docs/cli/*.md
#   carry no dates.
# Usage: docs_test.sh REFEVAL SOURCE_DIR
set -u
refeval=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/expect.sh"
cli=$src/docs/cli
readme=$src/README.md

fail() { failed=$((failed + 1)); echo "FAIL: $*"; }
pass() { passed=$((passed + 1)); }

# options HELP_FILE: the options a CLI11 help text prints, one per line: "  -o,--output TEXT ..."
# gives -o and --output. Option lines are indented by exactly two spaces and start with a dash
# (descriptions continue on lines indented further; positionals and verbs start with a letter).
options() { sed -n 's/^  \(-[^ ]*\).*/\1/p' "$1" | tr ',' '\n' | grep -E '^--?[A-Za-z0-9]'; }
# names PAGE OPTION: PAGE names OPTION as a whole word (--input is not found inside --inputs).
names() { grep -qE -- "(^|[^A-Za-z0-9_-])$2([^A-Za-z0-9_-]|\$)" "$1"; }

# 1. Verbs and their options.
if ! "$refeval" --help >"$work/help" 2>&1; then
  fail "refeval --help exits non-zero"
  finish
  exit
fi
verbs=$(sed -n '/^Subcommands:/,${s/^  \([a-z][a-z0-9-]*\)  .*/\1/p}' "$work/help")
check "refeval --help lists verbs" test -n "$verbs"
for opt in $(options "$work/help"); do
  if names "$cli/README.md" "$opt"; then pass; else fail "global option $opt is not documented in docs/cli/README.md"; fi
done
for verb in $verbs; do
  page=$cli/$verb.md
  if [[ ! -f $page ]]; then
    fail "refeval $verb: docs/cli/$verb.md is missing"
    continue
  fi
  if ! "$refeval" "$verb" --help >"$work/$verb.help" 2>&1; then
    fail "refeval $verb --help exits non-zero"
    continue
  fi
  count=0
  for opt in $(options "$work/$verb.help"); do
    count=$((count + 1))
    if names "$page" "$opt"; then pass; else fail "refeval $verb: option $opt is not documented in docs/cli/$verb.md"; fi
  done
  check "refeval $verb --help prints options" test "$count" -gt 0
done
for page in "$cli"/*.md; do
  name=$(basename "$page" .md)
  [[ $name == README ]] && continue
  if grep -qxF -- "$name" <<<"$verbs"; then pass; else fail "docs/cli/$name.md documents no verb refeval --help lists"; fi
done

# 2. The README: every docs/cli page linked, at most 400 lines.
for page in "$cli"/*.md; do
  rel=docs/cli/$(basename "$page")
  if grep -qE -- "\]\($rel(#[^)]*)?\)" "$readme"; then pass; else fail "README.md does not link $rel"; fi
done
lines=$(wc -l <"$readme")
check "README.md has at most 400 lines (has $lines)" test "$lines" -le 400

# 3. Relative links and anchors. slugs FILE: the GitHub anchors of FILE's headings.
slugs() {
  sed -n 's/^#\{1,6\} \(.*\)/\1/p' "$1" | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9 _-]//g; s/ /-/g'
}
pages=("$readme" "$src"/docs/*.md "$cli"/*.md "$src/benchmarks/README.md")
for file in "${pages[@]}"; do
  [[ -f $file ]] || continue
  dir=$(dirname "$file")
  shown=${file#"$src"/}
  while IFS= read -r target; do
    case $target in http://* | https://* | mailto:*) continue ;; esac
    path=${target%%#*}
    anchor=
    [[ $target == *"#"* ]] && anchor=${target#*#}
    resolved=$file
    [[ -n $path ]] && resolved=$dir/$path
    if [[ ! -e $resolved ]]; then
      [[ $(realpath -m "$resolved") == $(realpath -m "$src/benchmarks/RESULTS.md") ]] && continue
      fail "$shown: the link $target leads nowhere"
      continue
    fi
    if [[ -n $anchor && $resolved == *.md ]] && ! slugs "$resolved" | grep -qxF -- "$anchor"; then
      fail "$shown: the link $target names no heading of ${resolved#"$src"/}"
      continue
    fi
    pass
  done < <(grep -oE '\]\([^) ]+\)' "$file" | sed 's/^](\(.*\))$/\1/')
done

# 4. A manual, not a log.
for file in "$readme" "$src"/docs/*.md "$cli"/*.md; do
  shown=${file#"$src"/}
  found=$(sed -E 's/InferenceSession|SessionOptions|session_initialization|"Session"|`Session`//g; s/session[ _]options//gI' "$file" |
          grep -niE 'session|helper|issues? #?[0-9]')
  if [[ -z $found ]]; then pass; else fail "$shown narrates dated work:"; echo "$found" | sed 's/^/    /' | head -5; fi
done
for file in "$readme" "$cli"/*.md; do
  shown=${file#"$src"/}
  found=$(grep -nE '\b20[0-9]{2}-[01][0-9]-[0-3][0-9]\b|\bUTC\b' "$file")
  if [[ -z $found ]]; then pass; else fail "$shown carries dates:"; echo "$found" | sed 's/^/    /' | head -5; fi
done

finish
