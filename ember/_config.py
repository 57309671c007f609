"""``ember.show_config()``: what ember runs on, as ``torch.__config__.show()`` for torch.

Nothing here is imported before the call: the optional packages are looked up in the installed
distributions' metadata, never imported, so the report is fast and has no side effects.
"""

from __future__ import annotations

import platform
import shutil
import sys

from . import __version__, cuda
from ._backend import host

# (what the user imports, its distribution on PyPI, what ember uses it for)
_OPTIONAL = (
    ("torch", "torch", "tests: the oracle ember is checked against"),
    ("safetensors", "safetensors", "tests: cross-checks the safetensors files"),
    ("sklearn", "scikit-learn", "demo extra: data sets"),
    ("matplotlib", "matplotlib", "demo extra: plots"),
    ("tqdm", "tqdm", "demo extra: progress bars"),
)


def _version(distribution: str) -> str | None:
    from importlib import metadata
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def _blas_lines(numpy) -> list[str]:
    """NumPy's BLAS and LAPACK from ``numpy.show_config(mode='dicts')`` (NumPy >= 1.26)."""
    try:
        deps = numpy.show_config(mode="dicts")["Build Dependencies"]
    except (TypeError, ValueError, KeyError, AttributeError):  # older NumPy: no dict mode; print nothing rather than fail
        return ["    BLAS/LAPACK: unknown (numpy.show_config(mode='dicts') not available)"]
    lines = []
    for key in ("blas", "lapack"):
        info = deps.get(key) or {}
        if not info.get("found", True):
            lines.append(f"    {key.upper()}: not found")
            continue
        text = " ".join(str(info[k]) for k in ("name", "version") if info.get(k))
        config = info.get("openblas configuration")
        if config:
            text += f" ({' '.join(str(config).split())})"
        lines.append(f"    {key.upper()}: {text or 'unknown'}")
    return lines


def show_config() -> str:
    """Print and return ember's version, Python, NumPy with its BLAS/LAPACK, the devices and
    the optional packages installed. Paste it into bug reports."""


    impl = platform.python_implementation()
    lines = [f"ember {__version__}",
             f"  Python: {sys.version.split()[0]} ({impl}) on {platform.platform()}",
             f"  NumPy: {host.__version__}"]
    lines += _blas_lines(host)
    cuda_state = "available" if cuda.is_available() else "not available (ember computes on the CPU)"
    lines += ["  Devices:", "    cpu: available", f"    cuda: {cuda_state}",
              "  Optional packages:"]
    for module, distribution, use in _OPTIONAL:
        version = _version(distribution)
        lines.append(f"    {module}: {version or 'not installed'}  ({use})")
    renderer = shutil.which("dot") or shutil.which("graphviz-pure")
    pure = _version("graphviz-pure")
    if renderer:
        found = renderer + (f" (graphviz-pure {pure})" if pure else "")
    else:
        found = "not found (pip install graphviz-pure, or install Graphviz's dot)"
    lines.append(f"    graphviz renderer: {found}  (drawing autograd graphs)")
    text = "\n".join(lines)
    print(text)
    return text
