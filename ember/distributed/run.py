"""``python -m ember.distributed.run``: torchrun on MPI.

    python -m ember.distributed.run --nproc-per-node 4 train.py --epochs 3

takes torchrun's command line (``torch.distributed.run``, PyTorch 2.13) and starts the job with
the MPI library's ``mpiexec``::

    mpiexec -n 4 python -u -m ember.distributed._worker [worker options] -- train.py --epochs 3

Each rank then sees torchrun's environment (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
``MASTER_ADDR``, ...) and runs the script as ``python -m ember train.py`` would, with ``torch``
resolved to ember. The exit status is mpiexec's: 0 when every rank succeeds, non-zero as soon as
one fails (its traceback is printed, the other ranks are ended, and the status is the failed
rank's: 1 for an exception, N for ``sys.exit(N)``; see ``_worker.py``).

What differs from torchrun, and why:

* one launcher starts the whole job: mpiexec starts the processes on every machine, so several
  nodes need ``--hostfile FILE`` (MPICH's ``host[:n]`` lines) rather than one torchrun per node
  with a rendezvous; ``--rdzv-*`` options are accepted and only ``--rdzv-id`` is used (as
  ``TORCHELASTIC_RUN_ID``);
* no elasticity: an MPI job is all-or-nothing, so ``--max-restarts`` must be 0 and ``--nnodes``
  a single number;
* output goes to the console as mpiexec forwards it: ``--redirects``, ``--tee`` and the
  duplicate-output filters are refused rather than ignored; ``--log-dir`` only holds each rank's
  ``TORCHELASTIC_ERROR_FILE``, and there is no "ChildFailedError" summary (the failed rank's
  traceback is the report).

ember's own options: ``--hostfile FILE`` (passed to mpiexec) and ``--mpiexec PATH`` (default: the
``mpiexec`` next to this Python, as the ``mpich`` wheel installs it, then the one on ``PATH``;
its options are MPICH hydra's).
Like torchrun, every option also takes its default from ``PET_<OPTION>`` (``PET_NPROC_PER_NODE``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import uuid
from pathlib import Path

_PROG = "python -m ember.distributed.run"
_INSTALL = 'pip install "ember[mpi]"'
_WORKER = "ember.distributed._worker"
_DEFAULT_MASTER_PORT = 29500  # torchrun's documented default
_MPIEXEC_WAIT_S = 10  # after Ctrl-C: how long mpiexec gets to end the ranks before it is killed


def _dest(names: tuple[str, ...]) -> str:
    long_name = next(name for name in names if name.startswith("--"))
    return long_name[2:].replace("-", "_")


def _option(parser: argparse.ArgumentParser, *names: str, default=None, **kwargs) -> None:
    """An option whose default comes from ``PET_<DEST>`` first, as torchrun's ``env`` action."""
    default = os.environ.get(f"PET_{_dest(names).upper()}", default)
    parser.add_argument(*names, default=default, **kwargs)


def _flag(parser: argparse.ArgumentParser, *names: str, help: str) -> None:
    """A flag that ``PET_<DEST>=1`` also sets, as torchrun's ``check_env`` action."""
    default = bool(int(os.environ.get(f"PET_{_dest(names).upper()}", "0")))
    parser.add_argument(*names, action="store_true", default=default, help=help)


