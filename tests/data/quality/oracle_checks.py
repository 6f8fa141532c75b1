"""What the two quality oracles (lm_figures.py, data_figures.py) share: a list of checks printed one
line each, top-1 agreement judged with one near-tie forgiven, and the scripts' ending (print the
oracle, write it with --json, check refeval's JSON with --refeval and exit 1 when a figure is off)."""
import json
import sys


class Checks:
    """Prints "ok   NAME: TEXT" or "FAIL NAME: TEXT" and keeps the names that failed."""

    def __init__(self):
        self.bad = []

    def line(self, name, ok, text):
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {text}")
        if not ok:
            self.bad.append(name)

    def top1(self, name, oracle, got, count, min_gap, unit):
        """refeval's top-1 agreement `got` (None if absent) against the oracle's over `count` rows or
        positions: equal, or one `unit` apart where the oracle's smallest top-2 gap is under 1e-4."""
        apart = round(abs(got - oracle) * count) if got is not None else None
        near_tie = min_gap < 1e-4
        ok = apart == 0 or (apart == 1 and near_tie)
        note = f" (one {unit} apart: the oracle sees a near-tie, smallest top-2 gap {min_gap:.3g})" if apart == 1 and near_tie else ""
        self.line(name, ok, f"oracle {oracle:.9g} ({round(oracle * count)} of {count} {unit}s), refeval {got}{note}")


def finish(oracle, json_path, refeval_path, check):
    """The oracle printed and written to json_path; with refeval_path, check(refeval's JSON) -> the
    names that failed, and exit 1 when there are any."""
    print("oracle:", json.dumps(oracle))
    if json_path:
        with open(json_path, "w") as f:
            json.dump(oracle, f, indent=1)
    if refeval_path:
        with open(refeval_path) as f:
            bad = check(json.load(f))
        if bad:
            print("differs from the oracle:", ", ".join(bad))
            sys.exit(1)
