"""Run a corpus script under ember with every outermost ``nn.Module`` call compiled.

``python tests/corpus/_compile_modules.py SCRIPT [ARGS...]``: ``torch`` is ember (as under
``python -m ember``), and each module the script calls from its own code (not from inside
another module) goes through its own ``ember.compile``, as ``torch.compile(model)`` would. The
script's report must equal eager ember's bit for bit; the number of replays and graph breaks
goes to stderr as a JSON line starting with ``COMPILED``.
"""

from __future__ import annotations

import atexit
import json
import runpy
import sys
import weakref

import ember
from ember._backend import trace
from ember._capture.compiled import Compiled, _routing
from ember.nn.modules.module import Module

ember.alias_torch()
_call = Module.__call__
_compiled: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_all: list = []


def _route(mod, *args, **kwargs):
    if _routing.depth or trace.state.rec is not None:  # inside a compiled module: its own
        return _call(mod, *args, **kwargs)
    c = _compiled.get(mod)
    if c is None:
        c = _compiled[mod] = Compiled(mod, nested=True)
        _all.append(c)
    _routing.depth += 1
    try:
        return c(*args, **kwargs)
    finally:
        _routing.depth -= 1


def _report() -> None:
    print("COMPILED " + json.dumps({
        "modules": len(_all),
        "replays": sum(c.stats.replays for c in _all),
        "breaks": sorted({b.reason for c in _all for b in c.breaks}),
        "eager": sorted({e.eager_reason for c in _all for es in c.entries.values()
                         for e in es if e.eager_reason})}), file=sys.stderr)


Module.__call__ = _route
atexit.register(_report)
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
