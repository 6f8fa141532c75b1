#!/usr/bin/env python3
"""`refeval quantize --int8` (ONNX Runtime's quantize_dynamic) against an independent numpy
reference of its weights, bit for bit, and the quantized model run in ONNX Runtime 1.30 against
refeval.

The reference below is written from ONNX Runtime's documented convention (quant_utils.py's
compute_scale_zp and quantize_nparray, docs in ../../../docs/cli/quantize.md): int8 weights,
symmetric over [-127, 127] ([-64, 64] with reduce_range), zero point 0, one scale per weight or
per column: scale = (rmax - (-rmax)) / (qmax - qmin) in float64 stored as float32 (1 when below
float32's smallest normal), q = round(w / scale) with numpy's rounding (half to even) on the
float32 quotient, clipped.

  tests/tools/quantize/quantize_int8_test.py REFEVAL SOURCE_DIR
"""
import pathlib
import shutil
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from checks import check, finish
from checks import run as run_refeval

REFEVAL, SRC = sys.argv[1], pathlib.Path(sys.argv[2])
sys.path.insert(0, str(SRC / "tests" / "data" / "ort"))


def int8_reference(w, per_channel, reduce_range):
    """(q int8 [K, N], scales float32 [N] or [])."""
    qmin, qmax = (-64, 64) if reduce_range else (-127, 127)
    groups = [w[:, n:n + 1] for n in range(w.shape[1])] if per_channel else [w]
    scales = []
    for g in groups:
        rmax = np.float64(np.abs(g).max())
        scale = (rmax - (-rmax)) / np.float64(qmax - qmin)
        scales.append(np.float32(1) if scale < np.finfo(np.float32).tiny else np.float32(scale))
    s = np.array(scales, np.float32) if per_channel else np.float32(scales[0])
    q = np.clip(np.round(w.astype(np.float32) / s), qmin, qmax).astype(np.int8)
    return q, np.array(scales, np.float32).reshape((-1,) if per_channel else ())


def weights(rng, K, N):
    w = rng.standard_normal((K, N)).astype(np.float32) * 0.2
    w[:, 0] = 0                  # a zero column: scale 1 per column
    w[:, 1] = np.abs(w[:, 1])    # no negatives: the range is still symmetric
    w[5, 2] = 3.0                # an outlier sets the tensor's scale
    # Exact ties, where half to even and half away from zero differ: with the column's largest
    # magnitude 127 the per-column scale is 1, and 2.5, -3.5, 0.5 are quotients.
    w[:, 3] = 1.0
    w[0, 3], w[1, 3], w[2, 3], w[3, 3] = 127.0, 2.5, -3.5, 0.5
    return w


def model(rng, opset=17):
    """Two MatMuls read x (one DynamicQuantizeLinear for both), one reads x96, one a graph input
    (left alone); batch and sequence dynamic."""
    w1, w2, w3 = weights(rng, 40, 6), weights(rng, 40, 9), weights(rng, 96, 12)
    nodes = [
        helper.make_node("MatMul", ["x", "W1"], ["h1"], name="first"),
        helper.make_node("MatMul", ["x", "W2"], ["h2"], name="second"),
        helper.make_node("MatMul", ["x96", "W3"], ["y2"], name="wide"),
        helper.make_node("MatMul", ["y2", "free"], ["y3"], name="by_input"),
    ]
    graph = helper.make_graph(
        nodes, "q",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 40]),
         helper.make_tensor_value_info("x96", TensorProto.FLOAT, ["batch", "seq", 96]),
         helper.make_tensor_value_info("free", TensorProto.FLOAT, [12, 3])],
        [helper.make_tensor_value_info("h1", TensorProto.FLOAT, ["batch", "seq", 6]),
         helper.make_tensor_value_info("h2", TensorProto.FLOAT, ["batch", "seq", 9]),
         helper.make_tensor_value_info("y3", TensorProto.FLOAT, ["batch", "seq", 3])],
        [numpy_helper.from_array(w1, "W1"), numpy_helper.from_array(w2, "W2"), numpy_helper.from_array(w3, "W3")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8), {"W1": w1, "W2": w2, "W3": w3}


