"""``python -m ember``: run a PyTorch program unchanged, with ``torch`` resolved to ember.

    python -m ember SCRIPT [ARGS...]     run a script, as ``python SCRIPT ARGS...``
    python -m ember -c CODE [ARGS...]    run a string, as ``python -c CODE ARGS...``
    python -m ember -m MODULE [ARGS...]  run a module, as ``python -m MODULE ARGS...``

The program runs as Python would run it (the model is ``python -m coverage run``): its own
``sys.argv``, ``__name__ == "__main__"``, ``sys.path[0]`` set as Python sets it, its exit
status, and an uncaught exception printed by ``sys.excepthook`` with the program's frames only
(exit status 1), but with ``ember.alias_torch()`` installed first. The demo is
``python -m ember.demo``.
"""

from __future__ import annotations

import importlib.machinery
import io
import os
import runpy
import sys
import types

USAGE = """\
usage: python -m ember SCRIPT [ARGS...]
       python -m ember -c CODE [ARGS...]
       python -m ember -m MODULE [ARGS...]

Run a PyTorch program on ember, unchanged: `import torch`, `import torch.nn as nn`,
`from torch.utils.data import DataLoader`, ... resolve to ember's modules.

  SCRIPT       a Python file (or a directory or zip file with a __main__.py)
  -c CODE      program passed in as a string
  -m MODULE    run a library module as a script
  -h, --help   show this message and exit
  ARGS         passed to the program in sys.argv[1:]

In a notebook, call ember.alias_torch() before the first `import torch`.
The demo, a small convnet learning handwritten digits: python -m ember.demo
"""

_PROG = "python -m ember"
_THIS_FILE = os.path.normcase(os.path.abspath(__file__))


class _MainModule:
    """Make ``module`` ``sys.modules['__main__']`` for the duration (as runpy's _TempModule)."""

    def __init__(self, module: types.ModuleType) -> None:
        self.module = module
        self.saved = None

    def __enter__(self) -> types.ModuleType:
        self.saved = sys.modules.get("__main__")
        sys.modules["__main__"] = self.module
        return self.module

    def __exit__(self, *exc) -> None:
        sys.modules["__main__"] = self.saved


def _fresh_main(**attrs) -> types.ModuleType:
    module = types.ModuleType("__main__")
    module.__dict__.update(__builtins__=__builtins__, __spec__=None, **attrs)
    return module


def _run_code(code: str, args: list[str]) -> None:
    """``python -c CODE ARGS``: argv[0] is '-c', sys.path[0] is '' (the current directory)."""
    sys.argv = ["-c", *args]
    sys.path[0] = ""
    compiled = compile(code, "<string>", "exec")
    with _MainModule(_fresh_main()) as module:
        exec(compiled, module.__dict__)  # noqa: S102 -- running the program is the point


def _run_module(name: str, args: list[str]) -> None:
    """``python -m MODULE ARGS``: argv[0] becomes the module's file, sys.path[0] stays the
    current directory (as ``python -m ember`` already set it)."""
    sys.argv = [name, *args]
    runpy.run_module(name, run_name="__main__", alter_sys=True)


def _run_script(path: str, args: list[str]) -> int | None:
    """``python SCRIPT ARGS``: argv[0] is the path as given, sys.path[0] its directory,
    ``__file__`` its absolute path (as Python >= 3.9 sets it, and tracebacks show it)."""
    if not os.path.exists(path):
        # Python's own wording and status for a missing script
        print(f"{sys.executable}: can't open file {os.path.abspath(path)!r}: "
              f"[Errno 2] No such file or directory", file=sys.stderr)
        return 2
    sys.argv = [path, *args]
    if not os.path.isfile(path) or _is_zip(path):
        del sys.path[0]  # run_path puts the directory or zip file itself first on sys.path
        runpy.run_path(path, run_name="__main__")
        return None
    # NOTE: not runpy.run_path: it would set argv[0] to the absolute path too
    full_path = os.path.abspath(path)
    sys.path[0] = os.path.dirname(full_path)
    with io.open_code(full_path) as file:
        compiled = compile(file.read(), full_path, "exec")
    loader = importlib.machinery.SourceFileLoader("__main__", full_path)
    with _MainModule(_fresh_main(__file__=full_path, __cached__=None,
                                 __loader__=loader)) as module:
        exec(compiled, module.__dict__)  # noqa: S102 -- running the program is the point
    return None


