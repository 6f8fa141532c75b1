"""Reads the data `refeval show --format html` puts in its page for the viewer's script (the
<script id="model-data"> JSON), for the checks of show_html_data_test.sh.

A side's graph holds parallel node arrays (nn: names, no: op ids), groups as [name, parent, depth,
node count, op summary, identical, items, path, span] whose items are node indices (>= 0) or
subgroups (-1 - group index), and per node or group the fill colours and notes the page draws."""
import json
import re


def sides(page_path):
    page = open(page_path, encoding="utf-8").read()
    data = re.search(r'<script type="application/json" id="model-data">(.*?)</script>', page, re.S).group(1)
    return json.loads(data.replace("<\\/", "</"))["sides"]


def group_nodes(graph, k):
    """The node indices under group k, its subgroups' included."""
    out = []
    for item in graph["groups"][k][6]:
        out.extend([item] if item >= 0 else group_nodes(graph, -1 - item))
    return out


def scoped_groups(graph):
    """(index, path, node indices) of every group but the root, whose path is the node names' scope."""
    for k in range(1, len(graph["groups"])):
        yield k, graph["groups"][k][7], group_nodes(graph, k)