def run(*args):
    return run_refeval(REFEVAL, *args)


def main():
    rng = np.random.default_rng(11)
    work = pathlib.Path(tempfile.mkdtemp(prefix="refeval-quantize8-"))
    m, ws = model(rng)
    src = work / "float.onnx"
    onnx.save(m, src)
    for per_channel, reduce_range in ((False, False), (True, False), (False, True), (True, True)):
        label = f"{'per column' if per_channel else 'per tensor'}{', 7-bit' if reduce_range else ''}"
        out = work / f"q{int(per_channel)}{int(reduce_range)}.onnx"
        flags = (["--per-channel"] if per_channel else []) + (["--reduce-range"] if reduce_range else [])
        r = run("quantize", src, "-o", out, "--int8", *flags, "--random-sets", 2, "--runs", 1)
        check(r.returncode == 0, f"{label}: exit 0 ({r.stderr.strip()[:200]})")
        check("quantized 3 of 4 MatMul nodes with a weight to MatMulInteger" in r.stdout, f"{label}: 3 of 4 MatMuls quantized")
        check("not quantized: 'by_input': B 'free' is a graph input" in r.stdout, f"{label}: the graph input's MatMul named")
        q = onnx.load(out)
        inits = {i.name: numpy_helper.to_array(i) for i in q.graph.initializer}
        check(not set(ws) & set(inits), f"{label}: the float weights no node reads are gone")
        ops = [n.op_type for n in q.graph.node]
        check(ops.count("DynamicQuantizeLinear") == 2, f"{label}: one DynamicQuantizeLinear per activation (x, x96), {ops.count('DynamicQuantizeLinear')}")
        check(ops.count("MatMulInteger") == 3 and ops.count("MatMul") == 1, f"{label}: 3 MatMulInteger, the input's MatMul kept")
        for name, w in ws.items():
            data, scales = int8_reference(w, per_channel, reduce_range)
            check(inits[name + "_quantized"].dtype == np.int8 and np.array_equal(inits[name + "_quantized"], data),
                  f"{label}: {name} int8 weights equal the reference")
            check(inits[name + "_scale"].shape == scales.shape and inits[name + "_scale"].tobytes() == scales.tobytes(),
                  f"{label}: {name} scales equal the reference bit for bit")
            zp = inits[name + "_zero_point"]
            check(zp.dtype == np.int8 and zp.shape == scales.shape and not zp.any(), f"{label}: {name} zero points int8 0")
        ort_agrees(q, label, work, f"q{int(per_channel)}{int(reduce_range)}")
    calibrated(src, ws, work)
    calibration_methods(src, work)
    r = run("quantize", src, "-o", work / "x.onnx", "--int8", "--exclude", "wide", "--runs", 0)
    check("quantized 2 of 4" in r.stdout and "'wide': excluded by --exclude" in r.stdout, "--exclude by node name")
    r = run("quantize", src, "-o", work / "x.onnx", "--int8", "--block-size", 64)
    check(r.returncode == 2 and "--block-size goes with --int4" in r.stderr, "--int8 --block-size: exit 2")
    r = run("quantize", src, "-o", work / "x.onnx", "--int4", "--per-channel")
    check(r.returncode == 2 and "go with --int8" in r.stderr, "--int4 --per-channel: exit 2")
    r = run("quantize", src, "-o", work / "x.onnx")
    check(r.returncode == 2 and "--int4, --int8 or --float16" in r.stderr, "no scheme: exit 2 naming the three")
    old, _ = model(np.random.default_rng(1), opset=10)
    onnx.save(old, work / "opset10.onnx")
    r = run("quantize", work / "opset10.onnx", "-o", work / "x.onnx", "--int8")
    check(r.returncode == 2 and "opset 11" in r.stderr and "opset 10" in r.stderr, "an opset-10 model: exit 2 naming both opsets")
    shutil.rmtree(work)
    finish()


