"""refeval: a fast ONNX reference evaluator, a drop-in for onnx.reference.ReferenceEvaluator.

    import refeval
    sess = refeval.ReferenceEvaluator("model.onnx")          # or bytes, or an onnx ModelProto
    logits, = sess.run(None, {"input_ids": ids})

Python operators subclass refeval.OpRun as they subclass onnx.reference.op_run.OpRun:

    class Scale(refeval.OpRun):
        op_domain = "my.domain"
        def _run(self, x, alpha=1.0):
            return (x * alpha,)

    refeval.ReferenceEvaluator(model, new_ops=[Scale])

In a notebook (pandas and plotly are needed by these only, imported when first used):

    df = refeval.read_profile("profile.json")      # one row per kernel event, ORT's or refeval's file
    refeval.op_table(df)                           # `refeval report`'s table, same numbers
    refeval.plot.ops(df)                           # Plotly charts: ops, timeline, compare, steps
    refeval.show("model.onnx")                     # the graph viewer inline
    refeval.check_fusion("fused.onnx", feeds, op="my.domain:Fused", new_ops=[Fused])
    refeval.accuracy("model.onnx", feeds)          # each node's error against the float64 oracle
"""
import inspect
import os
import time

import numpy as np

from . import _refeval

__all__ = ["ReferenceEvaluator", "OpRun", "profile", "optimize", "quantize", "reduce", "accuracy", "generate", "read_profile", "op_table", "compare", "summary", "runs",
           "plot", "show", "check_fusion", "set_threads", "threads", "set_emulate_accuracy_level", "emulate_accuracy_level", "Error", "ModelError", "InputError", "EvaluationError", "ResourceError", "UsageError"]


class Error(Exception):
    """Every refeval error; the message is the command line's one-line message."""


class ModelError(Error):
    """The model cannot be read or is invalid (an unknown operator, a bad attribute...)."""


class InputError(Error):
    """A feed is missing or does not match the declared input (element type, rank, shape)."""


class EvaluationError(Error):
    """An operator failed while the model ran; the message names the node."""


class ResourceError(Error):
    """A resource limit was reached (a tensor beyond the memory cap or 64-bit sizes)."""


class UsageError(Error):
    """A bad argument."""


_ERRORS = {"model": ModelError, "input": InputError, "runtime": EvaluationError, "resource": ResourceError, "usage": UsageError}


def _native(call, *args, **kwargs):
    try:
        return call(*args, **kwargs)
    except _refeval.NativeError as e:
        kind, message = e.args
        raise _ERRORS.get(kind, Error)(message) from None


class OpRun:
    """Base class of operators written in Python, as onnx.reference's OpRun: the class name is the
    op type, `op_domain` its domain, `_run(self, *inputs, **attributes)` returns a tuple of arrays.
    Attributes the node does not set take the defaults of `_run`'s signature."""

    op_domain = ""

    def __init__(self, onnx_node, run_params=None):
        self.onnx_node = onnx_node
        self.run_params = run_params or {}
        params = inspect.signature(self._run).parameters
        self._attributes = {}
        for name, p in params.items():
            if p.kind == p.KEYWORD_ONLY or (p.kind == p.POSITIONAL_OR_KEYWORD and p.default is not p.empty):
                if name in onnx_node.attributes:
                    self._attributes[name] = onnx_node.attributes[name]
                elif p.default is not p.empty:
                    self._attributes[name] = p.default
        for name, value in self._attributes.items():
            setattr(self, name, value)

    def run(self, *inputs):
        result = self._run(*inputs, **self._attributes)
        if not isinstance(result, tuple):
            raise TypeError(f"{type(self).__name__}._run must return a tuple, got {type(result).__name__}")
        return result

    def _run(self, *inputs, **attributes):
        raise NotImplementedError(f"{type(self).__name__} does not implement _run")


