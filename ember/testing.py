"""``ember.testing``: ``assert_close``, ``make_tensor`` and the deprecated ``assert_allclose``.

Follows ``torch.testing`` 2.13: the same pairing of inputs (None, booleans, numbers, tensor-likes;
sequences and mappings recursed), the same default tolerances per dtype, and the same error
types and messages, so a failing test reads as it would under torch.
"""

from __future__ import annotations

import cmath
import collections.abc
import contextlib
import math
import warnings
from collections.abc import Callable
from typing import Any

from ._backend import host
from ._backend.errstate import ignore_divide_invalid
from ._tensor import Tensor

__all__ = ["assert_allclose", "assert_close", "make_tensor"]

# torch's defaults, {dtype name: (rtol, atol)}; other dtypes (integers, bool) compare exactly
_DTYPE_PRECISIONS = {
    "float16": (0.001, 1e-5), "bfloat16": (0.016, 1e-5), "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7), "complex32": (0.001, 1e-5), "complex64": (1.3e-6, 1e-5),
    "complex128": (1e-7, 1e-7),
}
# Python number types compare with the tolerances of these dtypes (torch's NumberPair)
_NUMBER_DTYPES = {int: "int64", float: "float64", complex: "complex128"}


class _Mismatch(Exception):
    """A failed comparison: the exception type to raise, its message and the item's path."""

    def __init__(self, type_: type[Exception], msg: str, id_: tuple = ()) -> None:
        super().__init__(msg)
        self.type, self.msg, self.id = type_, msg, id_

    def to_error(self, msg: str | Callable[[str], str] | None = None) -> Exception:
        if not isinstance(msg, str):
            generated = self.msg
            if self.id:
                generated += ("\n\nThe failure occurred for item "
                              f"{''.join(str([item]) for item in self.id)}")
            msg = msg(generated) if callable(msg) else generated
        return self.type(msg)


class _Unsupported(Exception):
    """This pair kind cannot compare the inputs: try the next."""


def _dtype_name(dtype) -> str:
    return str(dtype).rsplit(".", 1)[-1]


def _tolerances(*dtype_names: str, rtol: float | None, atol: float | None, id_: tuple = (),
                precisions: dict | None = None) -> tuple[float, float]:
    if (rtol is None) ^ (atol is None):
        raise _Mismatch(ValueError, "Both 'rtol' and 'atol' must be either specified or omitted, "
                        f"but got no {'rtol' if rtol is None else 'atol'}.", id_)
    if rtol is not None:
        return rtol, atol
    table = precisions or _DTYPE_PRECISIONS
    rtols, atols = zip(*[table.get(n, (0.0, 0.0)) for n in dtype_names])
    return max(rtols), max(atols)


def _mismatch_msg(identifier, default: str, extra: str | None, abs_diff, abs_idx, atol,
                  rel_diff, rel_idx, rtol) -> str:
    """torch's ``_make_mismatch_msg``: header, extra line, greatest absolute/relative diffs."""
    equality = rtol == 0 and atol == 0

    def diff_line(kind: str, diff, idx, tol) -> str:
        line = (f"{kind.title()} difference: {diff}" if idx is None
                else f"Greatest {kind} difference: {diff} at index {idx}")
        return line + ("" if equality else f" (up to {tol} allowed)") + "\n"

    if identifier is None:
        identifier = default
    elif callable(identifier):
        identifier = identifier(default)
    msg = f"{identifier} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        msg += f"{extra.strip()}\n"
    msg += diff_line("absolute", abs_diff, abs_idx, atol)
    msg += diff_line("relative", rel_diff, rel_idx, rtol)
    return msg.strip()


def _scalar_mismatch_msg(actual, expected, rtol: float, atol: float, identifier=None) -> str:
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_msg(identifier, "Scalars", f"Expected {expected} but got {actual}.",
                         abs_diff, None, atol, rel_diff, None, rtol)


# ---------------------------------------------------------------------------------- pairs

def _compare_none(actual, expected, id_: tuple, **_) -> None:
    if not (actual is None or expected is None):
        raise _Unsupported
    if not (actual is None and expected is None):
        raise _Mismatch(AssertionError, f"None mismatch: {actual} is not {expected}", id_)