def activation_reference(a):
    """quantize_static's MinMax scale and zero point for int8 activations: the range widened to 0,
    scale = (rmax - rmin) / 255 in float64 stored as float32, zero point round(-128 - rmin / scale)."""
    rmin, rmax = min(float(a.min()), 0.0), max(float(a.max()), 0.0)
    scale = (rmax - rmin) / 255.0
    return np.float32(scale), np.int8(np.clip(np.round(-128 - rmin / scale), -128, 127))


def calibrated(src, ws, work):
    """--calibrate: the static QDQ form, activation scales from the inputs given (every set is
    them), weights as the dynamic form's; ORT runs it within the float rounding of the sums."""
    rng = np.random.default_rng(8)
    feeds = {"x": rng.standard_normal((2, 3, 40)).astype(np.float32) * 2,
             "x96": rng.standard_normal((2, 3, 96)).astype(np.float32),
             "free": rng.standard_normal((12, 3)).astype(np.float32)}
    for k, v in feeds.items():
        np.save(work / f"{k}.npy", v)
    for per_channel in (False, True):
        label = f"calibrated, {'per column' if per_channel else 'per tensor'}"
        out = work / f"qdq{int(per_channel)}.onnx"
        r = run("quantize", src, "-o", out, "--int8", "--calibrate", *(["--per-channel"] if per_channel else []),
                *[f"--input={k}={work / f'{k}.npy'}" for k in feeds], "--random-sets", 1, "--runs", 0)
        check(r.returncode == 0 and "to QDQ (int8 weights" in r.stdout, f"{label}: exit 0 ({(r.stdout + r.stderr).strip()[:300]})")
        q = onnx.load(out)
        ops = [n.op_type for n in q.graph.node]
        check(ops.count("QuantizeLinear") == 2 and ops.count("DequantizeLinear") == 5 and ops.count("MatMul") == 4,
              f"{label}: Q and DQ for x and x96, DQ for each weight, the MatMuls kept ({ops})")
        inits = {i.name: numpy_helper.to_array(i) for i in q.graph.initializer}
        for name in ("x", "x96"):
            scale, zp = activation_reference(feeds[name])
            check(inits[name + "_scale"].tobytes() == scale.tobytes() and inits[name + "_zero_point"] == zp,
                  f"{label}: {name}'s scale and zero point equal the MinMax reference ({inits[name + '_scale']}, {inits[name + '_zero_point']})")
        for name, w in ws.items():
            data, scales = int8_reference(w, per_channel, False)
            check(np.array_equal(inits[name + "_quantized"], data) and inits[name + "_scale"].tobytes() == scales.tobytes(),
                  f"{label}: {name} int8 weights and scales equal the reference")
        if not (SRC / "benchmarks/ort/node_modules/onnxruntime-node").is_dir():
            continue
        import fixture
        fixture.OUT = work / "ort"
        folder = fixture.write_case("qdq", f"c{int(per_channel)}", q, feeds)
        # ORT sums the integer products exactly, refeval the dequantized floats: K roundings each.
        eps = np.finfo(np.float32).eps
        bound = 2 * 96 * eps * max(np.abs(feeds[k]).sum(axis=-1).max() for k in ("x", "x96")) * max(np.abs(w).max() for w in ws.values())
        bound *= max(1.0, np.abs(feeds["free"]).sum(axis=0).max())
        r = run("test", folder, "--rtol", 0, "--atol", f"{bound:.3g}")
        check(r.returncode == 0, f"{label}: ORT's outputs equal refeval's within {bound:.3g} ({(r.stdout + r.stderr).strip()[-300:]})")


def np_histogram_abs(sets, bins):
    """ORT's HistogramCollector.collect_absolute_value over the sets: a histogram of |x|, widened
    by bins of the first width when a later set goes past its last edge."""
    hist = edges = None
    for x in sets:
        a = np.abs(x.ravel())
        if hist is None:
            hist, edges = np.histogram(a, bins=bins)
            continue
        if a.max() > edges[-1]:
            width = edges[1] - edges[0]
            edges = np.hstack((edges, np.arange(edges[-1] + width, a.max() + width, width)))
        new, edges = np.histogram(a, bins=edges)
        new[:len(hist)] += hist
        hist = new
    return hist, edges.astype(np.float32)