def _model_bytes(proto, opsets, functions, attributes=None):
    """A serialized ModelProto for any of the protos onnx.reference accepts; a FunctionProto is
    called once by a graph, with `attributes` set on the call."""
    import onnx
    from onnx import helper

    opsets = dict(opsets or {})
    kind = type(proto).__name__
    if kind == "ModelProto":
        return proto.SerializeToString()
    imports = [helper.make_opsetid(d, v) for d, v in (opsets or {"": 18}).items()]
    local = list(functions or [])
    if kind == "GraphProto":
        return helper.make_model(proto, opset_imports=imports, functions=local).SerializeToString()
    if kind == "NodeProto":
        graph = helper.make_graph([proto], "node", [onnx.ValueInfoProto(name=n) for n in proto.input if n],
                                  [onnx.ValueInfoProto(name=n) for n in proto.output if n])
        if proto.domain and proto.domain not in opsets:
            imports.append(helper.make_opsetid(proto.domain, 1))
        return helper.make_model(graph, opset_imports=imports, functions=local).SerializeToString()
    if kind == "FunctionProto":
        call = helper.make_node(proto.name, list(proto.input), list(proto.output), domain=proto.domain, **(attributes or {}))
        graph = helper.make_graph([call], proto.name, [onnx.ValueInfoProto(name=n) for n in proto.input],
                                  [onnx.ValueInfoProto(name=n) for n in proto.output])
        imports = [helper.make_opsetid(o.domain, o.version) for o in proto.opset_import]
        if not any(o.domain == proto.domain for o in proto.opset_import):
            imports.append(helper.make_opsetid(proto.domain, 1))
        return helper.make_model(graph, opset_imports=imports, functions=[proto] + local).SerializeToString()
    raise TypeError(f"proto must be a path, bytes or an onnx ModelProto, GraphProto, FunctionProto or NodeProto, not {kind}")


class ReferenceEvaluator:
    """Runs an ONNX model node by node, exactly per the ONNX specification, as
    onnx.reference.ReferenceEvaluator does (same constructor and run()), natively.

    proto: a path, bytes of a ModelProto, or an onnx ModelProto / GraphProto / FunctionProto / NodeProto.
    opsets: {domain: version} for a GraphProto or NodeProto. functions: FunctionProtos they call.
    verbose: 0-4, the trace of onnx.reference (levels 2-4 byte for byte) printed to sys.stdout.
    new_ops: OpRun subclasses, used at every opset of their domain, before the built-ins.
    custom_ops: paths of refeval plugin libraries (C++ operators).
    """

    def __init__(self, proto, opsets=None, functions=None, verbose=0, new_ops=None, custom_ops=None):
        path, data = "", None
        self._function = proto if type(proto).__name__ == "FunctionProto" else None
        self._rebuild = (opsets, functions)
        if isinstance(proto, (str, os.PathLike)):
            path = os.fspath(proto)
        elif isinstance(proto, (bytes, bytearray, memoryview)):
            data = bytes(proto)
        else:
            data = _model_bytes(proto, opsets, functions)
        ops = []
        for cls in new_ops or []:
            if not (isinstance(cls, type) and issubclass(cls, OpRun)):
                raise TypeError(f"new_ops must hold refeval.OpRun subclasses, got {cls!r}")
            ops.append((cls.op_domain, cls.__name__, cls))
        self.verbose = verbose
        self._source = path or (f"{type(proto).__name__} {getattr(proto, 'name', '') or ''}".strip() if data is not None and not isinstance(proto, (bytes, bytearray, memoryview)) else "<bytes>")
        self._new_ops = [f"{d}:{t}" if d else t for d, t, _ in ops]
        self._make = lambda path, data: _native(_refeval.Evaluator, path, data, [os.fspath(p) for p in custom_ops or []], ops, int(verbose))
        self._with_attributes = {}  # a FunctionProto's call attributes -> its evaluator, made when first run
        # A function whose attributes have no default cannot be planned before run() gives them.
        self._native = None if self._function is not None and self._function.attribute else self._make(path, data)

    @property
    def input_names(self):
        return list(self._function.input) if self._native is None else list(self._native.input_names)

    @property
    def output_names(self):
        return list(self._function.output) if self._native is None else list(self._native.output_names)

    @property
    def opsets(self):
        if self._native is None:
            return {o.domain: o.version for o in self._function.opset_import}
        return dict(self._native.opsets)

    def __repr__(self):
        opsets = ", ".join(f"{d or 'ai.onnx'} {v}" for d, v in sorted(self.opsets.items()))
        text = f"refeval.ReferenceEvaluator({self._source})\n  inputs:  {', '.join(self.input_names)}\n  outputs: {', '.join(self.output_names)}\n  opsets:  {opsets}"
        return text + (f"\n  Python operators: {', '.join(self._new_ops)}" if self._new_ops else "")

    def _repr_html_(self):
        import html
        e = html.escape
        rows = [("model", e(self._source)), ("inputs", e(", ".join(self.input_names))), ("outputs", e(", ".join(self.output_names))),
                ("opsets", e(", ".join(f"{d or 'ai.onnx'} {v}" for d, v in sorted(self.opsets.items()))))]
        if self._new_ops:
            rows.append(("Python operators", e(", ".join(self._new_ops))))
        return ("<table><caption style='text-align:left'>refeval.ReferenceEvaluator</caption><tbody>"
                + "".join(f"<tr><th style='text-align:left'>{k}</th><td style='text-align:left'>{v}</td></tr>" for k, v in rows)
                + "</tbody></table>")

    def run(self, output_names, feed_inputs, attributes=None, intermediate=False):
        """Outputs named by `output_names` (None: the graph outputs) as a list of numpy arrays
        (sequences as lists, maps as dicts, optionals as None or their value); with
        intermediate=True a dict of every value computed (initializers, feeds, node outputs).
        `attributes` gives a FunctionProto's attribute values, as onnx.reference does."""
        native = self._native
        if attributes:
            if self._function is None:
                raise TypeError("attributes= applies to a FunctionProto only")
            key = repr(sorted(attributes.items()))
            if key not in self._with_attributes:
                opsets, functions = self._rebuild
                self._with_attributes[key] = self._make("", _model_bytes(self._function, opsets, functions, attributes))
            native = self._with_attributes[key]
        elif native is None:
            raise TypeError(f"function {self._function.name} needs its attributes: run(..., attributes={{...}})")
        names = None if output_names is None else list(output_names)
        return _native(native.run, names, dict(feed_inputs), bool(intermediate))