def _is_zip(path: str) -> bool:
    import zipfile  # only for scripts that might be zip applications
    return zipfile.is_zipfile(path)


def _is_launcher_frame(frame: types.FrameType) -> bool:
    # runpy's frames by module name: its co_filename is '<frozen runpy>' on Python >= 3.11
    return (frame.f_globals.get("__name__") == "runpy"
            or os.path.normcase(frame.f_code.co_filename) == _THIS_FILE)


def _report(exc: BaseException) -> int:
    """Print an uncaught exception as Python does, without the launcher's frames; the status."""
    tb = exc.__traceback__
    while tb is not None and _is_launcher_frame(tb.tb_frame):
        tb = tb.tb_next
    if tb is None and isinstance(exc, ImportError):
        # runpy's own lookup failed (no such module, a package without __main__): Python
        # prints this as one line, no traceback
        print(f"{sys.executable}: {exc}", file=sys.stderr)
        return 1
    # the default hook prints exc.__traceback__ when set, whatever tb it is given
    sys.excepthook(type(exc), exc.with_traceback(tb), tb)
    if isinstance(exc, KeyboardInterrupt):
        return _die_of_sigint()
    return 1


def _die_of_sigint() -> int:
    """Exit as Python does after an uncaught KeyboardInterrupt: killed by SIGINT."""
    import signal
    if hasattr(signal, "SIGINT") and hasattr(os, "kill"):
        sys.stdout.flush()
        sys.stderr.flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    return 130  # where a process cannot signal itself: the shell's status for SIGINT


def _usage_error(message: str) -> int:
    print(f"{_PROG}: error: {message}\n", file=sys.stderr)
    print(USAGE, end="", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int | None:
    """Parse ``python -m ember``'s command line and run the program; the exit status.

    Only the options before the program are ember's; everything after SCRIPT, ``-c CODE`` or
    ``-m MODULE`` is the program's own ``sys.argv[1:]``, as with ``python`` itself. A
    ``SystemExit`` from the program propagates unchanged, so its status is the process's.
    """
    args = sys.argv[1:] if argv is None else list(argv)
    if not args:
        return _usage_error("no program given: a SCRIPT, -c CODE or -m MODULE")
    first = args[0]
    if first in ("-h", "--help"):
        print(USAGE, end="")
        return 0
    # -cCODE and -mMODULE (no space), as python accepts them
    kind = first[:2] if first[:2] in ("-c", "-m") else None
    if kind is not None:
        if len(first) > 2:
            value, rest = first[2:], args[1:]
        elif len(args) > 1:
            value, rest = args[1], args[2:]
        else:
            return _usage_error(f"argument {kind} needs a value")
    elif first.startswith("-") and first != "-":
        return _usage_error(f"unknown option {first}")
    elif first == "-":
        return _usage_error("reading the program from stdin is not supported: pass a file")

    import ember  # after parsing, so that --help stays instant
    try:
        ember.alias_torch()
    except RuntimeError as exc:  # the real torch came first (a sitecustomize, a .pth file)
        print(f"{_PROG}: error: {exc}", file=sys.stderr)
        return 1
    try:
        if kind == "-c":
            _run_code(value, rest)
        elif kind == "-m":
            _run_module(value, rest)
        else:
            return _run_script(first, args[1:])
    except SystemExit:
        raise  # Python's own handling gives the status (None -> 0, int, message -> 1)
    except BaseException as exc:  # noqa: BLE001 -- reported as Python reports it
        return _report(exc)
    return None


if __name__ == "__main__":
    sys.exit(main())