def get_args_parser() -> argparse.ArgumentParser:
    """torchrun's argument parser (same options, both spellings), plus ember's MPI options."""
    parser = argparse.ArgumentParser(
        prog=_PROG, description="Start a PyTorch (ember) distributed job on MPI, as torchrun.")
    size = parser.add_argument_group("job size")
    _option(size, "--nnodes", default="1:1", help="number of machines (needs --hostfile above 1)")
    _option(size, "--nproc-per-node", "--nproc_per_node", default="1",
            help="processes per machine: an int, 'cpu' or 'auto' (the CPUs this process may use)")

    rdzv = parser.add_argument_group("rendezvous (accepted; MPI needs none)")
    _option(rdzv, "--rdzv-backend", "--rdzv_backend", default="static")
    _option(rdzv, "--rdzv-endpoint", "--rdzv_endpoint", default="")
    _option(rdzv, "--rdzv-id", "--rdzv_id", default="none", help="the job id, TORCHELASTIC_RUN_ID")
    _option(rdzv, "--rdzv-conf", "--rdzv_conf", default="")
    _flag(rdzv, "--standalone", help="single machine; a fresh TORCHELASTIC_RUN_ID")

    launch = parser.add_argument_group("what each process runs")
    _option(launch, "--max-restarts", "--max_restarts", type=int, default=0,
            help="only 0: an MPI job is not restarted")
    _option(launch, "--role", default="default", help="ROLE_NAME of the workers")
    _flag(launch, "-m", "--module", help="run SCRIPT as a module, as 'python -m'")
    _flag(launch, "--no-python", "--no_python",
          help="run SCRIPT as a command, not with Python (it gets the same environment)")
    _flag(launch, "--run-path", "--run_path", help="run SCRIPT as a Python file (the default)")
    _option(launch, "--log-dir", "--log_dir",
            help="directory for each rank's TORCHELASTIC_ERROR_FILE (see @record)")
    _option(launch, "--local-ranks-filter", "--local_ranks_filter", default="",
            help="only these local ranks print to the console, e.g. 0 or 0,1")
    _flag(launch, "--virtual-local-rank", "--virtual_local_rank", help="LOCAL_RANK is 0 everywhere")

    static = parser.add_argument_group("static rendezvous")
    _option(static, "--node-rank", "--node_rank", type=int, default=0,
            help="only 0: this one launcher starts every machine's processes")
    _option(static, "--master-addr", "--master_addr", default=None,
            help="MASTER_ADDR (default 127.0.0.1, or the first host of --hostfile)")
    _option(static, "--master-port", "--master_port", type=int, default=None,
            help=f"MASTER_PORT (default {_DEFAULT_MASTER_PORT})")

    ignored = parser.add_argument_group("accepted for compatibility, no effect under MPI")
    _option(ignored, "--monitor-interval", "--monitor_interval", type=float, default=0.1)
    _option(ignored, "--start-method", "--start_method", default="spawn",
            choices=["spawn", "fork", "forkserver"])
    _option(ignored, "--event-log-handler", "--event_log_handler", default="null")
    _option(ignored, "--local-addr", "--local_addr", default=None)
    _option(ignored, "--numa-binding", "--numa_binding", default=None)
    _option(ignored, "--signals-to-handle", "--signals_to_handle",
            default="SIGTERM,SIGINT,SIGHUP,SIGQUIT")
    _option(ignored, "--shutdown-timeout", "--shutdown_timeout", type=int, default=None)

    refused = parser.add_argument_group(
        "not supported (mpiexec forwards every rank's output to the console)")
    _option(refused, "-r", "--redirects", default="0")
    _option(refused, "-t", "--tee", default="0")
    _option(refused, "--duplicate-stdout-filters", "--duplicate_stdout_filters", default="")
    _option(refused, "--duplicate-stderr-filters", "--duplicate_stderr_filters", default="")
    _option(refused, "--logs-specs", "--logs_specs", default=None)

    mpi = parser.add_argument_group("ember: MPI")
    mpi.add_argument("--hostfile", default=None,
                     help="machines for a multi-node job, passed to mpiexec -f "
                     "(MPICH format: one 'host' or 'host:slots' a line)")
    mpi.add_argument("--mpiexec", default=None,
                     help="the mpiexec to use (default: next to this Python, then on PATH)")
    parser.add_argument("training_script", help="the program, followed by its own arguments")
    parser.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return parser


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Parse torchrun's command line (``sys.argv[1:]`` by default)."""
    return get_args_parser().parse_args(argv)


class LaunchError(Exception):
    """A command line the launcher cannot run; the message says what to do instead."""


def _cpu_count() -> int:
    # as torch._utils.cpu_count: the CPUs this process may run on (taskset, cgroups)
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _nproc_per_node(value: str) -> int:
    """torchrun's ``--nproc-per-node``: an int, or 'cpu'/'auto' for the CPU count."""
    try:
        count = int(value)
    except ValueError:
        if value not in ("cpu", "auto"):
            raise LaunchError(f"Unsupported nproc_per_node value: {value} (ember's launcher "
                              "takes an int, 'cpu' or 'auto')") from None
        count = _cpu_count()
    if count < 1:
        raise LaunchError(f"--nproc-per-node must be at least 1, got {value}")
    return count


def _nnodes(value: str) -> int:
    """torchrun's ``--nnodes N`` or ``MIN:MAX``; an MPI job has a fixed size, so MIN == MAX."""
    parts = value.split(":")
    try:
        low, high = int(parts[0]), int(parts[-1])
    except ValueError:
        raise LaunchError(f'nnodes={value} is not in "MIN:MAX" format') from None
    if len(parts) > 2 or not 0 < low <= high:
        raise LaunchError(f"--nnodes {value}: expected N or MIN:MAX with 0 < MIN <= MAX")
    if low != high:
        raise LaunchError(f"--nnodes {value}: elastic node ranges are not supported (an MPI job "
                          "has a fixed size): give one number")
    return high


