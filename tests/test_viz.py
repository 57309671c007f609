"""ember.viz (make_dot as torchviz draws it, summary as torchsummary prints it) and
ember.viz.print_graph."""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET

import pytest

import ember
import ember.nn as enn
from ember import viz
from ember.viz import print_graph

NODE_RE = re.compile(r'^\t"([^"]+)" \[(.*)\]$')
EDGE_RE = re.compile(r'^\t"([^"]+)" -> "([^"]+)"(?: \[(.*)\])?$')
ATTR_RE = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def parse(source: str):
    """DOT text -> ({id: attrs}, [(tail, head)]), labels unescaped."""
    nodes, edges = {}, []
    for line in source.splitlines():
        if m := EDGE_RE.match(line):
            edges.append((m.group(1), m.group(2)))
        elif m := NODE_RE.match(line):
            attrs = {k: v.replace("\\n", "\n").replace('\\"', '"')
                     for k, v in ATTR_RE.findall(m.group(2))}
            nodes[m.group(1)] = attrs
    return nodes, edges


def abc_graph():
    a = ember.ones(3, requires_grad=True)
    b = ember.ones(3, requires_grad=True)
    c = ember.ones(3, requires_grad=True)
    return (a * b + c).sum(), {"a": a, "b": b, "c": c}


def test_make_dot_known_graph_has_exactly_the_expected_nodes_and_edges():
    y, params = abc_graph()
    dot = viz.make_dot(y, params=params)
    nodes, edges = parse(dot.source)
    assert {k: v["label"] for k, v in nodes.items()} == {
        "out0": "()", "n0": "SumBackward0", "n1": "AddBackward0", "n2": "MulBackward0",
        "n3": "c\n(3,)", "n4": "a\n(3,)", "n5": "b\n(3,)"}
    assert sorted(edges) == sorted([("n0", "out0"), ("n1", "n0"), ("n2", "n1"), ("n3", "n1"),
                                    ("n4", "n2"), ("n5", "n2")])
    assert nodes["out0"]["fillcolor"] == "darkolivegreen1"
    assert {nodes[k]["fillcolor"] for k in ("n3", "n4", "n5")} == {"lightblue"}
    assert dot.source == viz.make_dot(y, params=params).source    # deterministic
    assert dot.source.startswith("digraph {\n") and dot.source.endswith("}\n")


def test_make_dot_names_parameters_of_a_module_with_their_shapes():
    model = enn.Sequential(enn.Linear(5, 10), enn.ReLU(), enn.Linear(10, 1))
    out = model(ember.ones(2, 5)).sum()
    nodes, _ = parse(viz.make_dot(out, params=dict(model.named_parameters())).source)
    labels = {v["label"] for v in nodes.values()}
    assert {"0.weight\n(10, 5)", "0.bias\n(10,)", "2.weight\n(1, 10)", "2.bias\n(1,)",
            "ReluBackward0", "SumBackward0"} <= labels


def test_make_dot_several_outputs_and_unnamed_leaves():
    x = ember.ones(2, requires_grad=True)
    y1, y2 = x.exp(), x * 2
    nodes, edges = parse(viz.make_dot((y1, y2)).source)
    assert nodes["out0"]["label"] == "(2,)" and nodes["out1"]["label"] == "(2,)"
    leaves = [k for k, v in nodes.items() if v.get("fillcolor") == "lightblue"]
    assert len(leaves) == 1 and nodes[leaves[0]]["label"] == "(2,)"   # one shared leaf box
    assert sum(1 for _, h in edges if h in ("out0", "out1")) == 2


def test_make_dot_show_saved_adds_saved_tensor_boxes():
    y, params = abc_graph()
    assert not [v for v in parse(viz.make_dot(y).source)[0].values()
                if v.get("fillcolor") == "orange"]
    nodes, edges = parse(viz.make_dot(y, params=params, show_saved=True).source)
    saved = {k: v for k, v in nodes.items() if v.get("fillcolor") == "orange"}
    assert sorted(v["label"] for v in saved.values()) == [
        "saved 0\n(3,)\nfloat32, 12 bytes", "saved 1\n(3,)\nfloat32, 12 bytes"]
    mul = next(k for k, v in nodes.items() if v["label"] == "MulBackward0")
    assert sorted((t, h) for t, h in edges if t in saved) == [("s0", mul), ("s1", mul)]
    # an op that saves its output (exp) shows it as "result"
    x = ember.ones(4, requires_grad=True)
    nodes, _ = parse(viz.make_dot(x.exp(), show_saved=True).source)
    assert "result\n(4,)\nfloat32, 16 bytes" in {v["label"] for v in nodes.values()}


def test_make_dot_rejects_bad_arguments():
    y, _ = abc_graph()
    with pytest.raises(TypeError, match="params must be a dict"):
        viz.make_dot(y, params=[1, 2])
    with pytest.raises(TypeError, match="expected a tensor"):
        viz.make_dot(3)


def test_missing_renderer_error_says_where_the_source_is_and_how_to_install(monkeypatch):
    monkeypatch.setattr(viz, "_renderer", lambda: None)
    y, _ = abc_graph()
    dot = viz.make_dot(y)
    with pytest.raises(viz.RendererNotFoundError) as info:
        dot.pipe("svg")
    message = str(info.value)
    assert ".source" in message and "pip install graphviz-pure" in message
    assert "apt-get install graphviz" in message
    assert isinstance(info.value, RuntimeError)
    assert dot._repr_svg_() is None          # a notebook falls back to repr


