"""``python -m ember.distributed.launch``: torch's deprecated launcher, over ``run``.

As torch 2.13's ``torch.distributed.launch``: torchrun's options plus ``--use-env``
(``--use_env``), and a ``FutureWarning``. Without ``--use-env`` each program gets
``--local-rank=N`` as its first argument (the legacy way); with it, only the ``LOCAL_RANK``
variable, as under torchrun. ``--no-python`` needs ``--use-env``.
"""

from __future__ import annotations

import argparse
import sys
import warnings

from ember.distributed import run as _run

_DEPRECATION = (
    "The module torch.distributed.launch is deprecated\n"
    "and will be removed in future. Use torchrun.\n"
    "Note that --use-env is set by default in torchrun.\n"
    "If your script expects `--local-rank` argument to be set, please\n"
    "change it to read from `os.environ['LOCAL_RANK']` instead. See \n"
    "https://pytorch.org/docs/stable/distributed.html#launch-utility for \n"
    "further instructions\n")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """torchrun's command line plus ``--use-env``."""
    parser = _run.get_args_parser()
    parser.prog = "python -m ember.distributed.launch"
    parser.add_argument("--use-env", "--use_env", default=False, action="store_true",
                        help="pass the local rank in LOCAL_RANK only, not as --local-rank=N")
    return parser.parse_args(argv)


def launch(args: argparse.Namespace) -> int:
    """Start the job as ``run.run`` does; mpiexec's exit status."""
    if args.no_python and not args.use_env:
        raise _run.LaunchError("When using the '--no-python' flag, you must also set the "
                               "'--use-env' flag.")
    return _run.run(args)


def main(argv: list[str] | None = None) -> int:
    """``python -m ember.distributed.launch [options] SCRIPT [ARGS]``; the exit status."""
    warnings.warn(_DEPRECATION, FutureWarning, stacklevel=2)
    try:
        args = parse_args(argv)
    except SystemExit as exc:  # --help, or argparse's own usage error
        return exc.code if isinstance(exc.code, int) else 2
    try:
        return launch(args)
    except _run.LaunchError as exc:
        print(f"python -m ember.distributed.launch: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
