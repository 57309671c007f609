"""Printing tensors exactly as torch does: ``tensor([1., 2.], dtype=torch.float64, requires_grad=True)``.

Follows torch's formatter: floats print with 4 decimals, all-integer floats as ``1.``, and
scientific notation when the magnitudes span more than 1000x or leave [1e-4, 1e8); values
share one column width (complex values: the real and imaginary parts each have their own
format, as torch's, and print as ``1.+2.j``); more than 1000 elements are summarised with ``...``. A device tensor
prints from a host copy of its data, with ``device='strict'`` as torch shows ``device='cuda:0'``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ._backend import FLOAT_KINDS, device_of, host, ndarray, to_host
from ._backend import dtypes as _dt


@dataclass
class _PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PRINT_OPTS = _PrintOptions()


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None) -> None:
    """``torch.set_printoptions``."""
    if profile == "default":
        PRINT_OPTS.__init__()
    elif profile == "short":
        PRINT_OPTS.__init__(2, 1000, 2, 80)
    elif profile == "full":
        PRINT_OPTS.__init__(4, math.inf, 3, 80)
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict:
    return dict(PRINT_OPTS.__dict__)


class _Formatter:
    def __init__(self, values: ndarray, floating: bool) -> None:
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = values.reshape(-1)
        if not floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(str(v)))
            return
        finite = flat[host.isfinite(flat) & (flat != 0)].astype(host.float64)
        if finite.size == 0:
            return
        absv = host.abs(finite)
        lo, hi = absv.min(), absv.max()
        p = PRINT_OPTS.precision
        self.int_mode = bool(host.all(finite == host.ceil(finite)))
        if self.int_mode:
            if hi / lo > 1000.0 or hi > 1.0e8:
                self.sci_mode = True
                widths = (len(f"{v:.{p}e}") for v in finite.tolist())
            else:
                widths = (len(f"{v:.0f}") + 1 for v in finite.tolist())
        elif hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4:
            self.sci_mode = True
            widths = (len(f"{v:.{p}e}") for v in finite.tolist())
        else:
            widths = (len(f"{v:.{p}f}") for v in finite.tolist())
        self.max_width = max(self.max_width, max(widths))
        if PRINT_OPTS.sci_mode is not None:
            self.sci_mode = PRINT_OPTS.sci_mode

    def format(self, value) -> str:
        p = PRINT_OPTS.precision
        if self.floating:
            if self.sci_mode:
                s = f"{value:{self.max_width}.{p}e}"
            elif self.int_mode:
                s = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    s += "."
            else:
                s = f"{value:.{p}f}"
        else:
            s = str(value)
        return (self.max_width - len(s)) * " " + s


class _ComplexFormatter:
    """torch's two formatters of a complex tensor: one for the real parts, one for the
    imaginary parts, joined as ``1.+2.j`` (``_val_formatter`` in torch/_tensor_str.py)."""

    def __init__(self, values: ndarray) -> None:
        self.real = _Formatter(values.real, True)
        self.imag = _Formatter(values.imag, True)
        self.max_width = self.real.max_width + self.imag.max_width + 1  # the 'j'

    def format(self, value: complex) -> str:
        real = self.real.format(value.real)
        imag = (self.imag.format(value.imag) + "j").lstrip()
        return real + imag if imag[0] in "+-" else real + "+" + imag


def _summarized(a: ndarray) -> ndarray:
    e = PRINT_OPTS.edgeitems
    if a.ndim == 0:
        return a
    if a.shape[0] > 2 * e:
        a = host.concatenate([a[:e], a[-e:]])
    return host.stack([_summarized(x) for x in a]) if a.ndim > 1 else a


def _vector(a: ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    per_line = max(1, int(math.floor((PRINT_OPTS.linewidth - indent) / (fmt.max_width + 2))))
    e = PRINT_OPTS.edgeitems
    if summarize and a.shape[0] > 2 * e:
        data = ([fmt.format(v) for v in a[:e].tolist()] + [" ..."]
                + [fmt.format(v) for v in a[-e:].tolist()])
    else:
        data = [fmt.format(v) for v in a.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _tensor_str(a: ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    if a.ndim == 0:
        return fmt.format(a.item())
    if a.ndim == 1:
        return _vector(a, indent, summarize, fmt)
    e = PRINT_OPTS.edgeitems
    if summarize and a.shape[0] > 2 * e:
        parts = ([_tensor_str(a[i], indent + 1, summarize, fmt) for i in range(e)] + ["..."]
                 + [_tensor_str(a[i], indent + 1, summarize, fmt)
                    for i in range(a.shape[0] - e, a.shape[0])])
    else:
        parts = [_tensor_str(a[i], indent + 1, summarize, fmt) for i in range(a.shape[0])]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def _add_suffixes(text: str, suffixes: list[str], indent: int) -> str:
    parts = [text]
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def array_str(a: ndarray, indent: int) -> str:
    """The bracketed body of a tensor's repr (``a``: a host array)."""
    summarize = a.size > PRINT_OPTS.threshold
    if a.dtype == host.float16 or a.dtype.kind == "V":  # float16, bfloat16: print as float32
        a = a.astype(host.float32)
    shown = _summarized(a) if summarize else a
    if a.dtype.kind == "c":
        return _tensor_str(a, indent, summarize, _ComplexFormatter(shown))
    fmt = _Formatter(shown, a.dtype.kind in FLOAT_KINDS)
    return _tensor_str(a, indent, summarize, fmt)


def tensor_repr(t, prefix: str = "tensor(") -> str:
    """``repr(t)`` as torch prints it, with dtype, grad_fn and requires_grad suffixes."""
    a = t._data
    indent = len(prefix)
    suffixes = []
    dev = device_of(a)
    if dev.type != "cpu":  # torch prints the device of non-CPU tensors: device='cuda:0'
        suffixes.append(f"device='{dev}'")
        a = to_host(a)
    if a.size == 0:
        if a.shape != (0,):
            suffixes.append(f"size={tuple(a.shape)}")
        body = "[]"
    else:
        body = array_str(a, indent)
    dtype = _dt._FROM_NP[a.dtype]
    default = _dt.get_default_dtype()
    if dtype not in (default, default.to_complex(), _dt.int64, _dt.bool_):
        suffixes.append(f"dtype={dtype!r}")
    if t._grad_fn is not None:
        suffixes.append(f"grad_fn=<{t._grad_fn.name().rsplit('::', 1)[-1]}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)
