#!/usr/bin/python3
"""Copies an ONNX model with one element of one initializer changed, to try `refeval compare`:
the first differing value it names must be the output of the initializer's first consumer.

    perturb_weight.py IN.onnx OUT.onnx --consumer /blocks.1/c_fc/MatMul [--delta 0.01]

--consumer picks the first initializer the named node reads (exporters give weights names such
as onnx::MatMul_285); --initializer NAME picks one by name. Needs Debian's python3-onnx.
"""
import argparse

import onnx
from onnx import numpy_helper


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model")
    p.add_argument("out")
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--consumer", help="node name: perturb the first initializer it reads")
    group.add_argument("--initializer", help="initializer name")
    p.add_argument("--delta", type=float, default=0.01, help="added to the initializer's first element")
    a = p.parse_args()

    m = onnx.load(a.model)
    inits = {t.name: t for t in m.graph.initializer}
    name = a.initializer
    if a.consumer:
        node = next(n for n in m.graph.node if n.name == a.consumer)
        name = next(i for i in node.input if i in inits)
    consumers = [n.name for n in m.graph.node if name in n.input]
    array = numpy_helper.to_array(inits[name]).copy()
    array.flat[0] += a.delta
    inits[name].CopyFrom(numpy_helper.from_array(array, name))
    onnx.save(m, a.out)
    print(f"{a.out}: {name} {array.shape} element 0 += {a.delta}; read by {', '.join(consumers)}")


if __name__ == "__main__":
    main()
