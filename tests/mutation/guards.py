#!/usr/bin/env python3
"""Guard schemata: every `if` of the named C++ files made switchable at run time.

A guard is an `if (COND)` whose body leaves early (return, continue, break, or a block ending in
one): the checks a pass makes before it rewrites, a reader before it accepts. Each is rewritten to
`if (refeval_guard(ID, COND))`, where refeval_guard (guard_schema.h, written beside the files)
returns COND, except that the guard named by REFEVAL_GUARD_DROP is never taken: the defect "this
check was forgotten". REFEVAL_GUARD_TRACE names a file to which each process appends the IDs of
the guards it saw taken, so a run of the suite tells which guards any test reaches at all.

One build then judges every guard: run.sh's one-defect-one-build costs a build per defect.

Usage (guards.sh runs these; DIR is its working folder, with src/, trace/ and catalogue.tsv):
  guards.py instrument SRC FILE...  writes the schemata into SRC's files; prints the catalogue, a
                                    TSV of id, file, line, function and condition
  guards.py trace-cases DIR [JOBS]  runs each unit case (doctest) alone, recording the guards it
                                    takes in DIR/trace/cases: a drop then runs only those cases
                                    instead of the whole unit test
  guards.py drop DIR SKIP [ONLY [JOBS]]
                                    drops each guard some test took (of the files ONLY matches,
                                    not those guards_unreached.txt lists), one at a time, running
                                    the unit cases that took it, then the other tests that took it
                                    (fastest first, not those SKIP matches) until one fails, JOBS
                                    guards at once; appends "id CAUGHT|MISSED test file:line" to
                                    results.txt
  guards.py report DIR REVIEWED     the guards no test takes (but those REVIEWED lists as
                                    unreachable, one "file | function | condition | reason" a line) and those
                                    dropped unnoticed; exits 1 if there are any
"""
import glob
import multiprocessing
import multiprocessing.pool
import os
import re
import subprocess
import sys

HEADER = "guard_schema.h"
HEADER_TEXT = r"""// Written by tests/mutation/guards.py into a mutation copy only; never part of the tree.
#pragma once
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <vector>

inline bool refeval_guard(int id, bool taken) {
  static const int dropped = [] {
    const char* v = std::getenv("REFEVAL_GUARD_DROP");
    return v ? std::atoi(v) : -1;
  }();
  static const char* trace = std::getenv("REFEVAL_GUARD_TRACE");
  if (taken && trace) {
    static std::vector<std::atomic<bool>> seen(100000);
    if (id < 100000 && !seen[id].exchange(true)) {
      if (FILE* f = std::fopen(trace, "a")) {
        std::fprintf(f, "%d\n", id);
        std::fclose(f);
      }
    }
  }
  return id == dropped ? false : taken;
}
"""

# A declaration in a condition (`if (auto x = f())`, `if (const T* p = ...)`) cannot be wrapped.
DECLARATION = re.compile(r"^\s*(?:const\s+)?[\w:]+(?:\s*<[^()]*>)?\s*[*&]*\s+[*&]*\w+\s*(?:=[^=]|\{)")
EXIT = re.compile(r"\s*(?:return\b|continue\s*;|break\s*;|throw\b|fail\w*\s*\()")


def matching(text, start, open_ch="(", close_ch=")"):
    """Index of the bracket closing the one at start, skipping strings and characters."""
    depth, i = 0, start
    while i < len(text):
        c = text[i]
        if c in "\"'":
            q, i = c, i + 1
            while i < len(text) and text[i] != q:
                i += 2 if text[i] == "\\" else 1
        elif c == open_ch:
            depth += 1
        elif c == close_ch:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def block_leaves(text, brace):
    """True if the block opening at brace ends with a return, continue, break or throw."""
    end = matching(text, brace, "{", "}")
    if end < 0:
        return False
    body = text[brace + 1:end].rstrip()
    last = body.rfind(";", 0, len(body) - 1)
    tail = body[last + 1:] if body.endswith(";") else ""
    return bool(EXIT.match(tail)) or bool(EXIT.match(body))


def instrument(text, path, next_id):
    out, pos, found = [], 0, []
    code = strip_comments(text)
    lines = code.split("\n")
    for m in re.finditer(r"\bif\s*\(", code):
        if code[max(0, m.start() - 9):m.start()].strip().endswith("constexpr"):
            continue
        open_paren = m.end() - 1
        close = matching(code, open_paren)
        if close < 0:
            continue
        cond = text[open_paren + 1:close]
        if ";" in cond or DECLARATION.match(cond) or "\n#" in cond:
            continue
        rest = code[close + 1:]
        stripped = rest.lstrip()
        if stripped.startswith("{"):
            if not block_leaves(code, close + 1 + (len(rest) - len(stripped))):
                continue
        elif not EXIT.match(rest):
            continue
        line = text.count("\n", 0, m.start()) + 1
        found.append((next_id, path, line, enclosing_function(lines, line), " ".join(cond.split())))
        out.append(text[pos:open_paren + 1])
        out.append(f"refeval_guard({next_id}, static_cast<bool>({cond}))")
        pos = close
        next_id += 1
    out.append(text[pos:])
    return "".join(out), found, next_id


