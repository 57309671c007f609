"""The MPI engine behind ``ember.distributed``: mpi4py, loaded on first use.

ember does not carry its own transport. Collectives go to MPI through mpi4py, with an MPI
library installed from PyPI (the ``mpich`` wheel); both come with ``pip install ember[mpi]``.
Importing ``ember.distributed`` never imports mpi4py, so the namespace exists (and
``is_available()`` answers) on machines without it.
"""

from __future__ import annotations

import os
import sys
import traceback

_MPI = None
_INSTALL = 'pip install "ember[mpi]"  (mpi4py with the mpich wheel)'


def available() -> bool:
    """Whether mpi4py can be imported (without importing it)."""
    if _MPI is not None:
        return True
    import importlib.util
    return importlib.util.find_spec("mpi4py") is not None


def mpi():
    """The ``mpi4py.MPI`` module, imported (and MPI initialized) on the first call.

    Raises ``RuntimeError`` naming the ``ember[mpi]`` extra when mpi4py is missing.
    """
    global _MPI
    if _MPI is None:
        try:
            import mpi4py
        except ImportError:
            raise RuntimeError(
                "ember.distributed runs on MPI, and mpi4py is not installed. Install it with: "
                + _INSTALL) from None
        # Collectives are issued from one thread. MPI is finalized at exit (mpi4py's default):
        # mpiexec takes a rank that exits unfinalized for a failed one, even with status 0
        mpi4py.rc.threads = False
        from mpi4py import MPI
        _MPI = MPI
    return _MPI


def abort_on_uncaught_exception() -> None:
    """Make an uncaught exception, or ``sys.exit`` with a failure status, in this rank abort
    the whole MPI job, as torchrun's agent ends every worker when one fails.

    Without it, the other ranks wait forever in their next collective for a rank that has
    died (mpi4py finalizes MPI at exit, which looks like a clean exit). The traceback is
    printed first, prefixed by the rank, then ``MPI_Abort`` makes ``mpiexec`` end every rank
    with a non-zero status. Installed by ``init_process_group`` and by the launcher. (A
    ``raise SystemExit(3)`` written out, rather than ``sys.exit(3)``, is seen only by the
    launcher, ``python -m ember.distributed.run``, which runs the program itself.)
    """
    previous = sys.excepthook
    if getattr(previous, "_ember_aborts", False):
        return
    _abort_on_failed_exit()

    def hook(kind, value, tb):
        MPI = mpi()
        rank = MPI.COMM_WORLD.Get_rank()
        if kind is KeyboardInterrupt or MPI.COMM_WORLD.Get_size() == 1:
            previous(kind, value, tb)
            return
        text = "".join(traceback.format_exception(kind, value, tb))
        sys.stderr.write(f"[rank {rank}] the job is aborted: this rank raised an uncaught "
                         f"exception\n{text}")
        sys.stderr.flush()
        sys.stdout.flush()
        MPI.COMM_WORLD.Abort(1)

    hook._ember_aborts = True
    sys.excepthook = hook


def _abort_on_failed_exit() -> None:
    real_exit = sys.exit

    def exit(status=None):  # (sys.exit's own name)
        failed = status is not None and status != 0
        if failed and _MPI is not None and _MPI.COMM_WORLD.Get_size() > 1:
            world = _MPI.COMM_WORLD
            code = status if isinstance(status, int) else 1
            if not isinstance(status, int):
                sys.stderr.write(f"{status}\n")
            sys.stderr.write(f"[rank {world.Get_rank()}] the job is aborted: this rank exited "
                             f"with status {code}\n")
            sys.stderr.flush()
            sys.stdout.flush()
            world.Abort(code)
        real_exit(status)

    sys.exit = exit


def env_int(name: str) -> int | None:
    """An integer environment variable (torchrun's ``RANK``/``WORLD_SIZE``/...) or None."""
    value = os.environ.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"environment variable {name}={value!r} is not an integer") from None
