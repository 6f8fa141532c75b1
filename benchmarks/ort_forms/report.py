#!/usr/bin/python3
"""Markdown tables (stdout) and the raw CSV from time_forms.js's results:
  report.py RESULTS.jsonl OUT.csv
Per pattern and variant: one row per shape (sorted by unfused's one-thread time), one column per form
and thread count with its time relative to unfused (median over rounds of the per-round ratio; below 1
= faster, bold below 0.98); then per pattern a summary per form and thread count: geometric mean, min
and max of the ratios, and how many shapes it wins (< 0.98) and loses (> 1.02); then failures and the
operators of ORT's optimized graph of each form (on the pattern's smallest shape)."""
import csv
import json
import math
import sys
from collections import defaultdict

TITLES = {
    "attention": "Encoder self-attention (Q/K/V projections to context, no output projection)",
    "norm": "Residual + LayerNorm / RMSNorm",
    "gelu": "Linear (D -> 4D) + bias + Gelu",
    "rotary": "Rotary embedding of Q (B, S, D) -> (B, N, S, h)",
    "decode": "Decode step attention with a KV cache (one new token, causal, no padding)",
}
SHAPE_KEYS = {  # the shape values that matter for each pattern (the CSV leaves the others empty)
    "attention": ("B", "S", "D", "N", "h"),
    "norm": ("B", "S", "D"),
    "gelu": ("B", "S", "D"),
    "rotary": ("B", "S", "D", "N", "h"),
    "decode": ("B", "S", "D", "N", "h", "P", "Nkv"),
}
CSV_COLUMNS = ("pattern", "form", "variant", "B", "S", "D", "N", "h", "P", "Nkv", "threads", "ms", "ratio")
WIN, LOSS = 0.98, 1.02


def cell(ratio):
    if ratio is None:
        return "fail"
    return f"**{ratio:.2f}**" if ratio < WIN else f"{ratio:.2f}"


def main():
    results = [json.loads(line) for line in open(sys.argv[1])]
    threads = sorted({r["threads"] for r in results})
    # (pattern, variant) -> shape id -> threads -> result, in order of appearance
    cases = defaultdict(lambda: defaultdict(dict))
    for r in results:
        cases[(r["pattern"], r["variant"])][r["id"]][r["threads"]] = r

    with open(sys.argv[2], "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(CSV_COLUMNS)
        for r in results:
            keys = SHAPE_KEYS[r["pattern"]]
            shape = [r["shape"][k] if k in keys else "" for k in ("B", "S", "D", "N", "h", "P", "Nkv")]
            for form in r["forms"]:
                out.writerow([r["pattern"], form["name"], r["variant"], *shape, r["threads"], f"{form['ms']:.4f}",
                              f"{form['ratio']:.4f}"])

    others = [r["other"] for r in results if r["other"] is not None]
    busy = sum(x > 0.25 for x in others)
    print(f"Other processes' CPU use while the forms were timed: median {sorted(others)[len(others) // 2]:.2f} cores, "
          f"max {max(others):.2f}; above 0.25 cores in {busy} of {len(others)} case × thread count measurements "
          "(column 'other', 1T / 2T: there the ratios are noisier, the 2-thread ones most, the machine having 2 cores).")
    for pattern in dict.fromkeys(p for p, _ in cases):
        print(f"\n### {pattern}: {TITLES[pattern]}\n")
        keys = SHAPE_KEYS[pattern]
        summary = defaultdict(list)  # (variant, form, threads) -> ratios, None for a failure
        failures, ops = {}, {}
        for (p, variant), shapes in cases.items():
            if p != pattern:
                continue
            forms = list(dict.fromkeys(f["name"] for by_t in shapes.values() for r in by_t.values()
                                       for f in r["forms"] + [{"name": x["form"]} for x in r["failures"]]))
            forms = ["unfused"] + [f for f in forms if f != "unfused"]
            print(f"**{variant}** (ratio to unfused; unfused in ms)\n")
            header = (list(keys) + ["other"] + [f"unfused ms {t}T" for t in threads]
                      + [f"{f} {t}T" for f in forms[1:] for t in threads])
            print("| " + " | ".join(header) + " |")
            print("|" + "---:|" * len(header))

            def unfused_ms(by_t):
                r = by_t.get(threads[0])
                return r["forms"][0]["ms"] if r and r["forms"] else math.inf

            for sid, by_t in sorted(shapes.items(), key=lambda kv: unfused_ms(kv[1])):
                any_r = next(iter(by_t.values()))
                row = [str(any_r["shape"][k]) for k in keys]
                ratio = {}
                for t, r in by_t.items():
                    for form in r["forms"]:
                        ratio[(form["name"], t)] = form["ratio"]
                    for x in r["failures"]:
                        failures.setdefault((variant, x["form"], x["error"]), []).append(f"{sid} {t}T")
                    ops.update({(variant, k): v for k, v in r["ops"].items()})
                row.append(" / ".join(f"{by_t[t]['other']:.1f}" if t in by_t and by_t[t]["other"] is not None else "-"
                                      for t in threads))
                for t in threads:
                    r = by_t.get(t)
                    row.append(f"{r['forms'][0]['ms']:.3f}" if r and r["forms"] else "fail")
                for form in forms[1:]:
                    for t in threads:
                        value = ratio.get((form, t))
                        row.append(cell(value))
                        summary[(variant, form, t)].append(value)
                print("| " + " | ".join(row) + " |")
            print()

        print(f"Summary over shapes (geometric mean, min, max of the ratio; shapes won < {WIN} / lost > {LOSS} of "
              "those measured):\n")
        header = ["variant", "form"] + [f"{x} {t}T" for t in threads for x in ("geomean", "min", "max", "won/lost")]
        print("| " + " | ".join(header) + " |")
        print("|---|---|" + "---:|" * (len(header) - 2))
        for variant, form in dict.fromkeys((v, f) for v, f, _ in summary):
            row = [variant, form]
            for t in threads:
                values = [x for x in summary[(variant, form, t)] if x is not None]
                failed = len(summary[(variant, form, t)]) - len(values)
                if not values:
                    row += ["fail"] * 4
                    continue
                geomean = math.exp(sum(math.log(x) for x in values) / len(values))
                won, lost = sum(x < WIN for x in values), sum(x > LOSS for x in values)
                row += [f"{geomean:.3f}", f"{min(values):.2f}", f"{max(values):.2f}",
                        f"{won}/{lost} of {len(values)}" + (f" ({failed} failed)" if failed else "")]
            print("| " + " | ".join(row) + " |")
        if failures:
            print("\nFailures (ORT's message):\n")
            for (variant, form, error), where in failures.items():
                print(f"- {variant} / {form} ({len(where)}×: {', '.join(where[:4])}{', ...' if len(where) > 4 else ''}): `{error}`")
        if ops:
            print("\nORT's optimized graph of each form (level all, on the smallest shape; probes left out):\n")
            print("| variant | form | operators |\n|---|---|---|")
            for (variant, form), listing in ops.items():
                print(f"| {variant} | {form} | {listing.replace(',', ', ')} |")


if __name__ == "__main__":
    main()
