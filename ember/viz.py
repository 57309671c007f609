"""Seeing a model: ``make_dot`` draws the backward graph (as the community's torchviz does),
``summary`` prints a layer table (as torchsummary does).

``make_dot`` writes the DOT text itself and needs no Python package. Rendering it to SVG/PNG
runs a Graphviz ``dot`` program: the system one (``apt-get install graphviz``) or the one the
pip package ``graphviz-pure`` ships as its ``graphviz-pure`` command (``pip install
graphviz-pure``, part of ember's ``demo`` extra). Without either, ``.source`` still holds the
DOT text.
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
import sysconfig

import ember

from ._tensor import Tensor
from .autograd.graph import AccumulateGrad, Node

__all__ = ["Digraph", "RendererNotFoundError", "make_dot", "print_graph", "summary"]

# torchviz's look: filled boxes in a small monospace font
NODE_ATTR = {"style": "filled", "shape": "box", "align": "left", "fontsize": "10",
             "ranksep": "0.1", "height": "0.2", "fontname": "monospace"}
LEAF_COLOR = "lightblue"
OUTPUT_COLOR = "darkolivegreen1"
SAVED_COLOR = "orange"


class RendererNotFoundError(RuntimeError):
    """No Graphviz ``dot`` program was found to render a :class:`Digraph`."""


# ------------------------------------------------------------------------------ DOT text
def _quote(value) -> str:
    text = str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{text}"'


def _attr_list(attrs: dict) -> str:
    if not attrs:
        return ""
    return " [" + " ".join(f"{k}={_quote(v)}" for k, v in attrs.items()) + "]"


def _renderer() -> list[str] | None:
    """The command that runs a ``dot``: the system Graphviz first, then graphviz-pure's."""
    exe = shutil.which("dot")
    if exe:
        return [exe]
    exe = shutil.which("graphviz-pure")
    if exe:
        return [exe]
    # graphviz-pure installed into this interpreter's environment, which is not on PATH
    # (a virtual environment used without activating it)
    name = "graphviz-pure.exe" if os.name == "nt" else "graphviz-pure"
    for folder in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        exe = os.path.join(folder, name) if folder else ""
        if exe and os.path.isfile(exe) and os.access(exe, os.X_OK):
            return [exe]
    return None


class Digraph:
    """A directed graph written as DOT text: the small part of ``graphviz.Digraph`` that
    torchviz uses (``node``, ``edge``, ``attr``, ``source``, ``pipe``, ``render``, ``save``,
    and SVG display in notebooks)."""

    def __init__(self, name: str | None = None, graph_attr: dict | None = None,
                 node_attr: dict | None = None, edge_attr: dict | None = None) -> None:
        self.name = name
        self.graph_attr = dict(graph_attr or {})
        self.node_attr = dict(node_attr or {})
        self.edge_attr = dict(edge_attr or {})
        self.body: list[str] = []
        self.nodes: dict[str, dict] = {}        # id -> attributes (label included)
        self.edges: list[tuple[str, str, dict]] = []

    def node(self, name: str, label: str | None = None, **attrs) -> None:
        if label is not None:
            attrs = {"label": label, **attrs}
        self.nodes[name] = attrs
        self.body.append(f"\t{_quote(name)}{_attr_list(attrs)}")

    def edge(self, tail_name: str, head_name: str, **attrs) -> None:
        self.edges.append((tail_name, head_name, attrs))
        self.body.append(f"\t{_quote(tail_name)} -> {_quote(head_name)}{_attr_list(attrs)}")

    def attr(self, kw: str = "graph", **attrs) -> None:
        """Set default attributes of the graph, or of every ``node`` or ``edge``."""
        if kw not in ("graph", "node", "edge"):
            raise ValueError(f"attr statement must target graph, node, or edge: {kw!r}")
        getattr(self, kw + "_attr").update(attrs)

    @property
    def source(self) -> str:
        """The DOT text."""
        head = "digraph" + (f" {_quote(self.name)}" if self.name else "") + " {\n"
        lines = [f"\t{kw}{_attr_list(attrs)}\n"
                 for kw, attrs in (("graph", self.graph_attr), ("node", self.node_attr),
                                   ("edge", self.edge_attr)) if attrs]
        return head + "".join(lines) + "".join(line + "\n" for line in self.body) + "}\n"

    def __str__(self) -> str:
        return self.source

    def __repr__(self) -> str:
        return f"<ember.viz.Digraph with {len(self.nodes)} nodes and {len(self.edges)} edges>"

    def save(self, filename: str | None = None, directory: str | None = None) -> str:
        """Write the DOT text to ``directory/filename`` (default ``Digraph.gv``); return it."""
        path = os.path.join(directory or "", filename or f"{self.name or 'Digraph'}.gv")
        parent = os.path.dirname(path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.source)
        return path

    def pipe(self, format: str = "svg") -> bytes:
        """The graph rendered by ``dot -T<format>`` (``svg``, ``png``, ...), as bytes."""
        command = _renderer()
        if command is None:
            raise RendererNotFoundError(
                f"make_dot: rendering to {format!r} needs a Graphviz 'dot' program, and none "
                "was found ('dot' or 'graphviz-pure' on PATH). Install one with "
                "`pip install graphviz-pure` or `apt-get install graphviz` (Debian/Ubuntu). "
                "The DOT source is available without one via `.source` (or `.save()`).")
        try:
            done = subprocess.run([*command, f"-T{format}"], input=self.source.encode("utf-8"),
                                  capture_output=True, check=False)
        except OSError as e:
            raise RendererNotFoundError(f"make_dot: could not run {command[0]!r}: {e}") from e
        if done.returncode != 0:
            message = done.stderr.decode("utf-8", "replace").strip()
            raise RuntimeError(f"{os.path.basename(command[0])} -T{format} failed "
                               f"(exit status {done.returncode}): {message}")
        return done.stdout

    def render(self, filename: str | None = None, directory: str | None = None,
               format: str = "svg", cleanup: bool = False) -> str:
        """Save the DOT text to ``filename`` and render it to ``filename.<format>``; return the
        rendered file's path. ``cleanup=True`` deletes the DOT file afterwards."""
        source_path = self.save(filename, directory)
        out_path = f"{source_path}.{format}"
        data = self.pipe(format)
        with open(out_path, "wb") as f:
            f.write(data)
        if cleanup:
            os.remove(source_path)
        return out_path

    def _repr_svg_(self) -> str | None:
        try:
            return self.pipe("svg").decode("utf-8")
        except RendererNotFoundError:
            return None  # the notebook falls back to repr(); .source still has the DOT text


