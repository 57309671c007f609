"""``torch.distributed.elastic.multiprocessing.errors``: ``@record`` for a worker's entry point.

As in torch, a function decorated with ``record`` runs as usual; an exception it raises is
written, with its traceback and a timestamp, to the JSON file named by
``TORCHELASTIC_ERROR_FILE`` (torch's format, so tools that read torchelastic's error files read
these), then raised again. Without that variable nothing is written: the exception is printed
as any uncaught exception is (and, under ``python -m ember.distributed.run``, ends the job).
The launcher sets the variable for each rank when given ``--log-dir``.
"""

from __future__ import annotations

import faulthandler
import functools
import json
import os
import time
import traceback
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["ErrorHandler", "get_error_handler", "record"]

_R = TypeVar("_R")


class ErrorHandler:
    """Writes an exception to ``TORCHELASTIC_ERROR_FILE`` as torch's ``ErrorHandler`` does::

        {"message": {"message": "ValueError: bad input",
                     "extraInfo": {"py_callstack": "Traceback ...", "timestamp": "1700000000"}}}
    """

    def _get_error_file_path(self) -> str | None:
        return os.environ.get("TORCHELASTIC_ERROR_FILE")

    def initialize(self) -> None:
        """Print every thread's stack on a crash (segfault, abort), as torch does."""
        try:
            faulthandler.enable(all_threads=True)
        except Exception as exc:  # noqa: BLE001 -- no usable stderr: the crash dump is optional
            warnings.warn(f"Unable to enable fault handler. {type(exc).__name__}: {exc}",
                          stacklevel=2)

    def record_exception(self, e: BaseException) -> None:
        """Write ``e`` and the traceback being handled to the error file, if one is named."""
        path = self._get_error_file_path()
        if not path:
            return
        data = {"message": {"message": f"{type(e).__name__}: {e}",
                            "extraInfo": {"py_callstack": traceback.format_exc(),
                                          "timestamp": str(int(time.time()))}}}
        with open(path, "w") as file:
            json.dump(data, file)


def get_error_handler() -> ErrorHandler:
    """The handler ``record`` uses by default."""
    return ErrorHandler()


def record(fn: Callable[..., _R],
           error_handler: ErrorHandler | None = None) -> Callable[..., _R | None]:
    """Decorate a worker's entry point so that an exception it raises is recorded, then raised.

    As torch's ``record``: ``SystemExit`` with status 0 returns None, any other ``SystemExit``
    passes through unrecorded, and an ``Exception`` is written to ``TORCHELASTIC_ERROR_FILE``
    (when set) before it propagates. Use it once per process, on the top-level function.
    """
    handler = error_handler or get_error_handler()

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> _R | None:
        handler.initialize()
        try:
            return fn(*args, **kwargs)
        except SystemExit as exc:
            if exc.code == 0:
                return None
            raise
        except Exception as exc:
            handler.record_exception(exc)
            raise

    return wrapper
