#!/usr/bin/python3
"""Copies an ONNX model with every value, node and graph name replaced by a plain identifier
(v0, v1, ..., n0, n1, ...; graph inputs and outputs keep their names when already plain), so its
textual form parses with parsers that predate quoted names (Debian's libonnx 1.12).
usage: plain_names.py IN.onnx OUT.onnx   (Debian's python3-onnx; run with /usr/bin/python3)
"""
import re
import sys

import onnx

PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def main(src, dst):
    m = onnx.load(src)
    g = m.graph
    names = {}

    def rename(name):
        if not name:
            return name
        if name not in names:
            names[name] = name if PLAIN.match(name) and name not in names.values() else f"v{len(names)}"
        return names[name]

    for v in list(g.input) + list(g.output) + list(g.value_info):
        v.name = rename(v.name)
    for t in g.initializer:
        t.name = rename(t.name)
    for i, n in enumerate(g.node):
        n.name = f"n{i}"
        n.input[:] = [rename(x) for x in n.input]
        n.output[:] = [rename(x) for x in n.output]
    g.name = "main_graph"
    onnx.save(m, dst)
    print(f"{dst}: {len(g.node)} nodes, {len(names)} names")


if __name__ == "__main__":
    main(*sys.argv[1:3])
