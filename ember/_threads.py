"""``ember.set_num_threads`` and friends: torch's thread settings, mapped onto NumPy.

torch's intra-op pool runs its CPU kernels; ember's heavy kernels are NumPy's BLAS calls
(matmul, conv as matmul), so ``set_num_threads`` sizes the BLAS thread pool through
threadpoolctl (``pip install ember[threads]``). Without threadpoolctl the value is kept, and
returned by ``get_num_threads``, and a warning says once that BLAS is unchanged. ember has no
inter-op pool: the inter-op value is recorded, with torch's rules for setting it.
"""

from __future__ import annotations

import os
import warnings

_state: dict = {"num_threads": None, "interop": None, "warned": False}


def _check(name: str, value) -> int:
    """torch's argument checks (``RuntimeError`` for both the type and the value)."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):  # NumPy ints pass
        raise RuntimeError(  # torch raises RuntimeError for the type too
            f"{name} expects an int, but got {type(value).__name__}")
    if value <= 0:
        raise RuntimeError(f"{name} expects a positive integer")
    return int(value)


def _blas_controller():
    """threadpoolctl's view of NumPy's BLAS, or None where threadpoolctl is not installed."""
    try:
        from threadpoolctl import ThreadpoolController  # optional extra: ember[threads]
    except ImportError:
        return None
    from ._backend import host  # noqa: F401 - NumPy (and so its BLAS) must be loaded first
    return ThreadpoolController().select(user_api="blas")


def _default_threads() -> int:
    return os.cpu_count() or 1


def set_num_threads(num: int) -> None:
    """Set the threads NumPy's BLAS uses (``torch.set_num_threads``: the intra-op threads).

    Needs threadpoolctl (``pip install ember[threads]``); without it the value is recorded
    and a warning is given once."""
    num = _check("set_num_threads", num)
    _state["num_threads"] = num
    controller = _blas_controller()
    if controller is None:
        if not _state["warned"]:
            _state["warned"] = True
            warnings.warn("ember.set_num_threads: threadpoolctl is not installed, so NumPy's "
                          "BLAS thread pool is left as it is (the value is recorded). "
                          "pip install ember[threads] to let it take effect.", stacklevel=2)
        return
    controller.limit(limits=num)  # stays in force: the limiter is never restored


def get_num_threads() -> int:
    """The threads NumPy's BLAS uses (``torch.get_num_threads``).

    Read from the BLAS library itself where threadpoolctl finds one; otherwise the value last
    set, or the CPU count."""
    controller = _blas_controller()
    if controller is not None and controller.lib_controllers:
        return max(lib.num_threads for lib in controller.lib_controllers)
    return _state["num_threads"] or _default_threads()


def set_num_interop_threads(num: int) -> None:
    """``torch.set_num_interop_threads``: recorded (ember has no inter-op pool). As in torch,
    it may be called once only."""
    num = _check("set_num_interop_threads", num)
    if _state["interop"] is not None:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work "
                           "has started or set_num_interop_threads called")
    _state["interop"] = num


def get_num_interop_threads() -> int:
    """The value set, or torch's default: the CPU count."""
    return _state["interop"] or _default_threads()