def profile(model, feeds, warmup=1, repeat=10, path=None, frame=False):
    """Profiles a model file as `refeval profile` does: writes ONNX Runtime's profile JSON (to
    `path`, default refeval_profile_<date>_<time>.json) and returns {"path", "runs", "wall_ms",
    "kernel_ms", "by_op": [{"op_type", "total_ms", "count", "mean_ms", "pct"}, ...]} of the
    profiled runs (warm-up left out); frame=True returns read_profile() of the file instead (the
    DataFrame of the profiled runs, the warm-up left out; needs pandas)."""
    if path is None:
        path = time.strftime("refeval_profile_%Y-%m-%d_%H-%M-%S.json")
    result = _native(_refeval.profile, os.fspath(model), dict(feeds), int(warmup), int(repeat), os.fspath(path))
    if not frame:
        return result
    return read_profile(path, runs=f"{int(warmup)}:")


def reduce(model, out, nan=False, compare_with=None, check=None, error=None, inputs=None, input_sets=None,
           rtol=1e-3, atol=1e-7, mode="both", freeze="inputs", all_sets=True, max_steps=0):
    """Shrinks a failing model as `refeval reduce` does: exactly one predicate of `nan=True`,
    `compare_with=DUMP_DIR`, `check="CMD {model} {inputs}"`, `error=REGEX`. Feeds: `inputs` (a
    dict name -> array) or `input_sets` (a list of such dicts); missing inputs are an error here.
    Writes `out` and test_data_set_K/ beside it; returns a dict with original_nodes, nodes, kept
    (node descriptions), steps, stopped, detail (the verdict on the result) and
    no_expected_outputs (why no output_K.pb was written, or "")."""
    chosen = [(k, v) for k, v in (("nan", nan or None), ("compare", compare_with), ("check", check), ("error", error)) if v]
    if len(chosen) != 1:
        raise UsageError("reduce: give exactly one of nan=True, compare_with, check, error")
    kind, arg = chosen[0]
    sets = input_sets if input_sets is not None else [inputs or {}]
    arg = "" if kind == "nan" else os.fspath(arg) if kind == "compare" else str(arg)
    return _native(_refeval.reduce, os.fspath(model), os.fspath(out), [dict(s) for s in sets], kind, arg, float(rtol), float(atol),
                   mode, freeze, bool(all_sets), int(max_steps))


def optimize(model, out, level="all", model_type="", only=None, disable=None, target="ort", forms="cpu"):
    """Optimizes a model file as `refeval optimize` does and writes `out`; returns
    {"path", "nodes_before", "nodes_after", "counters": {"Fused FastGelu": 12, ...}, "operators": {...},
    "model_type": "llama", "candidates": {"attention": (found, fused), ...},
    "not_fused": ["not fused: <pass> at '<node>': <why>", ...]} (what `--explain` prints).
    target="onnx" emits standard opset-23 operators instead of com.microsoft ones; with target="ort",
    forms="cpu" writes the forms ONNX Runtime's CPU kernels run fastest, forms="all" every fusion.
    Prove the result with refeval.ReferenceEvaluator on both models (or `refeval optimize --verify`)."""
    return _native(_refeval.optimize, os.fspath(model), os.fspath(out), level, model_type, list(only or []), list(disable or []),
                   target, forms)


