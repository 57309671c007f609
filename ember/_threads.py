"""``ember.set_num_threads`` and friends: torch's thread settings, mapped onto NumPy's BLAS.

torch's intra-op pool runs its CPU kernels; ember's heavy kernels are NumPy's BLAS calls
(matmul, conv as matmul), so ``set_num_threads`` sizes the BLAS thread pool through
threadpoolctl (``pip install ember[threads]``). ember has no inter-op pool: the inter-op value
is recorded, with torch's rules for setting it.

The default is one BLAS thread (``apply_default``, run by ``import ember`` before NumPy
loads). NOTE: OpenBLAS's idle workers spin-wait; on a 2-core machine shared with other
processes, its default of one thread per CPU made ``python -m ember.demo`` 2-5x slower and the
MLP and CNN benchmark steps 3-10x slower than one thread (figures in docs/performance.md).
torch's default is the physical core count, but its pool does not spin like OpenBLAS's.
The user's own choice wins: any of ``_USER_ENV`` set, or ``set_num_threads``.

How the default is applied, cheapest first:

* NumPy not loaded yet (the usual ``import ember``): the BLAS variables are set to 1 while
  ``ember._backend`` imports NumPy (BLAS libraries read them only when they load), then
  removed again, so child processes and libraries loaded later see the user's environment.
  Costs nothing and needs no threadpoolctl.
* NumPy loaded before ember: its pool is already sized. threadpoolctl, when installed, limits
  it (about 3 ms, paid only in this case); without threadpoolctl the pool stays as NumPy
  loaded it (the CPU count) and ``get_num_threads`` says so.
"""

from __future__ import annotations

import os
import sys
import warnings

# Variables through which a user sizes BLAS or OpenMP pools; any one set means "leave BLAS be".
_USER_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "GOTO_NUM_THREADS",
             "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")
# The ones ember sets while NumPy loads: BLAS-specific only. OMP_NUM_THREADS would also fix
# the size of any OpenMP runtime loaded with NumPy for the life of the process.
_DEFAULT_ENV = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
                "VECLIB_MAXIMUM_THREADS")
DEFAULT_NUM_THREADS = 1

# loaded: the pool size BLAS started with, as far as ember can tell without threadpoolctl.
_state: dict = {"loaded": None, "interop": None, "warned": False}


def _cpu_count() -> int:
    """CPUs this process may run on: what OpenBLAS sizes its pool by (and caps requests at)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def _user_env_threads() -> int | None:
    """The thread count the user's environment asks of BLAS, or None if it asks nothing.

    Best effort, for when threadpoolctl cannot ask the library: the first positive value in
    ``_USER_ENV``'s order, capped at the CPU count as OpenBLAS caps it."""
    for name in _USER_ENV:
        value = os.environ.get(name, "").strip()
        if value:
            try:
                wanted = int(value.split(",")[0])  # OMP_NUM_THREADS may list nested levels
            except ValueError:
                continue
            if wanted > 0:
                return min(wanted, _cpu_count())
    return None


def _user_env_set() -> bool:
    return any(os.environ.get(name, "").strip() for name in _USER_ENV)


def apply_default() -> None:
    """Limit NumPy's BLAS to ``DEFAULT_NUM_THREADS`` unless the user's environment sizes it.

    Called once by ``ember/__init__.py`` before anything else of ember imports NumPy."""
    if _user_env_set():
        _state["loaded"] = _user_env_threads() or _cpu_count()
        return
    if "numpy" not in sys.modules:
        for name in _DEFAULT_ENV:
            os.environ[name] = str(DEFAULT_NUM_THREADS)
        try:
            from . import _backend  # noqa: F401 - NumPy loads its BLAS, which reads them now
        finally:
            for name in _DEFAULT_ENV:
                os.environ.pop(name, None)
        _state["loaded"] = DEFAULT_NUM_THREADS
        return
    _state["loaded"] = _cpu_count()  # NumPy sized its pool when it loaded, before ember
    controller = _blas_controller()
    if controller is not None:
        controller.limit(limits=DEFAULT_NUM_THREADS)


def _check(name: str, value) -> int:
    """torch's argument checks (``RuntimeError`` for both the type and the value)."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):  # NumPy ints pass
        raise RuntimeError(  # torch raises RuntimeError for the type too
            f"{name} expects an int, but got {type(value).__name__}")
    if value <= 0:
        raise RuntimeError(f"{name} expects a positive integer")
    return int(value)


def _blas_controller():
    """threadpoolctl's view of the BLAS libraries loaded, or None without threadpoolctl."""
    try:
        from threadpoolctl import ThreadpoolController  # optional extra: ember[threads]
    except ImportError:
        return None
    from ._backend import host  # noqa: F401 - NumPy (and so its BLAS) must be loaded first
    return ThreadpoolController().select(user_api="blas")


def set_num_threads(num: int) -> None:
    """Set the threads NumPy's BLAS uses (``torch.set_num_threads``: the intra-op threads).

    Needs threadpoolctl (``pip install ember[threads]``); without it BLAS keeps the size it
    loaded with, ``get_num_threads`` keeps reporting that, and a warning is given once."""
    num = _check("set_num_threads", num)
    controller = _blas_controller()
    if controller is None:
        if not _state["warned"]:
            _state["warned"] = True
            warnings.warn("ember.set_num_threads: threadpoolctl is not installed, so NumPy's "
                          f"BLAS thread pool keeps its size ({get_num_threads()}). Set "
                          "OPENBLAS_NUM_THREADS (or MKL_NUM_THREADS) before starting Python, "
                          "or pip install ember[threads] to let set_num_threads take effect.",
                          stacklevel=2)
        return
    controller.limit(limits=num)  # stays in force: the limiter is never restored


def get_num_threads() -> int:
    """The threads NumPy's BLAS uses (``torch.get_num_threads``): the effective value.

    Read from the BLAS library itself where threadpoolctl finds one; otherwise the size BLAS
    loaded with (ember's default, the user's environment, or the CPU count)."""
    controller = _blas_controller()
    if controller is not None and controller.lib_controllers:
        return max(lib.num_threads for lib in controller.lib_controllers)
    return _state["loaded"] or _user_env_threads() or _cpu_count()


def limit_worker_threads() -> None:
    """One BLAS thread in a DataLoader worker (torch calls ``set_num_threads(1)`` there):
    ``num_workers`` processes each running a full pool would oversubscribe the CPUs.

    Without threadpoolctl, quietly nothing: a ``spawn``/``forkserver`` worker imports ember
    afresh and gets the default; a forked one keeps the parent's pool size."""
    controller = _blas_controller()
    if controller is not None:
        controller.limit(limits=1)


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
    return _state["interop"] or os.cpu_count() or 1


# NOTE: at import, on purpose: ember/__init__.py imports this module first, before anything
# loads NumPy, because BLAS libraries read their thread count only when they load.
apply_default()
