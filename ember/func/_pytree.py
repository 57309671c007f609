"""A small pytree: flatten nested tuples, lists, dicts and namedtuples to their leaves and back.

The function transforms take and return pytrees of tensors, as ``torch.func``'s do (through
``torch.utils._pytree``). As there, ``None`` and every object that is not one of those containers
is a leaf, a dict keeps its insertion order, and a spec prints like torch's ``TreeSpec`` so that
the error messages that show one read the same.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class TreeSpec:
    """The structure of a pytree: a container type, its context (dict keys, namedtuple class)
    and the specs of its children; ``LEAF`` for a leaf."""

    __slots__ = ("children", "context", "kind", "num_leaves")

    def __init__(self, kind: str | None, context: Any, children: list[TreeSpec]) -> None:
        self.kind = kind  # "tuple", "list", "dict", "namedtuple"; None for a leaf
        self.context = context
        self.children = children
        self.num_leaves = 1 if kind is None else sum(c.num_leaves for c in children)

    def is_leaf(self) -> bool:
        return self.kind is None

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, TreeSpec) and self.kind == other.kind and
                self.context == other.context and self.children == other.children)

    def __hash__(self) -> int:
        return hash((self.kind, len(self.children)))

    def __repr__(self, indent: int = 0) -> str:
        """torch's ``TreeSpec.__repr__``: ``TreeSpec(tuple, None, [*,\\n  *])``."""
        if self.kind is None:
            return "*"
        context = self.context
        if self.kind == "namedtuple":
            context = f"<class '{self.context.__module__}.{self.context.__qualname__}'>"
        pad = "  " * (indent + 1)
        inner = (",\n" + pad).join(c.__repr__(indent + 1) for c in self.children)
        return f"TreeSpec({self.kind}, {context}, [{inner}])"

    def pprint(self) -> str:
        """torch's ``treespec_pprint``: the structure with ``*`` for each leaf, ``(*, *)``."""
        if self.kind is None:
            return "*"
        parts = [c.pprint() for c in self.children]
        if self.kind == "tuple":
            return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
        if self.kind == "list":
            return "[" + ", ".join(parts) + "]"
        if self.kind == "dict":
            return "{" + ", ".join(f"{k!r}: {p}" for k, p in zip(self.context, parts)) + "}"
        fields = self.context._fields
        return (f"{self.context.__name__}("
                + ", ".join(f"{f}={p}" for f, p in zip(fields, parts)) + ")")


LEAF = TreeSpec(None, None, [])


def _is_namedtuple(obj: object) -> bool:
    return isinstance(obj, tuple) and hasattr(type(obj), "_fields")


def tree_flatten(tree: Any) -> tuple[list, TreeSpec]:
    """``(leaves, spec)`` of ``tree``, leaves in order (dicts in insertion order)."""
    leaves: list = []
    return leaves, _flatten(tree, leaves)


def _flatten(tree: Any, leaves: list) -> TreeSpec:
    if _is_namedtuple(tree):
        return TreeSpec("namedtuple", type(tree), [_flatten(c, leaves) for c in tree])
    t = type(tree)
    if t is tuple or t is list:
        return TreeSpec(t.__name__, None, [_flatten(c, leaves) for c in tree])
    if isinstance(tree, dict):
        keys = list(tree)
        return TreeSpec("dict", keys, [_flatten(tree[k], leaves) for k in keys])
    leaves.append(tree)
    return LEAF


def tree_unflatten(leaves: list, spec: TreeSpec) -> Any:
    """The pytree of structure ``spec`` whose leaves are ``leaves`` (in order)."""
    it = iter(leaves)
    out = _unflatten(it, spec)
    return out


def _unflatten(it, spec: TreeSpec) -> Any:
    if spec.kind is None:
        return next(it)
    children = [_unflatten(it, c) for c in spec.children]
    if spec.kind == "tuple":
        return tuple(children)
    if spec.kind == "list":
        return children
    if spec.kind == "dict":
        return dict(zip(spec.context, children))
    return spec.context(*children)


def tree_map(fn: Callable[[Any], Any], tree: Any) -> Any:
    """``tree`` with ``fn`` applied to each leaf."""
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)


def tree_leaves(tree: Any) -> list:
    return tree_flatten(tree)[0]


def broadcast_prefix(prefix: Any, spec: TreeSpec) -> list | None:
    """``prefix`` (a pytree whose structure is a prefix of ``spec``'s, e.g. vmap's ``in_dims``)
    broadcast to one value per leaf of ``spec``; None where the structures disagree (torch's
    ``_broadcast_to_and_flatten``)."""
    out: list = []
    return out if _broadcast(prefix, spec, out) else None


def _broadcast(prefix: Any, spec: TreeSpec, out: list) -> bool:
    p_leaves, p_spec = tree_flatten(prefix)
    if p_spec.kind is None:
        out.extend([p_leaves[0]] * spec.num_leaves)
        return True
    if spec.kind is None or p_spec.kind != spec.kind or \
            len(p_spec.children) != len(spec.children):
        return False
    if spec.kind == "dict":
        if set(p_spec.context) != set(spec.context):
            return False
        return all(_broadcast(prefix[k], c, out) for k, c in zip(spec.context, spec.children))
    if spec.kind == "namedtuple" and p_spec.context is not spec.context:
        return False
    return all(_broadcast(p, c, out) for p, c in zip(prefix, spec.children))
