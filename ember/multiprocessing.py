"""``ember.multiprocessing``: Python's ``multiprocessing`` with torch's additions.

Everything in ``multiprocessing.__all__`` is re-exported (``Process``, ``Queue``, ``Pool``,
``get_context``, ...), plus torch's ``spawn``/``start_processes`` (the exceptions of a child
come back as ``ProcessRaisedException`` with its traceback, a crash as
``ProcessExitedException``) and the sharing-strategy functions. Tensors travel between
processes by pickling: a child gets a copy, not shared memory as in torch, so in-place
changes in a child are not seen by the parent; send results back through a ``Queue``.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable
from multiprocessing import *  # torch.multiprocessing re-exports it all

__all__ = ["ProcessContext", "ProcessException", "ProcessExitedException",
           "ProcessRaisedException", "get_all_sharing_strategies", "get_sharing_strategy",
           "set_sharing_strategy", "spawn", "start_processes"]
__all__ += multiprocessing.__all__

if sys.platform in ("darwin", "win32"):
    _sharing_strategy = "file_system"
    _all_sharing_strategies = {"file_system"}
else:
    _sharing_strategy = "file_descriptor"
    _all_sharing_strategies = {"file_descriptor", "file_system"}


def set_sharing_strategy(new_strategy: str) -> None:
    """Record the strategy (ember pickles tensors, so every strategy sends copies)."""
    global _sharing_strategy
    if new_strategy not in _all_sharing_strategies:
        raise AssertionError(f"invalid sharing strategy {new_strategy!r}, expected one of "
                             f"{_all_sharing_strategies}")
    _sharing_strategy = new_strategy


def get_sharing_strategy() -> str:
    return _sharing_strategy


def get_all_sharing_strategies() -> set[str]:
    return _all_sharing_strategies


class ProcessException(Exception):
    """A spawned process failed; ``error_index`` is its index, ``error_pid`` its pid."""

    def __init__(self, msg: str, error_index: int, error_pid: int) -> None:
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.error_pid = error_pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid)


class ProcessRaisedException(ProcessException):
    """A process failed with an exception; the message holds the child's traceback."""


class ProcessExitedException(ProcessException):
    """A process exited with a non-zero code or was killed by a signal."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int,
                 signal_name: str | None = None) -> None:
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return (type(self), (self.msg, self.error_index, self.error_pid, self.exit_code,
                             self.signal_name))


def _wrap(fn: Callable, i: int, args: tuple, error_file: str) -> None:
    """The child's entry point: run ``fn(i, *args)``; an exception's traceback goes to
    ``error_file`` for the parent, and the child exits with code 1."""
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # SIGINT from the parent: it is stopping us
    except Exception:  # noqa: BLE001 - any error of fn goes to the parent
        with open(error_file, "wb") as fh:
            pickle.dump(traceback.format_exc(), fh)
        sys.exit(1)


class ProcessContext:
    """The processes of one ``start_processes`` call (``torch.multiprocessing``'s)."""

    def __init__(self, processes: list, error_files: list[str]) -> None:
        self.error_files = error_files
        self.processes = processes
        self.sentinels = {process.sentinel: index for index, process in enumerate(processes)}

    def pids(self) -> list[int]:
        return [int(process.pid) for process in self.processes]

    def _join_all(self, timeout: float) -> None:
        end = time.monotonic() + timeout
        for process in self.processes:
            process.join(max(0.0, end - time.monotonic()))

    def join(self, timeout: float | None = None, grace_period: float | None = None) -> bool:
        """Wait for the processes: True once all have finished well, False on timeout. When
        one fails, stop the others and raise its ``ProcessRaisedException`` (the child's
        traceback) or ``ProcessExitedException`` (exit code or signal), as torch does."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(self.sentinels.keys(), timeout=timeout)
        error_index = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            process = self.processes[index]
            process.join()
            if process.exitcode != 0:
                error_index = index
                break
        if error_index is None:
            return not self.sentinels
        if grace_period is not None:
            self._join_all(grace_period)
        for process in self.processes:
            if process.is_alive():
                process.terminate()
        self._join_all(30 if grace_period is None else grace_period)
        for process in self.processes:
            if process.is_alive():
                process.kill()
            process.join()
        failed = self.processes[error_index]
        error_file = self.error_files[error_index]
        if not os.access(error_file, os.R_OK):
            code = failed.exitcode
            if code < 0:
                try:
                    name = signal.Signals(-code).name
                except ValueError:
                    name = f"<Unknown signal {-code}>"
                raise ProcessExitedException(
                    f"process {error_index:d} terminated with signal {name}",
                    error_index=error_index, error_pid=failed.pid, exit_code=code,
                    signal_name=name)
            raise ProcessExitedException(
                f"process {error_index:d} terminated with exit code {code:d}",
                error_index=error_index, error_pid=failed.pid, exit_code=code)
        with open(error_file, "rb") as fh:
            original_trace = pickle.load(fh)
        os.unlink(error_file)
        msg = f"\n\n-- Process {error_index:d} terminated with the following error:\n"
        raise ProcessRaisedException(msg + original_trace, error_index, failed.pid)


def start_processes(fn: Callable, args: tuple = (), nprocs: int = 1, join: bool = True,
                    daemon: bool = False, start_method: str = "spawn") -> ProcessContext | None:
    """Start ``nprocs`` processes running ``fn(i, *args)`` with ``start_method``; with
    ``join`` wait for them (raising as ``ProcessContext.join``), else return the context."""
    mp = multiprocessing.get_context(start_method)
    processes, error_files = [], []
    for i in range(nprocs):
        # a file per process for its traceback; its existence marks a Python exception
        fd, error_file = tempfile.mkstemp(prefix="ember-errorfile-", suffix=".pickle")
        os.close(fd)
        os.unlink(error_file)  # only a name: the child creates it when it fails
        process = mp.Process(target=_wrap, args=(fn, i, args, error_file), daemon=daemon)
        process.start()
        processes.append(process)
        error_files.append(error_file)
    context = ProcessContext(processes, error_files)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn: Callable, args: tuple = (), nprocs: int = 1, join: bool = True,
          daemon: bool = False, start_method: str = "spawn") -> ProcessContext | None:
    """``torch.multiprocessing.spawn``: ``start_processes`` with the ``spawn`` method (any
    other ``start_method`` warns and is ignored, as in torch). ``fn`` must be defined at the
    top level of a module so that it can be pickled."""
    if start_method != "spawn":
        warnings.warn(f"This method only supports start_method=spawn (got: {start_method}).\n"
                      "To use a different start_method use:\n\t\t"
                      " torch.multiprocessing.start_processes(...)", FutureWarning,
                      stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
