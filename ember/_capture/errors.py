"""The errors of ``ember.compile`` (torch's names, in ``torch._dynamo.exc``)."""

from __future__ import annotations


class Unsupported(RuntimeError):
    """``torch._dynamo.exc.Unsupported``: ``fullgraph=True`` and the call breaks the graph."""