# ------------------------------------------------------------------------------ make_dot
def _shape_str(shape) -> str:
    return str(tuple(int(s) for s in shape))


def _saved_entries(node):
    """``(label, key, array)`` for each tensor a node keeps for backward."""
    saved = getattr(node, "_saved", None) or ()
    for i, entry in enumerate(saved):
        if isinstance(entry, Tensor):
            yield f"saved {i}", entry, entry._data
        elif isinstance(entry, tuple) and entry and hasattr(entry[0], "shape"):
            yield f"saved {i}", entry[0], entry[0]     # a custom Function's own output
    saved_out = getattr(node, "_saved_out", None)
    if saved_out is not None:
        yield "result", saved_out[0], saved_out[0]


def _as_outputs(output) -> list:
    if isinstance(output, (tuple, list)):
        return list(output)
    return [output]


def make_dot(output, params: dict | None = None, show_saved: bool = False) -> Digraph:
    """The backward graph of ``output`` (a tensor, or a tuple/list of them) as a
    :class:`Digraph`, drawn as the community's torchviz draws it.

    One box per node, named as torch names it (``MulBackward0``); a leaf's box
    (``AccumulateGrad``) shows its name from ``params`` (``dict(model.named_parameters())``)
    and its shape, in light blue; outputs are green; ``show_saved=True`` adds each tensor a
    node saved for backward (orange, with shape, dtype and bytes). Arrows follow
    ``next_functions`` reversed, from an input's node to the node that uses it, so they read
    in forward order as torchviz's do. Node ids are assigned in walk order, so the same graph
    gives the same text. The walk is iterative: any depth works.
    """

    if params is not None:
        if not isinstance(params, dict):
            raise TypeError("make_dot: params must be a dict of name -> tensor, e.g. "
                            f"dict(model.named_parameters()), but got {type(params).__name__}")
        param_names = {id(v): k for k, v in params.items()}
    else:
        param_names = {}

    def leaf_label(tensor) -> str:
        name = param_names.get(id(tensor), "")
        shape = _shape_str(tensor.shape)
        return f"{name}\n{shape}" if name else shape

    dot = Digraph(node_attr=NODE_ATTR, graph_attr={"size": "12,12"})
    ids: dict[int, str] = {}            # id(node) -> DOT id
    saved_ids: dict[int, str] = {}      # id(saved tensor or array) -> DOT id
    keep_alive = []                     # ids stay unique while we hold what they name

    def node_id(node) -> tuple[str, bool]:
        key = id(node)
        if key in ids:
            return ids[key], False
        ids[key] = f"n{len(ids)}"
        keep_alive.append(node)
        return ids[key], True

    roots = []
    for i, out in enumerate(_as_outputs(output)):
        if isinstance(out, Node):
            roots.append(out)
            continue
        if not isinstance(out, Tensor):
            raise TypeError("make_dot: expected a tensor, a grad_fn, or a tuple/list of them, "
                            f"but got {type(out).__name__}")
        out_id = f"out{i}"
        dot.node(out_id, leaf_label(out), fillcolor=OUTPUT_COLOR)
        fn = out.grad_fn
        if fn is not None:
            fn_id, _ = node_id(fn)
            roots.append(fn)
            dot.edge(fn_id, out_id)

    # depth-first, inputs in next_functions order; every node drawn once
    drawn: set[str] = set()
    stack = list(reversed(roots))
    while stack:
        fn = stack.pop()
        fn_id, _ = node_id(fn)
        if fn_id in drawn:
            continue
        drawn.add(fn_id)
        if isinstance(fn, AccumulateGrad):
            dot.node(fn_id, leaf_label(fn.variable), fillcolor=LEAF_COLOR)
        else:
            dot.node(fn_id, type(fn).__name__)
        if show_saved:
            for label, key, array in _saved_entries(fn):
                sid = saved_ids.get(id(key))
                if sid is None:
                    sid = saved_ids[id(key)] = f"s{len(saved_ids)}"
                    keep_alive.append(key)
                    dtype = getattr(array, "dtype", "")
                    dot.node(sid, f"{label}\n{_shape_str(array.shape)}\n{dtype}, "
                             f"{int(array.nbytes)} bytes", fillcolor=SAVED_COLOR)
                dot.edge(sid, fn_id, dir="none")
        children = []
        for nxt, _ in fn.next_functions or ():
            if nxt is None:
                continue
            nxt_id, _ = node_id(nxt)
            dot.edge(nxt_id, fn_id)
            children.append(nxt)
        stack.extend(reversed(children))

    # torchviz's resize_graph: grow the drawing with the number of statements
    size = max(12.0, len(dot.body) * 0.15)
    dot.graph_attr["size"] = f"{size:g},{size:g}"
    return dot