def _compare_bool(actual, expected, id_: tuple, **_) -> None:
    kinds = (bool, host.bool_)
    if not (isinstance(actual, kinds) and isinstance(expected, kinds)):
        raise _Unsupported
    actual, expected = bool(actual), bool(expected)
    if actual is not expected:
        raise _Mismatch(AssertionError, f"Booleans mismatch: {actual} is not {expected}", id_)


def _compare_number(actual, expected, id_: tuple, rtol=None, atol=None, equal_nan=False,
                    **_) -> None:
    kinds = (int, float, complex, host.number)
    if not (isinstance(actual, kinds) and isinstance(expected, kinds)):
        raise _Unsupported
    actual, expected = (x.item() if isinstance(x, host.number) else x for x in (actual, expected))
    rtol, atol = _tolerances(*(_NUMBER_DTYPES[type(x)] for x in (actual, expected)),
                             rtol=rtol, atol=atol, id_=id_)
    # (torch's NumberPair checks types only when asked to; assert_close never asks)
    if actual == expected:
        return
    if equal_nan and cmath.isnan(actual) and cmath.isnan(expected):
        return
    abs_diff = abs(actual - expected)
    if cmath.isfinite(abs_diff) and abs_diff <= atol + rtol * abs(expected):
        return
    raise _Mismatch(AssertionError, _scalar_mismatch_msg(actual, expected, rtol, atol), id_)


def _as_tensor(x) -> Tensor:
    if isinstance(x, Tensor):
        return x
    from . import as_tensor  # (ember's namespace: loaded by then)
    try:
        return as_tensor(x)
    except (TypeError, ValueError, RuntimeError):  # not tensor-like after all
        raise _Unsupported from None


def _compare_tensors(actual, expected, id_: tuple, allow_subclasses=True, rtol=None, atol=None,
                     equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                     check_stride=False, **_) -> None:
    if not (isinstance(actual, type(expected)) or isinstance(expected, type(actual))):
        raise _Unsupported
    if not allow_subclasses and type(actual) is not type(expected):
        raise _Unsupported
    actual, expected = _as_tensor(actual), _as_tensor(expected)
    rtol, atol = _tolerances(_dtype_name(actual.dtype), _dtype_name(expected.dtype), rtol=rtol,
                             atol=atol, id_=id_)

    def mismatch(attribute: str, a, e):
        raise _Mismatch(AssertionError, f"The values for attribute '{attribute}' do not match: "
                        f"{a} != {e}.", id_)

    if actual.shape != expected.shape:
        mismatch("shape", actual.shape, expected.shape)
    if actual.layout != expected.layout:
        if check_layout:
            mismatch("layout", actual.layout, expected.layout)
    elif check_stride and actual.stride() != expected.stride():
        mismatch("stride()", actual.stride(), expected.stride())
    if check_device and actual.device != expected.device:
        mismatch("device", actual.device, expected.device)
    if check_dtype and actual.dtype != expected.dtype:
        mismatch("dtype", actual.dtype, expected.dtype)

    actual, expected = actual.detach(), expected.detach()
    if actual.device != expected.device:
        actual, expected = actual.cpu(), expected.cpu()
    if actual.dtype != expected.dtype:
        from . import promote_types
        dtype = promote_types(actual.dtype, expected.dtype)
        actual, expected = actual.to(dtype), expected.to(dtype)
    _compare_values(actual, expected, rtol, atol, equal_nan, id_)