def _first_host(hostfile: str) -> str:
    """The machine mpiexec puts rank 0 on: the first host of the hostfile."""
    try:
        lines = Path(hostfile).read_text().splitlines()
    except OSError as exc:
        raise LaunchError(f"--hostfile {hostfile}: {exc.strerror}") from None
    for line in lines:
        entry = line.split("#", 1)[0].strip()
        if entry:
            return entry.split(":", 1)[0]
    raise LaunchError(f"--hostfile {hostfile} names no host")


def find_mpiexec(explicit: str | None = None) -> str:
    """The mpiexec to run: ``explicit`` if given, else the one next to ``sys.executable`` (where
    the ``mpich`` wheel puts it, in a venv too), else the first on ``PATH``."""
    if explicit is not None:
        found = shutil.which(explicit)
        if found is None:
            raise LaunchError(f"--mpiexec {explicit}: no such executable")
        return found
    beside = Path(sys.executable).parent / "mpiexec"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("mpiexec")
    if found is None:
        raise LaunchError("mpiexec was not found (next to this Python or on PATH): ember's "
                          f"launcher starts the job with MPI. Install it with: {_INSTALL}")
    return found


def _check(args: argparse.Namespace) -> None:
    """Refuse what MPI cannot do, with the alternative (torchrun's checks come first)."""
    if args.max_restarts < 0:
        raise LaunchError("--max-restarts must be >= 0")
    if args.max_restarts != 0:
        raise LaunchError(f"--max-restarts {args.max_restarts}: restarting workers is not "
                          "supported: an MPI job ends as a whole when one rank fails. Use "
                          "--max-restarts 0 and restart the job from your scheduler.")
    if args.module and args.no_python and not args.run_path:
        raise LaunchError("Don't use both the '--no-python' flag and the '--module' flag at "
                          "the same time.")
    if args.node_rank != 0:
        raise LaunchError(f"--node-rank {args.node_rank}: run the launcher once, on one "
                          "machine: mpiexec starts the processes of every machine listed in "
                          "--hostfile (there is no per-node launcher to rank)")
    for name, value, default in (("--redirects", args.redirects, "0"),
                                 ("--tee", args.tee, "0"),
                                 ("--duplicate-stdout-filters", args.duplicate_stdout_filters, ""),
                                 ("--duplicate-stderr-filters", args.duplicate_stderr_filters, ""),
                                 ("--logs-specs", args.logs_specs, None)):
        if value != default:
            raise LaunchError(f"{name} is not supported: mpiexec forwards every rank's output "
                              "to the console (redirect the launcher's output instead, or use "
                              "--local-ranks-filter)")
    if args.local_ranks_filter:
        try:
            [int(rank) for rank in args.local_ranks_filter.split(",")]
        except ValueError:
            raise LaunchError("--local_ranks_filter must be a comma-separated list of integers "
                              "e.g. --local_ranks_filter=0,1,2") from None


def _run_id(args: argparse.Namespace, nnodes: int) -> str:
    """``TORCHELASTIC_RUN_ID`` as torchrun sets it: a fresh uuid4 for ``--standalone`` and for a
    single-machine job with no rendezvous given, else ``--rdzv-id``."""
    if args.standalone or (args.rdzv_backend == "static" and not args.rdzv_endpoint
                           and args.master_port is None and nnodes == 1):
        return str(uuid.uuid4())
    return args.rdzv_id


_OMP_WARNING = (
    "*****************************************\n"
    "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to "
    "avoid your system being overloaded, please further tune the variable for optimal "
    "performance in your application as needed. \n"
    "*****************************************")