# ------------------------------------------------------------------------------ summary
_RULE = "-" * 64
_DOUBLE_RULE = "=" * 64


def _tensors_in(value) -> list:
    """The tensors in a module's output, nested tuples/lists/dicts flattened in order."""
    found, stack = [], [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Tensor):
            found.append(item)
        elif isinstance(item, (tuple, list)):
            stack.extend(reversed(item))
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
    return found


def summary(model, input_size, batch_size: int = -1, dtypes=None) -> str:
    """torchsummary's table for ``model``: one row per layer that ran (leaf modules, and
    modules holding parameters of their own), its output shape and parameter count, then the
    totals and estimated sizes. ``input_size`` is one input's shape without the batch, e.g.
    ``(1, 28, 28)``, or a list of them for several inputs; ``dtypes`` gives each input's
    dtype (default ``float32``). The model runs once, under ``no_grad``, on a batch of 2.
    Prints the table and returns it.

    Unlike torchsummary, every parameter is counted (not only ``weight`` and ``bias``),
    shared parameters once, and sizes use each tensor's real element size.
    """

    if isinstance(input_size, tuple) or (isinstance(input_size, list) and input_size
                                         and isinstance(input_size[0], int)):
        input_size = [tuple(input_size)]
    input_size = [tuple(s) for s in input_size]
    if dtypes is None:
        dtypes = [ember.float32] * len(input_size)
    if len(dtypes) != len(input_size):
        raise ValueError(f"summary: got {len(input_size)} input sizes but {len(dtypes)} dtypes; "
                         "give one dtype per input")
    inputs = [ember.rand(2, *size).to(dtype) if dtype.is_floating_point
              else ember.zeros(2, *size, dtype=dtype)
              for size, dtype in zip(input_size, dtypes)]

    rows = []   # (name, output shapes, params, output bytes per sample)

    def hook(module, args, output):
        params = sum(p.numel() for p in module.parameters(recurse=False))
        outs = _tensors_in(output)
        shapes = [[batch_size, *o.shape[1:]] if o.dim() else [] for o in outs]
        per_sample = sum(o.numel() // max(o.shape[0], 1) * o.element_size() if o.dim()
                         else o.element_size() for o in outs)
        name = f"{type(module).__name__}-{len(rows) + 1}"
        rows.append((name, shapes[0] if len(shapes) == 1 else shapes, params, per_sample))

    handles = [m.register_forward_hook(hook) for m in model.modules()
               if not any(True for _ in m.children())
               or any(True for _ in m.parameters(recurse=False))]
    try:
        with ember.no_grad():
            model(*inputs)
    finally:
        for h in handles:
            h.remove()

    params = list(model.parameters())
    total = sum(p.numel() for p in params)
    trainable = sum(p.numel() for p in params if p.requires_grad)
    batch = abs(batch_size)
    mb = 1024.0 ** 2
    input_mb = sum(math.prod(s) * t.element_size() for s, t in zip(input_size, inputs)) \
        * batch / mb
    output_mb = 2.0 * sum(r[3] for r in rows) * batch / mb   # x2 for gradients
    params_mb = sum(p.numel() * p.element_size() for p in params) / mb

    lines = [_RULE, "{:>20}  {:>25} {:>15}".format("Layer (type)", "Output Shape", "Param #"),
             _DOUBLE_RULE]
    lines += ["{:>20}  {:>25} {:>15}".format(name, str(shape), f"{n:,}")
              for name, shape, n, _ in rows]
    lines += [_DOUBLE_RULE,
              f"Total params: {total:,}",
              f"Trainable params: {trainable:,}",
              f"Non-trainable params: {total - trainable:,}",
              _RULE,
              f"Input size (MB): {input_mb:0.2f}",
              f"Forward/backward pass size (MB): {output_mb:0.2f}",
              f"Params size (MB): {params_mb:0.2f}",
              f"Estimated Total Size (MB): {input_mb + output_mb + params_mb:0.2f}",
              _RULE]
    text = "\n".join(lines) + "\n"
    print(text)
    return text