HEADER_LINE = re.compile(r"^\s*(?:[\w:<>*&,]+\s+)+[*&]?([\w:~]+)\(.*\)\s*(?:const\s*)?(?:override\s*)?\{\s*$")
CONTROL = ("if", "for", "while", "switch", "return", "else", "do", "catch")


def enclosing_function(lines, line):
    """The name of the function around line `line` (1-based) of `lines`: the nearest header before
    it that opens a function's body (ending in "{", perhaps over several lines), for a key that
    survives edits elsewhere."""
    for i in range(line - 2, -1, -1):
        if not lines[i].rstrip().endswith("{") or ")" not in lines[i]:
            continue
        header, k = lines[i], i
        while header.count("(") < header.count(")") and k > 0:  # a header over several lines
            k -= 1
            header = lines[k] + " " + header.strip()
        m = HEADER_LINE.match(header)
        if m and header.split()[0] not in CONTROL and "=" not in header.split("(")[0]:
            return m.group(1).split("::")[-1]
    return "?"


def strip_comments(text):
    """The text with comments blanked (same length), so brackets in comments do not count."""
    chars = list(text)
    i = 0
    while i < len(text):
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = len(text) if j < 0 else j
            chars[i:j] = " " * (j - i)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = len(text) if j < 0 else j + 2
            chars[i:j] = [c if c == "\n" else " " for c in text[i:j]]
            i = j
        elif text[i] in "\"'":
            q, i = text[i], i + 1
            while i < len(text) and text[i] != q:
                i += 2 if text[i] == "\\" else 1
            i += 1
        else:
            i += 1
    return "".join(chars)


def cmd_instrument(root, files):
    header = os.path.join(root, HEADER)
    with open(header, "w") as f:
        f.write(HEADER_TEXT)
    next_id = 0
    print("id\tfile\tline\tfunction\tcondition")
    for rel in files:
        path = os.path.join(root, rel)
        with open(path) as f:
            text = f.read()
        new, found, next_id = instrument(text, rel, next_id)
        if found:
            with open(path, "w") as f:
                f.write(f'#include "{header}"\n' + new)
        for row in found:
            print("\t".join(map(str, row)))


def traces(root):
    """Per guard id, the tests that took it; per test, its duration in seconds."""
    taken, seconds = {}, {}
    for log in glob.glob(os.path.join(root, "trace", "*.log")):
        test = os.path.basename(log)[:-4]
        m = re.search(r"Total Test time \(real\) =\s*([\d.]+)", open(log).read())
        seconds[test] = float(m.group(1)) if m else 0.0
        for line in open(log[:-4] + ".txt"):
            if line.strip():
                taken.setdefault(int(line), set()).add(test)
    return taken, seconds


def unit_binary(root):
    return os.path.join(root, "src", "build", "tests", "refeval_tests")


def escaped(case):
    """A doctest case name as -tc= takes it: commas and backslashes escaped, so it matches itself."""
    return case.replace("\\", "\\\\").replace(",", "\\,")


def cmd_trace_cases(root, jobs=2):
    """Runs each unit case alone, recording the guards it takes (trace/cases/N.txt; names.txt)."""
    binary = unit_binary(root)
    out = os.path.join(root, "trace", "cases")
    os.makedirs(out, exist_ok=True)
    listing = subprocess.run([binary, "--list-test-cases"], capture_output=True, text=True, cwd=os.path.dirname(binary)).stdout
    names = [n for n in listing.splitlines() if n and not n.startswith(("[doctest]", "====="))]
    with open(os.path.join(out, "names.txt"), "w") as f:
        f.write("\n".join(names) + "\n")

    def one(i):
        env = dict(os.environ, REFEVAL_GUARD_TRACE=os.path.join(out, f"{i}.txt"))
        subprocess.run([binary, "-tc=" + escaped(names[i])], cwd=os.path.dirname(binary), env=env, capture_output=True)

    with multiprocessing.pool.ThreadPool(int(jobs)) as pool:
        pool.map(one, range(len(names)))


def unit_cases(root):
    """Per guard id, the unit cases that took it (empty when the cases were not traced)."""
    out = os.path.join(root, "trace", "cases")
    if not os.path.exists(os.path.join(out, "names.txt")):
        return {}
    names = open(os.path.join(out, "names.txt")).read().split("\n")
    cases = {}
    for path in glob.glob(os.path.join(out, "*.txt")):
        stem = os.path.basename(path)[:-4]
        if stem.isdigit():
            for line in open(path):
                if line.strip():
                    cases.setdefault(int(line), []).append(names[int(stem)])
    return cases


def catalogue(root):
    return [line.rstrip("\n").split("\t") for line in open(os.path.join(root, "catalogue.tsv"))][1:]