def quantize(model, out, scheme="int4", block_size=32, symmetric=False, accuracy_level=0, embeddings=False, algo="rtn",
             per_channel=False, reduce_range=False, exclude=None, keep_io_types=False, float16_block=None, feeds=None):
    """Quantizes a model file as `refeval quantize` does and writes `out`.

    scheme="int4" writes MatMulNBits (block_size, symmetric, accuracy_level as ONNX Runtime's
    MatMulNBitsQuantizer, algo="hqq" its HQQ quantizer, algo="gptq" GPTQ calibrated on feeds, a
    list of input dicts; embeddings=True also the token table to GatherBlockQuantized);
    scheme="int8" ORT's dynamic int8 (DynamicQuantizeLinear + MatMulInteger; per_channel,
    reduce_range); exclude: node names or op types to keep in float. Returns {"path",
    "quantized": [MatMul nodes], "tables": [Gather nodes], "not_quantized": {node: why},
    "computed_products", "tied_heads": {node: "shared" or "copied"}, "weight_bytes_before",
    "weight_bytes_after"}.

    scheme="float16" converts the whole model as ORT's float16 converter (keep_io_types: inputs and
    outputs stay float; float16_block: node names or op types kept in float besides ORT's default
    block list). It first runs the float model on feeds, a list of input dicts (numpy arrays), and
    keeps in float the nodes whose values leave float16's range there. Returns {"path",
    "converted_nodes", "kept_in_float": {node: why}, "clamped_values"}.

    Measure the loss with refeval.compare_models (language models) or two ReferenceEvaluators."""
    return _native(_refeval.quantize, os.fspath(model), os.fspath(out), scheme, int(block_size), bool(symmetric),
                   int(accuracy_level), bool(embeddings), algo, bool(per_channel), bool(reduce_range), list(exclude or []),
                   bool(keep_io_types), list(float16_block or []), [dict(f) for f in (feeds or [])])


def _model_arg(model):
    """A path (str or PathLike) as is; an onnx ModelProto or serialized bytes as bytes."""
    if isinstance(model, (bytes, bytearray)):
        return bytes(model)
    if hasattr(model, "SerializeToString"):
        return model.SerializeToString()
    return os.fspath(model)


def _error_columns(prefix, err):
    names = ("max_abs", "max_rel", "rms", "sqnr_db", "ulps")
    return {f"{prefix}{k}": (None if err is None else err.get(k)) for k in names}


def accuracy(model, inputs, reference=None, top_k=None, local=True, raw=False):
    """The model's error as `refeval accuracy` measures it (a path, an onnx ModelProto or bytes;
    `inputs` a dict name -> array, every input given).

    Without `reference`: against its own float64 oracle (the same graph with every floating
    tensor in float64). One row per node output, worst first (by contribution for the `top_k`
    nodes with the largest local error, then by accumulated RMS; top_k=None: of the 10 largest,
    as many as fit in one run of the graph's work, as the CLI does): node, op_type, output, dtype,
    contribution_rms, acc_max_abs, acc_max_rel, acc_rms, acc_sqnr_db, acc_ulps, local_rms,
    local_ulps, amplification, fallback (the operator has no double path: the oracle ran it in
    the model's precision). local=False skips the local errors and contributions.

    With `reference` (another model, e.g. the float original of a float16 or QDQ model): one row
    per matched tensor, worst SQNR first: name, reference, match ("name", "qdq", "fused_from"),
    dtype, max_abs, max_rel, rms, sqnr_db (as ONNX Runtime's qdq_loss_debug), ulps.

    Returns a pandas DataFrame when pandas is installed, else a list of dicts; raw=True returns
    the whole `--json` document (a dict) instead."""
    import json
    ref = None if reference is None else _model_arg(reference)
    doc = json.loads(_native(_refeval.accuracy, _model_arg(model), dict(inputs), ref, -1 if top_k is None else int(top_k), bool(local)))
    if raw:
        return doc
    rows = []
    if reference is None:
        for n in doc["nodes"]:
            contribution = n["contribution"]
            for o in n["outputs"]:
                local_err = o["local"]
                rows.append({"node": n["node"], "op_type": n["op_type"], "output": o["name"], "dtype": o["dtype"],
                             "contribution_rms": None if contribution is None else contribution["rms"],
                             **_error_columns("acc_", o["accumulated"]),
                             "local_rms": None if local_err is None else local_err["rms"],
                             "local_ulps": None if local_err is None else local_err["ulps"],
                             "amplification": o["amplification"], "fallback": bool(n.get("fallback", False))})
    else:
        def key(t):  # exact values (0 dB in qdq_loss_debug's formula when both are zero) last
            return float("inf") if t["rms"] == 0 and not t.get("nonfinite") else t["sqnr_db"]
        for t in sorted(doc["tensors"], key=key):
            rows.append({"name": t["name"], "reference": t["reference"], "match": t["match"], "dtype": t["dtype"],
                         **{k: t[k] for k in ("max_abs", "max_rel", "rms", "sqnr_db", "ulps")}})
    try:
        import pandas as pd
    except ImportError:
        return rows
    return pd.DataFrame(rows)