def print_graph(output, file=None, params: dict | None = None) -> None:
    """Print the backward graph of ``output`` (a tensor, a ``grad_fn``, or a tuple/list of
    them) as an indented tree, inputs in ``next_functions`` order. A leaf shows its name
    from ``params`` (``dict(model.named_parameters())``) and its shape; a node reached again
    is marked ``[#k]`` where first drawn and referenced as ``[#k] (shown above)`` afterwards.
    Iterative, so any depth works: every 32 levels the indentation wraps to the left margin."""

    names = {id(v): k for k, v in (params or {}).items()}
    roots = []
    for out in output if isinstance(output, (tuple, list)) else (output,):
        if isinstance(out, Tensor):
            if out.grad_fn is None:
                state = "a leaf that requires grad" if out.requires_grad else \
                    "does not require grad"
                roots.append(f"<tensor of shape {tuple(out.shape)}: no grad_fn, {state}>")
                continue
            out = out.grad_fn
        roots.append(out)

    # nodes reached along more than one edge get a reference number
    seen_once, shared, stack = set(), {}, [r for r in roots if isinstance(r, Node)]
    while stack:
        node = stack.pop()
        if id(node) in seen_once:
            shared.setdefault(id(node), 0)
            continue
        seen_once.add(id(node))
        stack.extend(n for n, _ in node.next_functions or () if n is not None)

    def label(node) -> str:
        name = type(node).__name__
        if isinstance(node, AccumulateGrad):
            var = node.variable
            shape = tuple(var.shape)
            name += f" ({names[id(var)]}: {shape})" if id(var) in names else f" ({shape})"
        return name

    write = (file if file is not None else sys.stdout).write
    refs: dict[int, int] = {}
    wrap = 32
    # (node, prefix of this line, prefix for its children, depth)
    stack = [(r, "", "", 0) for r in reversed(roots)]
    while stack:
        node, prefix, child_prefix, depth = stack.pop()
        if isinstance(node, str):
            write(node + "\n")
            continue
        text = label(node)
        key = id(node)
        if key in shared:
            if key in refs:
                write(f"{prefix}{text} [#{refs[key]}] (shown above)\n")
                continue
            refs[key] = len(refs) + 1
            text += f" [#{refs[key]}]"
        write(prefix + text + "\n")
        children = [n for n, _ in node.next_functions or () if n is not None]
        if children and (depth + 1) % wrap == 0:
            write(f"{child_prefix}└─ ... (depth {depth + 1} continues at the left margin)\n")
            stack.extend((n, "", "", depth + 1) for n in reversed(children))
            continue
        for i in range(len(children) - 1, -1, -1):
            last = i == len(children) - 1
            stack.append((children[i], child_prefix + ("└─ " if last else "├─ "),
                          child_prefix + ("   " if last else "│  "), depth + 1))
