#!/usr/bin/env python3
"""Every error message of the evaluator and the model readers is produced by a test.

Reads the message templates in evaluator/ (model loading, the .onnx/.pb/.npy readers, planning,
feeds, the run loop, dumps, the debugger's addresses), tools/tokenizer/ (the tokenizer.json reader
and the tokenizer's input checks) and tools/profile/ (the profile JSON reader and its report
options): the string literals passed to fail_model / fail_input / fail_runtime / fail_usage,
throw Error(...), a node's fail(...), the tokenizer's fail_at(where, ...) and the feed check's
mismatch(...), adjacent literals and `"..." + value` joined, each {} of a fmt template standing for
any text. Then collects every message the tests make, with REFEVAL_ERROR_LOG (each refeval::Error
appended to a file when it is constructed): the unit tests (refeval_tests), the fuzz targets on
their seed corpora and crash regressions (tests/fuzz, no random mutations: only inputs someone chose),
and the CLI tests that assert error lines (cli, cli-diagnostics, cli-debug-verbs, cli-profile-report).
Not cli-tokenize, whose comparisons with tokenizers.js take minutes (cli-diagnostics has a broken
tokenizer.json for each of the reader's messages), nor the ONNX backend suites (1 s for the node
suite, but not one error: valid models, their expected failures skipped). A message given at
several places counts once, when any of them is produced. Prints the messages no test produces.
Exits 1 when one of them is not in the reviewed list tests/evaluator/errors_untested.txt (a new
message without a test), or when a listed one is now produced or gone from the code (take it off
the list). --write-list rewrites the list without its reviewed comments; --times prints what each
run of tests costs (about 40 s in all on 2 cores, 30 of them the unit tests).

The operators' own checks (ops/, some 800 calls) are not in scope: each kernel validates its
inputs and attributes, and reaching each check takes a purpose-built malformed node; the ONNX
backend suites run valid nodes only. The scope here is what every model and every input file
passes through, where a user's mistake (a wrong feed, a corrupt file, a bad tokenizer.json) lands.

  tests/evaluator/errors.py BUILD_DIR SOURCE_DIR [--write-list] [--times]
"""
import glob
import os
import re
import subprocess
import sys
import tempfile
import time

SCOPE = ["evaluator/**/*.cc", "evaluator/**/*.h", "tools/tokenizer/*.cc", "tools/tokenizer/*.h",
         "tools/profile/*.cc", "tools/profile/*.h"]
CALL = re.compile(r"(?<![\w.:])(?:fail_model|fail_input|fail_runtime|fail_usage|fail_at|fail|mismatch)\(|"
                  r"ctx\.fail\(|throw Error\(")
# Helpers whose argument is only part of the message: the rest of it around the argument's text.
WRAPPERS = {"mismatch(": "input '{}': expected {} but got {} ({})"}
LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')
ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "'": "'"}


def unescape(literal):
    return re.sub(r"\\(.)", lambda m: ESCAPES.get(m.group(1), m.group(1)), literal)


def balanced(text, start):
    """The text from start up to the parenthesis that closes the one just before start."""
    depth, i = 1, start
    while i < len(text) and depth:
        c = text[i]
        if c == '"':
            i = LITERAL.match(text, i).end()
            continue
        if c == "'":
            i = text.index("'", i + 2) + 1  # a char literal, '\'' aside (none in scope)
            continue
        depth += c in "([{"
        depth -= c in ")]}"
        i += 1
    return text[start:i - 1]


def split_top(text, sep):
    """text split at sep where it is not nested in brackets or a literal."""
    parts, depth, i, last = [], 0, 0, 0
    while i < len(text):
        c = text[i]
        if c == '"':
            i = LITERAL.match(text, i).end()
            continue
        if c == "'" and i + 2 < len(text):
            i = text.index("'", i + 2) + 1
            continue
        depth += c in "([{"
        depth -= c in ")]}"
        if depth == 0 and c == sep:
            parts.append(text[last:i])
            last = i + 1
        i += 1
    return parts + [text[last:]]


def literals_only(text):
    """The joined text of adjacent literals, or None when text is not only literals."""
    text = text.strip()
    pos, parts = 0, []
    while pos < len(text):
        m = LITERAL.match(text, pos)
        if not m:
            return None
        parts.append(m.group(1))
        pos = m.end()
        while pos < len(text) and text[pos] in " \n":
            pos += 1
    return "".join(parts) if parts else None


def template_of(expr):
    """A fmt-style template ({} for any text, {{ and }} for braces) for a message expression."""
    out = ""
    for operand in split_top(expr, "+"):
        operand = operand.strip()
        for head in ("fmt::format(", "std::string("):
            if operand.startswith(head) and operand.endswith(")"):
                inner = split_top(balanced(operand, len(head)), ",")[0]
                text = literals_only(inner)
                if text is not None:
                    text = unescape(text)
                    out += text if head == "fmt::format(" else text.replace("{", "{{").replace("}", "}}")
                    break
        else:
            text = literals_only(operand)
            call = re.match(r"[\w:]+\(", operand)
            if text is not None:
                out += unescape(text).replace("{", "{{").replace("}", "}}")
            elif call and operand.endswith(")"):  # a helper such as with_node(node, message)
                # The helper's own text (a node's name) comes first; a template that starts with
                # the message leaves it out, as templates are matched anywhere in a line.
                inner = template_of(split_top(balanced(operand, call.end()), ",")[-1])
                out += ("{}" if out else "") + inner if has_words(inner) else "{}"
            else:
                out += "{}"
    return out