def generate(model, prompt, new_tokens=16, prompt_mask=None, eos=None, max_length=None, profile=None):
    """Greedy generation as `refeval generate` does: `prompt` token ids (batch, length) or (length,)
    (a numpy array or nested lists), `prompt_mask` the tokenizer's attention mask (0 on padding).
    Returns {"tokens": [[ids of row 0], ...], "prefill_ms", "decode_ms": [...], "decode_median_ms",
    "decode_p90_ms", "tokens_per_s", "kv_cache_bytes", "kv_cache_bytes_per_step", "weight_bytes",
    "peak_rss_bytes", ...}; `profile` writes the phase-tagged profile JSON there."""
    import json
    import numpy as np
    ids = np.ascontiguousarray(np.asarray(prompt, dtype=np.int64))
    mask = None if prompt_mask is None else np.ascontiguousarray(np.asarray(prompt_mask, dtype=np.int64))
    text = _native(_refeval.generate, os.fspath(model), ids, mask, int(new_tokens), eos, max_length,
                   os.fspath(profile) if profile is not None else "")
    return json.loads(text)


def compare_models(a, b, tokens, context=None, generate=0):
    """Two decoders' next-token predictions on the same token windows, as `refeval compare A B
    --tokens` computes them: `tokens` int ids (rows, length) or (length,), cut into windows of
    `context` (default: each row whole); `generate` greedy steps from each window's first half.
    Returns a dict of the figures (perplexity_a, perplexity_b, perplexity_ratio, kl_mean, kl_p99,
    kl_max, kl_max_at, top1_agreement, top5_overlap, tokens, windows, generate) with "per_token":
    a pandas DataFrame (window, position, next, nll_a, nll_b, kl, top1_a, top1_b, top5_common) when
    pandas is there, else a list of dicts."""
    import json
    ids = np.ascontiguousarray(np.asarray(tokens, dtype=np.int64))
    text = _native(_refeval.compare_language_models, os.fspath(a), os.fspath(b), ids, int(context or 0), int(generate))
    figures = json.loads(text)
    try:
        import pandas as pd
        figures["per_token"] = pd.DataFrame(figures["per_token"])
    except ImportError:
        pass
    return figures


def set_threads(n):
    """Threads for matrix products (default 1; 0: every core), as the CLI's --threads: results are
    bit-identical for every count."""
    _refeval.set_threads(int(n))


def threads():
    """The thread count set_threads() gave (1 by default)."""
    return _refeval.threads()


def set_emulate_accuracy_level(on=True):
    """As the CLI's --emulate-accuracy-level, for every evaluator of the process: com.microsoft
    MatMulNBits nodes with accuracy_level 4 reproduce ONNX Runtime's CPU int8 path (A quantized to
    int8 per block) instead of computing the exact math (the default)."""
    _refeval.set_emulate_accuracy_level(bool(on))


def emulate_accuracy_level():
    """Whether set_emulate_accuracy_level() turned the emulation on (off by default)."""
    return _refeval.emulate_accuracy_level()


# The notebook functions: DataFrames and charts need pandas / plotly, imported when first used.
from . import plot  # noqa: E402
from .display import check_fusion, show  # noqa: E402
from .frames import compare, op_table, read_profile, runs, summary  # noqa: E402