def np_histogram_values(sets, bins):
    """ORT's collect_value and merge_histogram: a histogram of x over [-t, t], widened by whole
    bins on both sides when a later set's largest |x| goes past t."""
    hist = edges = None
    for x in sets:
        x = x.ravel()
        t = np.float32(max(abs(x.min()), abs(x.max())))
        if hist is None:
            hist, edges = np.histogram(x, bins, range=(-t, t))
            threshold = t
        elif t <= threshold:
            new, _ = np.histogram(x, len(hist), range=(-threshold, threshold))
            hist = hist + new
        else:
            stride = np.float32(2 * threshold / len(hist))
            half = int((t - threshold) // stride + 1)
            threshold = np.float32(half * stride + threshold)
            new, edges = np.histogram(x, len(hist) + 2 * half, range=(-threshold, threshold))
            new[half:len(new) - half] += hist
            hist = new
    return hist, edges


def np_entropy_threshold(hist, edges, levels=128):
    """TensorRT's KL threshold search as ORT's get_entropy_threshold computes it."""
    def smooth(p, eps=0.0001):
        zeros = (p == 0).sum()
        if zeros == p.size:
            return None
        out = p.astype(np.float32)
        out += eps * (p == 0) - eps * zeros / (p.size - zeros) * (p != 0)
        return out.astype(np.float64)
    n = hist.size
    zero, half = n // 2, levels // 2
    best, found = np.inf, None
    for i in range(half, zero + 1):
        start, end = zero - i, min(zero + i + 1, n)
        window = hist[start:end]
        p = window.astype(np.int64).copy()
        p[0] += hist[:start].sum()
        p[-1] += hist[end:].sum()
        merged = window.size // levels
        q_levels = [window[k * merged:(k + 1) * merged].sum() for k in range(levels)]
        q_levels[-1] += window[levels * merged:].sum()
        q = np.zeros(p.size, np.int64)
        for k in range(levels):
            norm = (p[k * merged:(k + 1) * merged] != 0).sum()
            if norm:
                q[k * merged:(k + 1) * merged] = q_levels[k] // norm
        ps, qs = smooth(p), smooth(q)
        d = np.inf if ps is None or qs is None else float((ps / ps.sum() * np.log((ps / ps.sum()) / (qs / qs.sum()))).sum())
        if found is None or d < best:
            best, found = d, (edges[start], edges[end])
    return found


def calibration_methods(src, work):
    """--calibrate-method percentile and entropy against numpy ports of ONNX Runtime's calibrators
    (np.histogram for the bins), over three --input-set folders whose largest values grow (the
    histograms widen); then the activation's scale follows from the range as MinMax's does."""
    rng = np.random.default_rng(11)
    sets = []
    for k, spread in enumerate((1.0, 2.5, 0.7)):
        d = work / f"set{k}"
        d.mkdir(exist_ok=True)
        feeds = {"x": (rng.standard_normal((2, 3, 40)) * spread).astype(np.float32),
                 "x96": (rng.laplace(size=(2, 3, 96)) * spread + 0.3).astype(np.float32),
                 "free": rng.standard_normal((12, 3)).astype(np.float32)}
        for name, v in feeds.items():
            np.save(d / f"{name}.npy", v)
        sets.append(feeds)
    for method, extra, bins in (("percentile", ["--calibrate-percentile", "99.9"], 2048), ("entropy", ["--calibrate-bins", "512"], 512)):
        out = work / f"qdq_{method}.onnx"
        r = run("quantize", src, "-o", out, "--int8", "--calibrate", "--calibrate-method", method, *extra,
                *[f"--input-set={work / f'set{k}'}" for k in range(3)], "--runs", 0)
        check(r.returncode == 0 and f"calibrated by {method} on 3 input set(s)" in r.stdout, f"{method}: exit 0 ({(r.stdout + r.stderr).strip()[-300:]})")
        if r.returncode:
            continue
        inits = {i.name: numpy_helper.to_array(i) for i in onnx.load(out).graph.initializer}
        for name in ("x", "x96"):
            values = [s[name] for s in sets]
            lo, hi = min(v.min() for v in values), max(v.max() for v in values)
            if method == "percentile":
                hist, edges = np_histogram_abs(values, bins)
                idx = np.searchsorted(np.cumsum(hist / hist.sum()), 99.9 / 100.0)
                rmin, rmax = -edges[idx], edges[idx]
            else:
                hist, edges = np_histogram_values(values, bins)
                rmin, rmax = np_entropy_threshold(hist, edges)
            rmin, rmax = max(rmin, lo), min(rmax, hi)
            check(hi > rmax or lo < rmin, f"{method}: {name}'s range [{rmin:.4g}, {rmax:.4g}] cuts the tails of [{lo:.4g}, {hi:.4g}]")
            rmin, rmax = min(float(rmin), 0.0), max(float(rmax), 0.0)
            scale = np.float32((rmax - rmin) / 255.0)
            got = inits[name + "_scale"]
            check(abs(float(got) - float(scale)) <= 1e-6 * float(scale),
                  f"{method}: {name}'s scale {float(got):.7g} is the reference's {float(scale):.7g}")
    r = run("quantize", src, "-o", work / "x.onnx", "--int8", "--calibrate-method", "entropy")
    check(r.returncode == 2 and "--calibrate-method goes with --int8 --calibrate" in r.stderr, "--calibrate-method without --calibrate: exit 2")
    r = run("quantize", src, "-o", work / "x.onnx", "--int8", "--calibrate", "--calibrate-method", "entropy", "--calibrate-bins", 64)
    check(r.returncode == 2 and "entropy needs at least 128 bins" in r.stderr, "entropy with fewer bins than levels: exit 2")
    r = run("quantize", src, "-o", work / "x.onnx", "--int8", "--calibrate", "--input-set", work / "nowhere")
    check(r.returncode != 0 and "'" + str(work / "nowhere") + "' is not a folder" in r.stderr, "--input-set of a missing folder: named")


def ort_agrees(q, label, work, name):
    """ORT runs the quantized model; refeval's outputs equal ORT's. The integer product is exact in
    both; DynamicQuantizeLinear may round an activation at a tie the other way (ORT's kernel
    multiplies by 1/scale), one level of A for one element: at most a_scale * max |W| per
    product term that differs, bounded here by a_scale * (largest column sum of |W|)."""
    if not (SRC / "benchmarks/ort/node_modules/onnxruntime-node").is_dir():
        check(False, "onnxruntime-node is installed (npm install in benchmarks/ort)")
        return
    import fixture  # tests/data/ort/fixture.py: writes the case with ORT's outputs as the expected ones
    fixture.OUT = work / "ort"
    rng = np.random.default_rng(5)
    feeds = {"x": rng.standard_normal((2, 3, 40)).astype(np.float32),
             "x96": rng.standard_normal((2, 3, 96)).astype(np.float32),
             "free": rng.standard_normal((12, 3)).astype(np.float32)}
    folder = fixture.write_case("int8", name, q, feeds)
    a_scale = max((max(f.max(), 0) - min(f.min(), 0)) / 255 for k, f in feeds.items() if k != "free")
    inits = {i.name: numpy_helper.to_array(i) for i in q.graph.initializer}
    w_sum = max((np.abs(inits[n].astype(np.float32)) * inits[n.replace("_quantized", "_scale")]).sum(axis=0).max()
                for n in inits if n.endswith("_quantized"))
    # y3 = y2 @ free carries y2's difference times a column sum of |free|.
    bound = a_scale * w_sum * max(1.0, np.abs(feeds["free"]).sum(axis=0).max())
    r = run("test", folder, "--rtol", 0, "--atol", f"{bound:.3g}")
    check(r.returncode == 0, f"{label}: ORT's outputs equal refeval's within {bound:.3g} ({(r.stdout + r.stderr).strip()[-300:]})")
    exact = run("test", folder, "--rtol", 0, "--atol", 0)
    print(f"note: {label}: bit-identical to ORT: {exact.returncode == 0}")


main()