def mpiexec_command(args: argparse.Namespace,
                    mpiexec: str | None = None) -> tuple[list[str], dict[str, str]]:
    """The mpiexec command line for parsed torchrun ``args``, and the environment additions.

    Raises ``LaunchError`` for what MPI cannot do (elastic sizes, restarts, several machines
    without a hostfile), then for a missing mpiexec (``find_mpiexec(args.mpiexec)`` unless
    ``mpiexec`` is given) or mpi4py. ``args.use_env`` is ``torch.distributed.launch``'s flag:
    when False, the program gets ``--local-rank=N`` as its first argument, as torch passes it.
    """
    _check(args)
    nproc = _nproc_per_node(str(args.nproc_per_node))
    nnodes = _nnodes(str(args.nnodes))
    if nnodes > 1 and args.hostfile is None:
        raise LaunchError(f"--nnodes {nnodes}: ember's launcher starts every machine's processes "
                          "from this one, through mpiexec: list the machines in a file and pass "
                          "--hostfile FILE (or run mpiexec -f FILE -ppn N python -m "
                          f"{_WORKER} SCRIPT yourself)")
    master_addr = args.master_addr
    if master_addr is None:
        master_addr = "127.0.0.1" if args.hostfile is None else _first_host(args.hostfile)
    master_port = _DEFAULT_MASTER_PORT if args.master_port is None else args.master_port
    run_id = _run_id(args, nnodes)

    command = [mpiexec or find_mpiexec(args.mpiexec)]
    if not (args.no_python and not args.run_path):
        from ember.distributed import _mpi  # stdlib only: mpi4py is not imported here
        if not _mpi.available():
            raise LaunchError("mpi4py is not installed, and each rank needs it. Install it "
                              f"with: {_INSTALL}")
    if args.hostfile is not None:
        # MPICH's hydra fills the machines in order, nproc each: ranks are in node blocks
        command += ["-f", args.hostfile, "-ppn", str(nproc)]
    command += ["-n", str(nproc * nnodes),
                # torchrun runs ``python -u``: unbuffered, so no output is lost when a rank aborts
                os.getenv("PYTHON_EXEC", sys.executable), "-u", "-m", _WORKER,
                f"--master-addr={master_addr}", f"--master-port={master_port}",
                f"--run-id={run_id}", f"--role={args.role}", f"--max-restarts={args.max_restarts}"]
    if args.log_dir:
        os.makedirs(args.log_dir, exist_ok=True)
        # torchrun's layout: <log_dir>/<run_id>_<random>/attempt_0/<rank>/error.json
        command.append(f"--log-dir={tempfile.mkdtemp(prefix=f'{run_id}_', dir=args.log_dir)}")
    if args.local_ranks_filter:
        command.append(f"--local-ranks-filter={args.local_ranks_filter}")
    if args.virtual_local_rank:
        command.append("--virtual-local-rank")
    if not getattr(args, "use_env", True):
        command.append("--pass-local-rank")
    if args.run_path:
        pass  # a Python file run in the worker's interpreter: what the worker does anyway
    elif args.module:
        command.append("--module")
    elif args.no_python:
        command.append("--no-python")
    command += ["--", args.training_script, *args.training_script_args]
    # torchrun's default: one OpenMP (BLAS) thread per process when several share a machine
    threads = {} if "OMP_NUM_THREADS" in os.environ or nproc == 1 else {"OMP_NUM_THREADS": "1"}
    return command, threads


def _ended(process: subprocess.Popen, timeout: float) -> bool:
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return False
    return True


def _wait(process: subprocess.Popen) -> int:
    """mpiexec's exit status; Ctrl-C (or SIGTERM to the launcher) ends the whole job."""
    def forward_sigterm(signum, frame):
        process.send_signal(signal.SIGTERM)  # mpiexec ends every rank

    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, forward_sigterm)
    try:
        status = process.wait()
    except KeyboardInterrupt:
        # A terminal's Ctrl-C reached mpiexec too, and it is ending the ranks: a second one
        # would make it kill them at once, so it is sent only if mpiexec is still running
        if not _ended(process, 1.0):
            process.send_signal(signal.SIGINT)
            if not _ended(process, _MPIEXEC_WAIT_S):
                process.kill()
                process.wait()
        return 128 + signal.SIGINT
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return status if status >= 0 else 128 - status  # killed by a signal: the shell's status


def run(args: argparse.Namespace) -> int:
    """Start the job for parsed torchrun ``args`` and wait for it; mpiexec's exit status.

    As ``torch.distributed.run.run``, but the processes are started by mpiexec and the status
    is returned instead of raising ``ChildFailedError``. Raises ``LaunchError`` when the
    command line cannot be run or MPI is not installed (see ``mpiexec_command``).
    """
    command, extra_env = mpiexec_command(args)
    if "OMP_NUM_THREADS" in extra_env:
        print(_OMP_WARNING, file=sys.stderr, flush=True)
    # stdio is inherited: mpiexec forwards every rank's output as it comes
    process = subprocess.Popen(command, env={**os.environ, **extra_env})
    return _wait(process)


def main(argv: list[str] | None = None) -> int:
    """``python -m ember.distributed.run [torchrun options] SCRIPT [ARGS]``; the exit status.

    Usage errors print argparse's message and return 2; a command line that cannot run (see
    ``LaunchError``) prints why and returns 1; otherwise mpiexec's status.
    """
    try:
        args = parse_args(argv)
    except SystemExit as exc:  # --help, or argparse's own usage error
        return exc.code if isinstance(exc.code, int) else 2
    try:
        return run(args)
    except LaunchError as exc:
        print(f"{_PROG}: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