def _compare_values(actual: Tensor, expected: Tensor, rtol: float, atol: float,
                    equal_nan: bool, id_: tuple) -> None:
    """torch's ``_compare_regular_values_close``: ``isclose``, then the statistics of the
    mismatches, computed in the tensors' dtype as torch computes them."""
    from . import isclose
    matches = isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan)
    m = matches.cpu().numpy()
    if m.all():
        return
    a, e = actual.cpu().numpy(), expected.cpu().numpy()
    if a.shape == ():
        msg = _scalar_mismatch_msg(a.item(), e.item(), rtol, atol)
        raise _Mismatch(AssertionError, msg, id_)
    total, mismatched = m.size, int(m.size - m.sum())
    extra = f"Mismatched elements: {mismatched} / {total} ({mismatched / total:.1%})"
    a, e, m = a.reshape(-1), e.reshape(-1), m.reshape(-1)
    if a.dtype.kind not in "fc":  # torch upcasts integers (and bools) to int64 first
        a, e = a.astype(host.int64), e.astype(host.int64)
    abs_diff = host.abs(a - e)
    abs_diff[m] = 0
    # an integer division gives the default float dtype in torch
    with ignore_divide_invalid():  # x / 0 is inf (or nan), as torch
        rel_diff = (abs_diff / host.abs(e)).astype(abs_diff.dtype if a.dtype.kind in "fc"
                                                   else host.float32)
    rel_diff[m] = 0

    def greatest(diff):
        i = int(host.argmax(diff)) if not host.isnan(diff).any() \
            else int(host.argmax(host.isnan(diff)))  # torch.max propagates NaN: its index
        return diff[i].item(), tuple(int(k) for k in host.unravel_index(i, actual.shape))

    (abs_max, abs_idx), (rel_max, rel_idx) = greatest(abs_diff), greatest(rel_diff)
    raise _Mismatch(AssertionError, _mismatch_msg(None, "Tensor-likes", extra, abs_max, abs_idx,
                                                  atol, rel_max, rel_idx, rtol), id_)


_PAIRS = (_compare_none, _compare_bool, _compare_number, _compare_tensors)


def _compare(actual, expected, id_: tuple, options: dict, failures: list) -> None:
    """Recurse through sequences and mappings; compare leaves with the first pair kind that
    supports them (torch's ``originate_pairs``), collecting mismatches in ``failures``."""
    seq = collections.abc.Sequence
    if isinstance(actual, seq) and not isinstance(actual, str) \
            and isinstance(expected, seq) and not isinstance(expected, str):
        if len(actual) != len(expected):
            raise _Mismatch(AssertionError, "The length of the sequences mismatch: "
                            f"{len(actual)} != {len(expected)}", id_)
        for i in range(len(actual)):
            _compare(actual[i], expected[i], (*id_, i), options, failures)
        return
    mapping = collections.abc.Mapping
    if isinstance(actual, mapping) and isinstance(expected, mapping):
        a_keys, e_keys = set(actual.keys()), set(expected.keys())
        if a_keys != e_keys:
            raise _Mismatch(AssertionError, "The keys of the mappings do not match:\n"
                            f"Missing keys in the actual mapping: {sorted(e_keys - a_keys)}\n"
                            f"Additional keys in the actual mapping: {sorted(a_keys - e_keys)}",
                            id_)
        keys = a_keys
        with contextlib.suppress(Exception):
            keys = sorted(keys)
        for k in keys:
            _compare(actual[k], expected[k], (*id_, k), options, failures)
        return
    for pair in _PAIRS:
        try:
            pair(actual, expected, id_, **options)
        except _Unsupported:
            continue
        except _Mismatch as failure:
            if failure.type is not AssertionError:
                raise  # a usage error (bad tolerances): raised at once, as torch does
            failures.append(failure)
        return
    raise _Mismatch(TypeError, f"No comparison pair was able to handle inputs of type "
                    f"{type(actual)} and {type(expected)}.", id_)


def assert_close(actual: Any, expected: Any, *, allow_subclasses: bool = True,
                 rtol: float | None = None, atol: float | None = None, equal_nan: bool = False,
                 check_device: bool = True, check_dtype: bool = True, check_layout: bool = True,
                 check_stride: bool = False, msg: str | Callable[[str], str] | None = None) -> None:
    """``torch.testing.assert_close``: raise AssertionError unless ``actual`` and ``expected``
    are close (``|actual - expected| <= atol + rtol * |expected|``, default tolerances by dtype)."""
    __tracebackhide__ = True
    options = {"allow_subclasses": allow_subclasses, "rtol": rtol, "atol": atol,
               "equal_nan": equal_nan, "check_device": check_device, "check_dtype": check_dtype,
               "check_layout": check_layout, "check_stride": check_stride}
    failures: list = []
    try:
        _compare(actual, expected, (), options, failures)
    except _Mismatch as failure:  # structure and usage errors: torch ignores ``msg`` for these
        raise failure.to_error() from None
    if failures:
        raise failures[0].to_error(msg) from None


