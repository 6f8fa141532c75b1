#!/usr/bin/env python3
"""tests/COVERAGE.md from llvm-cov's JSON export (scripts/coverage.sh).

  coverage_report.py COVERAGE_JSON EXCEPTIONS_TXT [CTEST_ARGS]

Per top-level folder (evaluator/, ops/, tools/, python/, and tools/optimize/ and ops/contrib/, which
have a branch floor of their own), the lines and branches covered; whether those two folders reach
90% of their branches; every file under 80% of its lines with its listed reason, or as unexplained;
and, for the next tests, the files of the two folders under 90% of their branches.
"""
import datetime
import json
import os
import subprocess
import sys

LINE_FLOOR = 80.0
BRANCH_FLOOR = 90.0
BRANCH_FLOORED = ("tools/optimize/", "ops/contrib/")
GROUPS = ["evaluator/", "ops/", "ops/contrib/", "tools/", "tools/optimize/", "python/"]
ROOTS = ("evaluator/", "ops/", "tools/", "python/")


def source_files(export):
    """The repository's own sources in `llvm-cov export -summary-only`, by path from the root."""
    files = {}
    for f in export["data"][0]["files"]:
        # ccache's CCACHE_BASEDIR makes the paths relative to each build folder (build-x/../tools/..,
        # build-x/tests/../../tools/..), so a header included from two folders comes twice: it counts
        # once, as its better-covered copy (a lower bound of the two copies' union).
        name = os.path.relpath(os.path.normpath(f["filename"]), os.getcwd())
        if name.startswith(ROOTS):
            s = f["summary"]
            row = {"filename": name, "line_covered": s["lines"]["covered"], "line_total": s["lines"]["count"],
                   "branch_covered": s["branches"]["covered"], "branch_total": s["branches"]["count"]}
            if name not in files or row["line_covered"] > files[name]["line_covered"]:
                files[name] = row
    return list(files.values())


def pct(covered, total):
    return 100.0 * covered / total if total else 100.0


def main():
    files = source_files(json.load(open(sys.argv[1])))
    reasons = {}
    for line in open(sys.argv[2], encoding="utf-8"):
        line = line.strip()
        if line and not line.startswith("#"):
            path, _, why = line.partition(":")
            reasons[path.strip()] = why.strip()
    ctest_args = sys.argv[3] if len(sys.argv) > 3 else ""
    commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True).stdout.strip()
    out = ["# Test coverage", "",
           f"Written by scripts/coverage.sh at refeval {commit}, "
           f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC: "
           + (f"ctest `{ctest_args}`" if ctest_args else "the whole ctest suite") + " on a",
           "build with clang's source-based coverage, counted by llvm-cov (a branch is one condition of an if,",
           "while, for, ?:, && or ||, once true and once false). Floors: every file 80% of its lines;",
           "the folders tools/optimize/ and ops/contrib/ 90% of their branches.", "",
           "| folder | files | lines | line coverage | branches | branch coverage |",
           "|---|--:|--:|--:|--:|--:|"]
    for group in GROUPS:
        sel = [f for f in files if f["filename"].startswith(group)]
        lc, lt = sum(f["line_covered"] for f in sel), sum(f["line_total"] for f in sel)
        bc, bt = sum(f["branch_covered"] for f in sel), sum(f["branch_total"] for f in sel)
        out.append(f"| {group} | {len(sel)} | {lt} | {pct(lc, lt):.1f}% | {bt} | {pct(bc, bt):.1f}% |")
    lc, lt = sum(f["line_covered"] for f in files), sum(f["line_total"] for f in files)
    bc, bt = sum(f["branch_covered"] for f in files), sum(f["branch_total"] for f in files)
    out.append(f"| all | {len(files)} | {lt} | {pct(lc, lt):.1f}% | {bt} | {pct(bc, bt):.1f}% |")
    out += ["", "## Branch floors (per folder)", ""]
    for group in BRANCH_FLOORED:
        sel = [f for f in files if f["filename"].startswith(group)]
        share = pct(sum(f["branch_covered"] for f in sel), sum(f["branch_total"] for f in sel))
        verdict = "meets" if share >= BRANCH_FLOOR else "**below**"
        out.append(f"- {group}: {share:.1f}% of branches, {verdict} the {BRANCH_FLOOR:.0f}% floor")
    under = []
    for f in sorted(files, key=lambda f: f["filename"]):
        lines = pct(f["line_covered"], f["line_total"])
        if lines < LINE_FLOOR:
            under.append((f["filename"], f"{lines:.1f}%", reasons.get(f["filename"], "**unexplained**")))
    out += ["", f"## Files under the line floor ({len(under)} of {len(files)})", ""]
    if under:
        out += ["| file | lines | reason |", "|---|---|---|"]
        out += [f"| {n} | {s} | {r} |" for n, s, r in under]
    else:
        out.append("None.")
    # Not a floor: where the next branch tests are most needed.
    weak = [(f["filename"], pct(f["branch_covered"], f["branch_total"]), f["branch_total"] - f["branch_covered"])
            for f in sorted(files, key=lambda f: f["filename"])
            if f["filename"].startswith(BRANCH_FLOORED) and pct(f["branch_covered"], f["branch_total"]) < BRANCH_FLOOR]
    out += ["", f"## Files of {' and '.join(BRANCH_FLOORED)} under {BRANCH_FLOOR:.0f}% of branches ({len(weak)})", "",
            "Not a floor (the floor is the folder's), but where the next tests are most needed.", ""]
    if weak:
        out += ["| file | branches | branches never taken |", "|---|--:|--:|"]
        out += [f"| {n} | {b:.1f}% | {u} |" for n, b, u in weak]
    else:
        out.append("None.")
    print("\n".join(out))


if __name__ == "__main__":
    main()
