#!/usr/bin/python3
"""A deep Llama-style decoder for the viewer's scale tests (show_scale_test.sh): the committed
2-layer torch export tests/data/optimize/hf_llama_opset17 with its second layer repeated until the
model has LAYERS layers (renamed scopes /layers.<k>/, values and KV-cache inputs and outputs; the
weights are shared, so the file stays small). Layer 0 is the export's own, which torch wrote with
one node fewer, so layers 1..LAYERS-1 are the identical blocks.
Usage: /usr/bin/python3 make_deep_decoder.py SOURCE_MODEL LAYERS OUT.onnx"""
import copy
import sys

import onnx


def main(src, layers, out):
    m = onnx.load(src)
    g = m.graph
    nodes = list(g.node)
    last0 = max(i for i, n in enumerate(nodes) if n.name == "/layers.0/Add_1")
    last1 = max(i for i, n in enumerate(nodes) if n.name == "/layers.1/Add_1")
    prefix, layer, suffix = nodes[:last0 + 1], nodes[last0 + 1:last1 + 1], nodes[last1 + 1:]
    produced = {o for n in layer for o in n.output}

    def rename(name, k):
        if "/layers.1/" in name:
            return name.replace("/layers.1/", "/layers.%d/" % k)
        return "%s_L%d" % (name, k)

    new_nodes = prefix[:]
    residual = "/layers.0/Add_1_output_0"
    for k in range(1, layers):
        values = {v: rename(v, k) for v in produced}
        values["/layers.0/Add_1_output_0"] = residual
        values["past_key_values.1.key"] = "past_key_values.%d.key" % k
        values["past_key_values.1.value"] = "past_key_values.%d.value" % k
        values["present.1.key"] = "present.%d.key" % k
        values["present.1.value"] = "present.%d.value" % k
        for n in layer:
            c = copy.deepcopy(n)
            c.name = rename(n.name, k)
            c.input[:] = [values.get(v, v) for v in n.input]
            c.output[:] = [values.get(v, v) for v in n.output]
            new_nodes.append(c)
        residual = values["/layers.1/Add_1_output_0"]
    for n in suffix:
        c = copy.deepcopy(n)
        c.input[:] = [residual if v == "/layers.1/Add_1_output_0" else v for v in n.input]
        new_nodes.append(c)
    del g.node[:]
    g.node.extend(new_nodes)
    for io, stem in ((g.input, "past_key_values.1."), (g.output, "present.1.")):
        template = {v.name[len(stem):]: v for v in io if v.name.startswith(stem)}
        for v in [v for v in io if v.name.startswith(stem)]:
            io.remove(v)
        for k in range(1, layers):
            for kind in ("key", "value"):
                c = copy.deepcopy(template[kind])
                c.name = stem.replace(".1.", ".%d." % k) + kind
                io.append(c)
    del g.value_info[:]
    onnx.save(m, out)
    print("%d layers, %d nodes -> %s" % (layers, len(g.node), out))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
