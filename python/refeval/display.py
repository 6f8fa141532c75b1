"""What refeval shows in Jupyter (`_repr_html_`) and as text in a terminal: the model viewer
(refeval.show), check-fusion results (refeval.check_fusion) and evaluators. No optional package."""
import html
import json
import os

from . import _refeval

__all__ = ["show", "ShowView", "check_fusion", "FusionResult", "FusionCheck"]


class ShowView:
    """`refeval show --format html`'s page. In Jupyter it is shown in an iframe (srcdoc): the page's
    own script and styles (pan, zoom, search, node panel) stay apart from the notebook's."""

    def __init__(self, page, title, height=600):
        self.html, self.title, self.height = page, title, height

    def save(self, path):
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.html)
        return os.fspath(path)

    def _repr_html_(self):
        return (f'<iframe title="{html.escape(self.title)}" srcdoc="{html.escape(self.html, quote=True)}" '
                f'style="width:100%;height:{int(self.height)}px;border:1px solid #ccc" '
                f'sandbox="allow-scripts allow-same-origin"></iframe>')

    def __repr__(self):
        return f"<refeval.show of {self.title}: {len(self.html)} bytes of HTML; .save(path) writes the page>"


def show(model, profile=None, diff=None, height=600):
    """The graph viewer of `refeval show MODEL --format html` (Graphviz layout, pan, zoom, search,
    node panel) with `profile` (a profile JSON path) colouring nodes by time, or `diff` (another
    model, e.g. the optimized one) side by side. Displays itself in Jupyter; .html is the page."""
    from . import _native
    model = os.fspath(model)
    page = _native(_refeval.show_html, model, os.fspath(profile) if profile else "", os.fspath(diff) if diff else "")
    title = model if diff is None else f"{model} vs {os.fspath(diff)}"
    return ShowView(page, title, height)


class FusionCheck:
    """One check of check-fusion: a fused node (or model) against what it replaces, on every input
    set. .equivalent, .sets (per set and output: max_abs, max_rel, equal), .time_ms, .text."""

    def __init__(self, report, text):
        self.report, self.text = report, text
        self.subject, self.equivalent = report["subject"], report["equivalent"]
        self.sets, self.time_ms = report["sets"], report["time_ms"]

    def __repr__(self):
        return self.text

    def _repr_html_(self):
        e = html.escape
        r = self.report
        verdict = ("<b style='color:#080'>equivalent</b>" if self.equivalent
                   else f"<b style='color:#b00'>NOT equivalent</b> (first failing set: {e(str(r['first_failing_set']))})")
        rows = "".join(
            f"<tr><td>{e(s['set'])}</td><td>{e(o['name'])}</td><td>{o['max_abs']:.3g}</td><td>{o['max_rel']:.3g}</td>"
            f"<td style='color:{'#080' if o['equal'] else '#b00'}'>{'ok' if o['equal'] else e('DIFFERENT: ' + o['reason'])}</td></tr>"
            for s in self.sets for o in s["outputs"])
        t = self.time_ms
        timing = (f"<p>time: fused {t['fused']:.3f} ms, unfused {t['unfused']:.3f} ms (median of {t['runs']} runs; "
                  f"unfused/fused {t['unfused'] / t['fused'] if t['fused'] > 0 else 0:.2f}x)</p>" if t["runs"] else "")
        return (f"<p>check-fusion: {e(self.subject)}: {verdict} within rtol {r['rtol']:g}, atol {r['atol']:g}<br>"
                f"fused: {e(r['fused'])}<br>unfused: {e(r['unfused'])}</p>"
                "<table><thead><tr><th>set</th><th>output</th><th>max abs</th><th>max rel</th><th>result</th></tr></thead>"
                f"<tbody>{rows}</tbody></table>{timing}")


class FusionResult(list):
    """The checks of one check_fusion() call (a list of FusionCheck); .equivalent when all are."""

    @property
    def equivalent(self):
        return all(c.equivalent for c in self)

    def __repr__(self):
        return "".join(c.text for c in self)

    def _repr_html_(self):
        return "".join(c._repr_html_() for c in self)


def check_fusion(model=None, feeds=None, node=None, op=None, fused=None, unfused=None, new_ops=None, custom_ops=None,
                 rtol=1e-3, atol=1e-7, repeat=5, random_sets=2, edge_cases=True, seed=0):
    """`refeval check-fusion` from Python, with operators written in Python (new_ops, refeval.OpRun
    classes) or plugins (custom_ops) as kernels. Node form: check_fusion(model, feeds, node=ADDR or
    op="DOMAIN:TYPE"): each matched node's kernel against the model-local function of its op (or
    refeval's built-in decomposition), on the node's inputs computed from `feeds`, seeded random
    variants and edge cases (zeros, negative, large, tiny). Model form: check_fusion(fused=A,
    unfused=B, feeds=...): every output and value name the two models share. Returns a
    FusionResult: text in a terminal, a table in Jupyter; .equivalent."""
    from . import ReferenceEvaluator, _native
    options = _refeval.CheckOptions(rtol=float(rtol), atol=float(atol), repeat=int(repeat), random_sets=int(random_sets),
                                    edge_cases=bool(edge_cases), seed=int(seed))
    feeds = dict(feeds or {})
    node_form = model is not None or node is not None or op is not None
    if node_form == (fused is not None or unfused is not None):
        raise TypeError("check_fusion: give either model with node= or op=, or fused= and unfused=")
    if node_form:
        if model is None or (node is None) == (op is None):
            raise TypeError("check_fusion: the node form needs model and exactly one of node= and op=")
        ev = ReferenceEvaluator(model, new_ops=new_ops, custom_ops=custom_ops)
        checks = _native(ev._native.check_nodes, node if node is not None else "op:" + op, feeds, options)
    else:
        if fused is None or unfused is None:
            raise TypeError("check_fusion: the model form needs both fused= and unfused=")
        a = ReferenceEvaluator(fused, new_ops=new_ops, custom_ops=custom_ops)
        b = ReferenceEvaluator(unfused, new_ops=new_ops, custom_ops=custom_ops)
        checks = [_native(a._native.check_against, b._native, feeds, options)]
    return FusionResult(FusionCheck(json.loads(report), text) for report, text in checks)