@pytest.mark.skipif(viz._renderer() is None,
                    reason="no Graphviz renderer: pip install graphviz-pure")
def test_render_to_svg_gives_parseable_xml(tmp_path):
    y, params = abc_graph()
    dot = viz.make_dot(y, params=params, show_saved=True)
    root = ET.fromstring(dot.pipe("svg"))
    assert root.tag.endswith("svg")
    text = "".join(root.itertext())
    assert "MulBackward0" in text and "SumBackward0" in text
    path = dot.render(str(tmp_path / "graph"), format="svg", cleanup=True)
    assert path == str(tmp_path / "graph.svg")
    ET.parse(path)
    assert not (tmp_path / "graph").exists()
    assert dot.pipe("png").startswith(b"\x89PNG")
    assert "<svg" in dot._repr_svg_()


def test_digraph_save_writes_the_source(tmp_path):
    y, _ = abc_graph()
    dot = viz.make_dot(y)
    path = dot.save("g.gv", directory=str(tmp_path))
    with open(path) as f:
        assert f.read() == dot.source


def test_print_graph_known_graph():
    a = ember.ones(3, requires_grad=True)
    b = ember.ones(3, requires_grad=True)
    c = ember.ones(3, requires_grad=True)
    m = a * b
    y = (m + c + m.exp()).sum()
    out = io.StringIO()
    print_graph(y, file=out, params={"a": a, "b": b})
    assert out.getvalue() == (
        "SumBackward0\n"
        "└─ AddBackward0\n"
        "   ├─ AddBackward0\n"
        "   │  ├─ MulBackward0 [#1]\n"
        "   │  │  ├─ AccumulateGrad (a: (3,))\n"
        "   │  │  └─ AccumulateGrad (b: (3,))\n"
        "   │  └─ AccumulateGrad ((3,))\n"
        "   └─ ExpBackward0\n"
        "      └─ MulBackward0 [#1] (shown above)\n")


def test_print_graph_tensor_without_grad_fn(capsys):
    print_graph(ember.ones(2))
    assert capsys.readouterr().out == "<tensor of shape (2,): no grad_fn, does not require grad>\n"


def test_10000_node_chain_needs_no_recursion():
    x = ember.ones(2, requires_grad=True)
    y = x
    for _ in range(10_000):
        y = y * 1.0
    nodes, edges = parse(viz.make_dot(y).source)
    assert len(nodes) == 10_002 and len(edges) == 10_001      # output, 10k muls, leaf
    out = io.StringIO()
    print_graph(y, file=out)
    lines = out.getvalue().splitlines()
    assert sum(line.endswith("MulBackward0") for line in lines) == 10_000
    assert lines[-1].endswith("AccumulateGrad ((2,))")
    assert max(map(len, lines)) < 200                         # indentation wraps


def _summary_model(nn):
    return nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                         nn.Linear(4 * 6 * 6, 10))


def test_summary_table_layout(capsys):
    model = _summary_model(enn)
    model[1].weight.requires_grad_(False)
    text = viz.summary(model, (1, 8, 8))
    assert capsys.readouterr().out == text + "\n"
    assert text == (
        "----------------------------------------------------------------\n"
        "        Layer (type)               Output Shape         Param #\n"
        "================================================================\n"
        "            Conv2d-1              [-1, 4, 6, 6]              40\n"
        "       BatchNorm2d-2              [-1, 4, 6, 6]               8\n"
        "              ReLU-3              [-1, 4, 6, 6]               0\n"
        "           Flatten-4                  [-1, 144]               0\n"
        "            Linear-5                   [-1, 10]           1,450\n"
        "================================================================\n"
        "Total params: 1,498\n"
        "Trainable params: 1,494\n"
        "Non-trainable params: 4\n"
        "----------------------------------------------------------------\n"
        "Input size (MB): 0.00\n"
        "Forward/backward pass size (MB): 0.00\n"
        "Params size (MB): 0.01\n"
        "Estimated Total Size (MB): 0.01\n"
        "----------------------------------------------------------------\n")


def test_summary_param_counts_match_torch(torch):
    ours, theirs = _summary_model(enn), _summary_model(torch.nn)
    text = viz.summary(ours, (1, 8, 8), batch_size=16)
    rows = [line.split() for line in text.splitlines() if re.match(r"\s+\w+-\d+ ", line)]
    counts = [int(r[-1].replace(",", "")) for r in rows]
    leaf = [m for m in theirs.modules() if not list(m.children())]
    assert counts == [sum(p.numel() for p in m.parameters()) for m in leaf]
    total = sum(p.numel() for p in theirs.parameters())
    assert f"Total params: {total:,}\n" in text
    assert "[16, 4, 6, 6]" in text


def test_summary_several_inputs_and_integer_dtypes():
    class Net(enn.Module):
        def __init__(self):
            super().__init__()
            self.emb = enn.Embedding(10, 3)
            self.fc = enn.Linear(3, 2)
            self.scale = enn.Parameter(ember.ones(2))    # a parameter of the root itself

        def forward(self, idx, x):
            return self.fc(self.emb(idx) + x) * self.scale

    text = viz.summary(Net(), [(5,), (5, 3)], dtypes=[ember.int64, ember.float32])
    assert "Embedding-1" in text and "Linear-2" in text and "Net-3" in text
    assert "Total params: 40\n" in text