def has_words(template):
    return bool(re.search(r"[A-Za-z]", re.sub(r"\{[^{}]*\}", "", template)))


def messages(src):
    """(file:line, template) for every error message in scope."""
    found = []
    paths = sorted({p for g in SCOPE for p in glob.glob(os.path.join(src, g), recursive=True)})
    for path in paths:
        text = open(path, encoding="utf-8").read()
        for m in CALL.finditer(text):
            args = split_top(balanced(text, m.end()), ",")
            template = template_of(args[-1])  # the message is the last argument of each call form
            if m.group(0) in WRAPPERS:
                template = WRAPPERS[m.group(0)].replace("({})", f"({template})")
            if not has_words(template):
                continue  # no words: a wrapper adding a place to another message, or a variable
            line = text.count("\n", 0, m.start()) + 1
            found.append((f"{os.path.relpath(path, src)}:{line}", template))
    return found


def pattern(template):
    """A regex for the messages a fmt template makes: each {..} stands for any text."""
    out = ""
    for piece in re.split(r"(\{\{|\}\}|\{[^{}]*\})", template):
        if piece in ("{{", "}}"):
            out += re.escape(piece[0])
        elif piece.startswith("{") and piece.endswith("}"):
            out += ".*?"
        else:
            out += re.escape(piece)
    return re.compile(out + "$", re.S)


def produced_messages(build, src, work, times):
    """Every error message the tests construct, as REFEVAL_ERROR_LOG collects them."""
    log = os.path.join(work, "errors.log")
    env = dict(os.environ, REFEVAL_ERROR_LOG=log)
    refeval = os.path.join(build, "refeval")
    shared = os.environ.get("REFEVAL_SHARED_DIR") or cmake_cache(build, "REFEVAL_SHARED_DIR")
    runs = [("unit tests", [os.path.join(build, "tests/refeval_tests")])]
    for target in ("model", "tensor", "npy", "node", "profile", "optimize"):
        runs.append((f"fuzz {target} seeds", [os.path.join(build, f"tests/fuzz_{target}"), "--mutations", "0",
                                               os.path.join(src, "tests/fuzz/corpus", target),
                                               os.path.join(src, "tests/fuzz/regressions", target)]))
    cli = os.path.join(src, "tests/cli")
    runs += [("cli", [os.path.join(cli, "cli_test.sh"), refeval, shared]),
             ("cli-diagnostics", [os.path.join(cli, "diagnostics_test.sh"), refeval, shared]),
             ("cli-debug-verbs", [os.path.join(cli, "debug_verbs_test.sh"), refeval, shared]),
             ("cli-profile-report", [os.path.join(cli, "profile_report_test.sh"), refeval, src])]
    for name, command in runs:
        start = time.monotonic()
        subprocess.run(command, capture_output=True, env=env, cwd=work)
        if times:
            print(f"{name}: {time.monotonic() - start:.1f} s")
    if not os.path.exists(log):
        return set()
    # Split at newlines only: a value name may hold a carriage return or another line break of Unicode's.
    lines = open(log, encoding="utf-8", errors="replace").read().split("\n")
    return {line.replace("\\n", "\n") for line in lines if line}


def cmake_cache(build, key):
    for line in open(os.path.join(build, "CMakeCache.txt"), encoding="utf-8"):
        if line.startswith(key + ":"):
            return line.split("=", 1)[1].strip()
    return ""


def main():
    build, src = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    templates = messages(src)
    with tempfile.TemporaryDirectory() as work:
        produced = produced_messages(build, src, work, "--times" in sys.argv)
    untested = sorted({t for _, t in templates if not any(pattern(t).search(p) for p in produced)})
    listed_path = os.path.join(src, "tests/evaluator/errors_untested.txt")
    if "--write-list" in sys.argv:
        with open(listed_path, "w", encoding="utf-8") as f:
            f.write("# Error messages of the evaluator and the readers no test produces yet (tests/evaluator/errors.py),\n")
            f.write("# reviewed: each wants a test. A new message must come with one, not a line here.\n")
            # (the reviewed notes on unreachable ones are kept by hand: rewrite them after --write-list)
            for t in untested:
                f.write(t.replace("\n", "\\n") + "\n")
    listed = set()
    if os.path.exists(listed_path):
        listed = {l.rstrip("\n").replace("\\n", "\n") for l in open(listed_path, encoding="utf-8")
                  if l.strip() and not l.startswith("#")}
    distinct = {t for _, t in templates}
    new = sorted(set(untested) - listed)
    now_tested = sorted((listed & distinct) - set(untested))
    gone = sorted(listed - distinct)
    print(f"{len(distinct)} error messages, {len(distinct) - len(untested)} produced by a test, "
          f"{len(untested)} not ({len(listed)} listed as such)")
    where = {}
    for w, t in templates:
        where.setdefault(t, w)
    for t in new:
        print(f"NEW, no test produces it ({where[t]}): {t}")
    for t in now_tested:
        print(f"LISTED but produced now (take it off the list): {t}")
    for t in gone:
        print(f"LISTED but no longer in the code (take it off the list): {t}")
    return 1 if new or now_tested or gone else 0


if __name__ == "__main__":
    sys.exit(main())
