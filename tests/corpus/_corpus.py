"""Shared by the corpus scripts: deterministic data and weights, and the values a run reports.

The scripts run unchanged under PyTorch (``python script.py``) and under ember
(``python -m ember script.py``). Their random streams differ between the two libraries, so
everything a script compares is built here without a random generator: inputs from sines,
weights re-initialised from sines. ``report`` writes the values to the JSON file named by
``CORPUS_OUT`` (the test compares the two runs) and prints them.
"""

import json
import math
import os

import torch


def sines(*shape, scale=1.0, phase=0.0, dtype=torch.float32):
    """A deterministic tensor of ``shape``: ``scale * sin(0.37 * i + phase)`` in row-major order."""
    n = math.prod(shape)
    return (torch.sin(torch.arange(n, dtype=torch.float64) * 0.37 + phase) * scale).to(dtype).reshape(shape)


def labels(n, classes, phase=0.0):
    """Deterministic class labels in ``[0, classes)``."""
    return (torch.sin(torch.arange(n, dtype=torch.float64) * 1.3 + phase).abs() * 997).long() % classes


def init_(model, scale=1.0):
    """Re-initialise every parameter of ``model`` from sines, scaled like the default init."""
    with torch.no_grad():
        for i, (name, p) in enumerate(model.named_parameters()):
            fan_in = p.shape[-1] if p.dim() > 1 else max(p.numel(), 1)
            if p.dim() > 2:
                fan_in = math.prod(p.shape[1:])
            bound = scale / math.sqrt(fan_in)
            p.copy_(sines(*p.shape, scale=bound, phase=0.5 * i, dtype=p.dtype))
    return model


def _plain(value):
    if isinstance(value, torch.Tensor):
        return value.detach().float().tolist() if value.is_floating_point() else value.tolist()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def report(**values):
    """Print the run's values and write them to ``$CORPUS_OUT`` (JSON) when it is set."""
    plain = {k: _plain(v) for k, v in values.items()}
    path = os.environ.get("CORPUS_OUT")
    if path:
        with open(path, "w") as f:
            json.dump(plain, f)
    for k, v in plain.items():
        print(f"{k}: {v if not isinstance(v, list) or len(str(v)) < 120 else str(v)[:117] + '...'}")
