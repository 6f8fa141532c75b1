#!/usr/bin/env python3
"""Every reason the optimizer gives for not fusing is produced by a test.

Reads the refusal messages in tools/optimize (ctx.refuse(...), refuse(sm, ...), why = ...,
throw Refusal{...}, the look-alike reasons of patterns) and collects every reason the tests give,
with REFEVAL_EXPLAIN_LOG (each Explain::add appended to a file): the optimizer's unit tests
(refeval_tests, tests/tools/optimize), `refeval optimize --explain` (both targets) on every
fixture of tests/data/optimize and tests/data/generate/seq2seq_*, on the models of
refeval_test_models (cli-optimize's look-alikes) and on the look-alike models of
tests/data/optimize/lookalikes (also with --forms all, which the skip-layer-norm passes need). Prints the messages no test produces. Exits 1
when one of them is not in the reviewed list tests/tools/optimize/refusals_untested.txt (a new
reason without a look-alike), or when a listed one is now produced (take it off the list).

  tests/tools/optimize/refusals.py BUILD_DIR SOURCE_DIR [--write-list]
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

CALL = re.compile(r'(?:ctx\.refuse\(|refuse\(sm, |why = |throw Refusal\{|look_alike = |Pattern\{[^;]*?\{\}, "[a-z]+", |return fmt::format\(|return (?="))')
LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')
# Messages the extractor finds that --explain never prints: the attention pass's check that it left
# the graph whole, a runtime error asking for a report; and the layer-norm pass's refusal of the
# match without beta when an Add of beta follows, which yields to the deeper match with that Add
# (the same checks, so it always fuses; norm_fusions_test's LayerNorms with beta fail without it).
NOT_REFUSALS = {"node '{}' reading '{}', which nothing computes", "the Add {} after it adds beta '{}', fused with it"}


def messages(src):
    """(file:line, template) for every refusal message in tools/optimize."""
    found = []
    for path in sorted(glob.glob(os.path.join(src, "tools/optimize/**/*.cc"), recursive=True)):
        text = open(path, encoding="utf-8").read()
        for m in CALL.finditer(text):
            rest = text[m.end():m.end() + 600]
            rest = rest[len("fmt::format("):] if rest.startswith("fmt::format(") else rest
            parts, pos = [], 0
            while True:  # adjacent string literals make one message
                lit = LITERAL.match(rest, pos)
                if not lit:
                    break
                parts.append(lit.group(1))
                pos = lit.end()
                while pos < len(rest) and rest[pos] in " \n":
                    pos += 1
            if not parts:
                continue
            if rest[pos:].lstrip().startswith("+"):  # "..." + a value
                parts.append("{}")
            if m.group(0).startswith("return") and " " not in "".join(parts).replace("{}", ""):
                continue  # a returned name or key, not a sentence
            if "".join(parts) in NOT_REFUSALS:
                continue
            line = text.count("\n", 0, m.start()) + 1
            found.append((f"{os.path.relpath(path, src)}:{line}", "".join(parts)))
    return found


def pattern(template):
    """A regex for the message a template formats: each {..} stands for any text."""
    out = ""
    for piece in re.split(r"(\{[^{}]*\})", template.replace('\\"', '"').replace("\\n", "\n")):
        out += ".*?" if piece.startswith("{") and piece.endswith("}") else re.escape(piece)
    return re.compile(out + "$")


def fixtures(src, models_dir):
    roots = glob.glob(os.path.join(src, "tests/data/optimize/*/model.onnx"))
    roots += glob.glob(os.path.join(src, "tests/data/generate/seq2seq_*/*.onnx"))
    roots += glob.glob(os.path.join(models_dir, "*.onnx"))
    roots += glob.glob(os.path.join(src, "tests/data/optimize/lookalikes/*.onnx"))
    return sorted(roots)


def produced_reasons(build, src, work):
    """Every reason the tests give, as REFEVAL_EXPLAIN_LOG collects them."""
    log = os.path.join(work, "explain.log")
    env = dict(os.environ, REFEVAL_EXPLAIN_LOG=log)
    models = os.path.join(work, "models")
    os.makedirs(models, exist_ok=True)
    subprocess.run([os.path.join(build, "tests/refeval_test_models"), models], capture_output=True, env=env)
    subprocess.run([os.path.join(build, "tests/refeval_tests"), "--source-file=*tools/optimize*"], capture_output=True, env=env)
    out = os.path.join(work, "out.onnx")
    for model in fixtures(src, models):
        runs = [["--target", "ort"], ["--target", "onnx"]]
        if os.sep + "lookalikes" + os.sep in model:
            runs.append(["--target", "ort", "--forms", "all"])
        for options in runs:
            subprocess.run([os.path.join(build, "refeval"), "optimize", model, "-o", out, "--explain", *options],
                           capture_output=True, env=env)
    produced = set(open(log, encoding="utf-8", errors="replace").read().splitlines()) if os.path.exists(log) else set()
    # The --model-type warning is a line on stderr, not an --explain one (cli-optimize-encoders checks it)
    bert = os.path.join(src, "tests/data/optimize/hf_bert_opset17/model.onnx")
    r = subprocess.run([os.path.join(build, "refeval"), "optimize", bert, "-o", out, "--model-type", "gpt2"], capture_output=True, text=True)
    produced.update(line.removeprefix("refeval: warning: ") for line in r.stderr.splitlines())
    return produced


def main():
    build, src = sys.argv[1], sys.argv[2]
    write = "--write-list" in sys.argv
    templates = messages(src)
    with tempfile.TemporaryDirectory() as work:
        produced = produced_reasons(build, src, work)
    untested = []
    for where, template in templates:
        rx = pattern(template)
        if not any(rx.search(p) for p in produced):
            untested.append(template)
    listed_path = os.path.join(src, "tests/tools/optimize/refusals_untested.txt")
    if write:
        with open(listed_path, "w", encoding="utf-8") as f:
            f.write("# Refusal messages of tools/optimize no fixture produces yet (tests/tools/optimize/refusals.py),\n")
            f.write("# reviewed: each wants a look-alike fixture. A new refusal must come with one, not a line here.\n")
            # (the reviewed notes on unreachable ones are kept by hand: rewrite them after --write-list)
            for t in sorted(set(untested)):
                f.write(t + "\n")
    listed = set()
    if os.path.exists(listed_path):
        listed = {l.rstrip("\n") for l in open(listed_path, encoding="utf-8") if l.strip() and not l.startswith("#")}
    new = sorted(set(untested) - listed)
    now_tested = sorted(listed - set(untested))
    print(f"{len(templates)} refusal messages, {len(templates) - len(untested)} produced by a fixture, "
          f"{len(set(untested))} not ({len(listed)} listed as such)")
    for t in new:
        print(f"NEW, no fixture produces it: {t}")
    for t in now_tested:
        print(f"LISTED but produced now (take it off the list): {t}")
    return 1 if new or now_tested else 0


if __name__ == "__main__":
    sys.exit(main())
