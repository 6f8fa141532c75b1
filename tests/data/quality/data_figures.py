#!/usr/bin/python3
"""The numpy half of the oracle of `refeval compare A B --input-set DIR...` (run_sets.js writes both
models' outputs from ONNX Runtime): per graph output, over every set, in float64,
  max_abs        the largest |a - b|;
  cosine_min     the lowest, over sets, cosine similarity of the flattened a and b;
  snr_db_min     the lowest, over sets, 10 log10(sum a^2 / sum (a - b)^2) (inf when equal);
  top1_agreement the fraction of rows (every axis but the last, every set) whose first maximum along
                 the last axis is the same in a and b;
  worst_set      the set of the lowest SNR;
and, given refeval's --json, each of refeval's figures against it:
  data_figures.py OUT_A OUT_B [--refeval REFEVAL.json [--set-names DIR...]] [--json OUT.json]
OUT_A / OUT_B: run_sets.js folders (K/NAME.npy). The tolerances are what two runtimes' float32
arithmetic allows on outputs of magnitude O(1): max_abs within 1e-4 absolute, cosine_min within 1e-6,
snr_db_min within 0.01 dB (both inf when a == b), top1_agreement equal, or one row apart where the
oracle sees a near-tie (two largest values within 1e-4 in a row of a or b); the set count, the output
names and "mode" equal; with --set-names (the --input-set folders, in order), worst_set names the
folder of the lowest SNR (not checked where every set gives inf). Prints one line per figure; exits 1 if any is off."""
import argparse
import math
import os

import numpy as np

from oracle_checks import Checks, finish


def figures(dir_a, dir_b):
    sets = sorted((d for d in os.listdir(dir_a) if d.isdigit()), key=int)
    names = sorted(f[:-4] for f in os.listdir(os.path.join(dir_a, sets[0])) if f.endswith(".npy"))
    outputs = []
    for name in names:
        max_abs, cos, snr, agree, rows, gap = 0.0, [], [], 0, 0, math.inf
        for s in sets:
            a = np.load(os.path.join(dir_a, s, name + ".npy")).astype(np.float64)
            b = np.load(os.path.join(dir_b, s, name + ".npy")).astype(np.float64)
            if a.size == 0:
                continue
            d = a - b
            max_abs = max(max_abs, float(np.abs(d).max()))
            cos.append(float(a.ravel() @ b.ravel() / (np.linalg.norm(a) * np.linalg.norm(b))))
            noise = float((d * d).sum())
            snr.append(math.inf if noise == 0 else 10 * math.log10(float((a * a).sum()) / noise))
            ra, rb = a.reshape(-1, a.shape[-1]), b.reshape(-1, b.shape[-1])
            agree += int((ra.argmax(axis=1) == rb.argmax(axis=1)).sum())
            rows += ra.shape[0]
            if ra.shape[1] > 1:
                two = lambda r: np.diff(np.sort(r, axis=1)[:, -2:], axis=1)[:, 0]  # noqa: E731
                gap = min(gap, float(two(ra).min()), float(two(rb).min()))
        if rows:
            outputs.append({"name": name, "max_abs": max_abs, "cosine_min": min(cos), "snr_db_min": min(snr),
                            "top1_agreement": agree / rows, "rows": rows, "worst_set": int(np.argmin(snr)), "min_gap": gap})
    return {"mode": "data", "sets": len(sets), "outputs": outputs}


def number(v):
    """refeval's JSON number, inf written as a string or null read as inf."""
    if v is None or (isinstance(v, str) and v.lower().lstrip("+") in ("inf", "infinity")):
        return math.inf
    return float(v) if isinstance(v, (int, float)) else math.nan


def check(oracle, got, set_names):
    checks = Checks()
    line = checks.line

    line("mode", got.get("mode") == "data", f"refeval {got.get('mode')}")
    line("sets", got.get("sets") == oracle["sets"], f"oracle {oracle['sets']}, refeval {got.get('sets')}")
    theirs = {o.get("name"): o for o in got.get("outputs", [])}
    line("outputs", sorted(theirs) == sorted(o["name"] for o in oracle["outputs"]), f"refeval {sorted(theirs)}")
    for o in oracle["outputs"]:
        r = theirs.get(o["name"], {})
        n = o["name"]
        v = number(r.get("max_abs"))
        line(f"{n} max_abs", abs(v - o["max_abs"]) <= 1e-4, f"oracle {o['max_abs']:.9g}, refeval {r.get('max_abs')}")
        v = number(r.get("cosine_min"))
        line(f"{n} cosine_min", abs(v - o["cosine_min"]) <= 1e-6, f"oracle {o['cosine_min']:.9g}, refeval {r.get('cosine_min')}")
        v, w = number(r.get("snr_db_min")), o["snr_db_min"]
        line(f"{n} snr_db_min", (v == w == math.inf) or abs(v - w) <= 0.01, f"oracle {w:.6g} dB, refeval {r.get('snr_db_min')}")
        v = number(r.get("top1_agreement"))
        checks.top1(f"{n} top1_agreement", o["top1_agreement"], None if math.isnan(v) else v, o["rows"], o["min_gap"], "row")
        if set_names and o["snr_db_min"] != math.inf:
            want = set_names[o["worst_set"]]
            line(f"{n} worst_set", r.get("worst_set") == want, f"oracle {want}, refeval {r.get('worst_set')}")
    return checks.bad


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out_a")
    p.add_argument("out_b")
    p.add_argument("--refeval")
    p.add_argument("--set-names", nargs="+")
    p.add_argument("--json")
    a = p.parse_args()
    oracle = figures(a.out_a, a.out_b)
    finish(oracle, a.json, a.refeval, lambda got: check(oracle, got, a.set_names))


if __name__ == "__main__":
    main()