def drop_one(args):
    """Switches guard gid off and runs the unit cases that took it, then the other tests that took
    it, fastest first, until one fails."""
    gid, cases, tests, root = args
    env = dict(os.environ, REFEVAL_GUARD_DROP=str(gid))
    binary = unit_binary(root)
    if cases:
        # A drop that loops forever is caught as ctest's timeout would catch it.
        try:
            run = subprocess.run([binary, "-tc=" + ",".join(escaped(c) for c in cases)], cwd=os.path.dirname(binary), env=env,
                                 capture_output=True, timeout=600)
        except subprocess.TimeoutExpired:
            return gid, "CAUGHT", "unit (timed out)"
        if run.returncode != 0:
            return gid, "CAUGHT", "unit"
    for test in tests:
        run = subprocess.run(["ctest", "--test-dir", os.path.join(root, "src", "build"), "-R", f"^{test}$", "--timeout", "600"],
                             env=env, capture_output=True)
        if run.returncode != 0:
            return gid, "CAUGHT", test
    return gid, "MISSED", "-"


def cmd_drop(root, skip, only=".", jobs=1):
    taken, seconds = traces(root)
    cases = unit_cases(root)
    results = os.path.join(root, "results.txt")
    done = {int(line.split()[0]) for line in open(results)} if os.path.exists(results) else set()
    # A listed guard's drop is known to change no result: running its tests again proves nothing.
    listed = reviewed(os.path.join(os.path.dirname(os.path.abspath(__file__)), "guards_unreached.txt"))
    where = {}
    work = []
    for gid, path, line, function, cond in catalogue(root):
        gid = int(gid)
        if gid not in taken or gid in done or not re.search(only, path) or (path, function, " ".join(cond.split())) in listed:
            continue
        where[gid] = f"{path}:{line}"
        # With the unit cases traced, they stand for the whole unit test, which takes a minute.
        tests = [t for t in taken[gid] if not re.search(skip, t) and not (cases and t == "unit")]
        work.append((gid, cases.get(gid, []), sorted(tests, key=lambda t: seconds[t]), root))
    # Each drop runs one test at a time, most of them one process: jobs > 1 fills more cores.
    with multiprocessing.Pool(int(jobs)) as pool:
        for gid, verdict, by in pool.imap_unordered(drop_one, work):
            with open(results, "a") as f:
                f.write(f"{gid} {verdict} {by} {where[gid]}\n")
            print(f"{where[gid]} {verdict} {by}", flush=True)


def reviewed(path):
    """(file, function, condition) -> reason, from the reviewed list of guards shown unreachable."""
    listed = {}
    for line in open(path):
        if line.strip() and not line.startswith("#"):
            file, function, cond, reason = (x.strip() for x in line.split(" | ", 3))
            listed[(file, function, " ".join(cond.split()))] = reason
    return listed


def cmd_report(root, reviewed_path):
    rows = catalogue(root)
    taken, _ = traces(root)
    listed = reviewed(reviewed_path)
    verdict = {}
    results = os.path.join(root, "results.txt")
    if os.path.exists(results):
        for line in open(results):
            gid, v = line.split()[:2]
            verdict[int(gid)] = v
    key = lambda r: (r[1], r[3], r[4])  # file, function, condition
    reached = [r for r in rows if int(r[0]) in taken]
    unreachable = [r for r in rows if int(r[0]) not in taken and key(r) in listed]
    unreached = [r for r in rows if int(r[0]) not in taken and key(r) not in listed]
    # A listed guard that some test takes is one whose drop changes no result (the reason says why).
    missed = [r for r in rows if verdict.get(int(r[0])) == "MISSED" and key(r) not in listed]
    stale = [k for k in listed if k not in {key(r) for r in rows}]
    print(f"{len(rows)} guards: {len(reached)} taken by some test, {len(unreachable)} listed unreachable with a reason; "
          f"{sum(v == 'CAUGHT' for v in verdict.values())} of {len(verdict)} dropped were caught")
    for title, group in (("never taken by any test", unreached), ("dropped, and no test failed", missed)):
        print(f"\n{title}: {len(group)}")
        for _, f, line, function, cond in group:
            print(f"  {f}:{line} {function}  if ({cond})")
    if stale:
        print(f"\nlisted in {os.path.basename(reviewed_path)} but no longer in the code: {len(stale)}")
        for f, function, cond in stale:
            print(f"  {f} {function}  if ({cond})")
    return 1 if unreached or missed or stale else 0


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "instrument":
        cmd_instrument(sys.argv[2], sys.argv[3:])
    elif 3 <= len(sys.argv) <= 4 and sys.argv[1] == "trace-cases":
        cmd_trace_cases(*sys.argv[2:])
    elif 4 <= len(sys.argv) <= 6 and sys.argv[1] == "drop":
        cmd_drop(*sys.argv[2:])
    elif len(sys.argv) == 4 and sys.argv[1] == "report":
        sys.exit(cmd_report(*sys.argv[2:]))
    else:
        sys.exit(__doc__)
