#!/usr/bin/env python3
"""Suggests expected-failure lines from `refeval test --json FILE` results.

Only failures whose cause is mechanical are suggested: an operator refeval does not implement
yet ("unknown operator"), tagged not-implemented. Every other failure is printed to stderr for a
person to fix or to review into tests/conformance/expected_failures.txt with a reason a user
would accept. Usage: suggest_expected_failures.py RESULTS.json [RESULTS.json ...]
"""
import json
import re
import sys

unknown = re.compile(r"\(([\w.]+:)?(\w+)\): unknown operator")
for path in sys.argv[1:]:
    for r in json.load(open(path)):
        if r["status"] not in ("failed", "expected-failure"):
            continue
        m = unknown.search(r["reason"])
        if m:
            print(f"{r['name']}\tnot-implemented: operator {m.group(2)} is not implemented yet\tfails: {m.group(0)}")
        else:
            print(f"needs review: {r['name']}: {r['reason']}", file=sys.stderr)