def assert_allclose(actual: Any, expected: Any, rtol: float | None = None,
                    atol: float | None = None, equal_nan: bool = True, msg: str = "") -> None:
    """Deprecated ``torch.testing.assert_allclose``: ``assert_close`` with its older, looser
    tolerances and ``check_dtype=False``; warns FutureWarning as torch does."""
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed "
                  "in a future release. Please use `torch.testing.assert_close()` instead. You "
                  "can find detailed upgrade instructions in "
                  "https://github.com/pytorch/pytorch/issues/61844.", FutureWarning, stacklevel=2)
    from . import tensor
    if not isinstance(actual, Tensor):
        actual = tensor(actual)
    if not isinstance(expected, Tensor):
        expected = tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        rtol, atol = _tolerances(_dtype_name(actual.dtype), _dtype_name(expected.dtype),
                                 rtol=None, atol=None,
                                 precisions={"float16": (1e-3, 1e-3), "float32": (1e-4, 1e-5),
                                             "float64": (1e-5, 1e-8)})
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True,
                 check_dtype=False, check_stride=False, msg=msg or None)


# ------------------------------------------------------------------------------ make_tensor

def make_tensor(*shape, dtype, device, low: float | None = None, high: float | None = None,
                requires_grad: bool = False, noncontiguous: bool = False,
                exclude_zero: bool = False, memory_format=None) -> Tensor:
    """``torch.testing.make_tensor``: a tensor of ``shape`` with values drawn uniformly from
    ``[low, high)`` (defaults by dtype: bool [0, 2), unsigned [0, 10), signed [-9, 10),
    floating [-9, 9)), from ember's default generator."""
    import ember
    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError("The parameters `noncontiguous` and `memory_format` are mutually "
                         f"exclusive, but got noncontiguous={noncontiguous} and "
                         f"memory_format={memory_format}")
    np_dtype = host.dtype(dtype.np)
    integral = np_dtype.kind in "biu"
    if requires_grad and integral:
        raise ValueError("`requires_grad=True` is not supported for boolean and integral "
                         f"dtypes, but got dtype={dtype}")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:
        shape = (*shape[:-1], 2 * shape[-1])

    def low_high(lowest: float, highest: float, default_low: float, default_high: float):
        lo = low if low is not None else default_low
        hi = high if high is not None else default_high
        if any(isinstance(v, float) and math.isnan(v) for v in (lo, hi)):
            raise ValueError(f"`low` and `high` cannot be NaN, but got low={lo} and high={hi}")
        if lo == hi and not integral:
            warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or "
                          "complex types is deprecated since 2.1 and will be removed in 2.3. "
                          "Use `torch.full(...)` instead.", FutureWarning, stacklevel=3)
        elif lo >= hi:
            raise ValueError(f"`low` must be less than `high`, but got {lo} >= {hi}")
        elif hi < lowest or lo >= highest:
            raise ValueError(f"The value interval specified by `low` and `high` is [{lo}, {hi}), "
                             f"but {dtype} only supports [{lowest}, {highest})")
        lo, hi = min(max(lo, lowest), highest), min(max(hi, lowest), highest)
        return (math.ceil(lo), math.ceil(hi)) if integral else (lo, hi)

    if np_dtype.kind == "b":
        lo, hi = low_high(0, 2, 0, 2)
        result = ember.randint(lo, hi, shape, device=device, dtype=dtype)
    elif integral:
        info = host.iinfo(np_dtype)
        lo, hi = low_high(int(info.min), int(info.max) + (np_dtype != host.int64),
                          0 if np_dtype.kind == "u" else -9, 10)
        result = ember.randint(lo, hi, shape, device=device, dtype=dtype)
    elif np_dtype.kind == "f":
        info = host.finfo(np_dtype)
        lo, hi = low_high(float(info.min), float(info.max), -9, 9)
        result = ember.empty(shape, device=device, dtype=dtype)
        if hi - lo >= float(info.max):  # the width would overflow: draw half and double
            result.uniform_(lo / 2, hi / 2).mul_(2)
        else:
            result.uniform_(lo, hi)
    else:
        raise TypeError(f"The requested dtype '{dtype}' is not supported by "
                        "torch.testing.make_tensor(). To request support, file an issue at: "
                        "https://github.com/pytorch/pytorch/issues")
    if noncontiguous:
        result = result[..., 1::2]
    if exclude_zero:
        result[result == 0] = 1 if integral else float(host.finfo(np_dtype).tiny)
    if not integral:
        result.requires_grad = requires_grad
    return result
