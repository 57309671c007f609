"""One rank of a job started by ``python -m ember.distributed.run``: torchrun's worker process.

    mpiexec -n N python -u -m ember.distributed._worker [OPTIONS] -- SCRIPT [ARGS...]

sets the environment torchrun gives each worker (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
``MASTER_ADDR``, ``TORCHELASTIC_RUN_ID``, ...; see ``torchrun_env``) from MPI, then runs the
program as ``python -m ember SCRIPT ARGS`` would (``torch`` resolved to ember), or as a command
with ``--no-python``, or a module with ``--module``. The launcher writes OPTIONS, all of the
form ``--name=value`` or ``--flag``; run by hand under any MPICH ``mpiexec`` it needs none.

A rank that fails ends the whole job, as torchrun stops every worker when one fails: an
uncaught exception prints its traceback and calls ``MPI_Abort``
(``_mpi.abort_on_uncaught_exception``), and so does a non-zero exit status, which becomes the
job's. Without that, the other ranks would wait forever in their next collective. A rank that
ends cleanly finalizes MPI, so that mpiexec does not take it for a failed one. A ``--no-python``
command is exec'd without starting MPI here (an MPI program it runs can then start its own);
if it fails without MPI, it ends only itself.
"""

from __future__ import annotations

import atexit
import os
import sys

from ember.distributed import _mpi

USAGE = "usage: mpiexec -n N python -m ember.distributed._worker [OPTIONS] -- SCRIPT [ARGS...]"

# option -> default ("" for flags); the launcher passes them as --name=value
_OPTIONS = {"master-addr": "127.0.0.1", "master-port": "29500", "run-id": "none",
            "role": "default", "max-restarts": "0", "log-dir": "", "local-ranks-filter": "",
            "virtual-local-rank": "", "pass-local-rank": "", "module": "", "no-python": ""}


def _parse(argv: list[str]) -> tuple[dict[str, str], list[str]]:
    """The launcher's ``--name=value`` options, then the program after ``--``."""
    options = dict(_OPTIONS)
    for index, token in enumerate(argv):
        if token == "--" or not token.startswith("--"):
            return options, argv[index + (token == "--"):]
        name, has_value, value = token[2:].partition("=")
        if name not in _OPTIONS:
            raise SystemExit(f"{USAGE}\nunknown option {token}")
        options[name] = value if has_value else "1"
    return options, []


def _topology_from_env() -> tuple[int, int, int, int] | None:
    """(rank, world size, local rank, local world size) from the variables MPICH's hydra sets
    for each process (so ``--no-python`` need not start MPI before it hands over)."""
    values = [_mpi.env_int(name)
              for name in ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS")]
    return None if None in values else tuple(values)


def _topology_from_mpi() -> tuple[int, int, int, int]:
    """The same from MPI itself: the local group is the ranks that share this machine's memory."""
    MPI = _mpi.mpi()
    world = MPI.COMM_WORLD
    node = world.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        return world.Get_rank(), world.Get_size(), node.Get_rank(), node.Get_size()
    finally:
        node.Free()


def torchrun_env(rank: int, world_size: int, local_rank: int, local_world_size: int,
                 options: dict[str, str] | None = None) -> dict[str, str]:
    """The variables torchrun's agent sets for each worker (``LocalElasticAgent``), for one
    rank. The group (node) rank assumes ranks in node blocks, as mpiexec places them with
    ``-ppn``; there is one role, so the role rank and size are the global ones."""
    options = {**_OPTIONS, **(options or {})}
    env = {
        "RANK": str(rank),
        "GROUP_RANK": str(rank // local_world_size),
        "ROLE_RANK": str(rank),
        "ROLE_NAME": options["role"],
        "LOCAL_WORLD_SIZE": str(local_world_size),
        "WORLD_SIZE": str(world_size),
        "GROUP_WORLD_SIZE": str(-(-world_size // local_world_size)),
        "ROLE_WORLD_SIZE": str(world_size),
        "MASTER_ADDR": options["master-addr"],
        "MASTER_PORT": options["master-port"],
        "TORCHELASTIC_RESTART_COUNT": "0",
        "TORCHELASTIC_MAX_RESTARTS": options["max-restarts"],
        "TORCHELASTIC_RUN_ID": options["run-id"],
        "TORCHELASTIC_USE_AGENT_STORE": "False",  # no agent, no store: MPI connects the ranks
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": os.environ.get("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"),
        "LOCAL_RANK": "0" if options["virtual-local-rank"] else str(local_rank),
    }
    if options["log-dir"]:
        # torchrun's layout, <run dir>/attempt_0/<rank>/error.json, where @record writes;
        # by global rank, so machines sharing a file system do not collide
        rank_dir = os.path.join(options["log-dir"], "attempt_0", str(rank))
        os.makedirs(rank_dir, exist_ok=True)
        env["TORCHELASTIC_ERROR_FILE"] = os.path.join(rank_dir, "error.json")
    return env


def _silence_unless_shown(options: dict[str, str], local_rank: int) -> None:
    """``--local-ranks-filter``: the other local ranks print nowhere (stdout and stderr)."""
    shown = options["local-ranks-filter"]
    if shown and local_rank not in {int(rank) for rank in shown.split(",")}:
        sys.stdout.flush()
        sys.stderr.flush()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.close(devnull)


def _exit_status(code: object) -> int:
    """The process status Python gives ``SystemExit(code)``; a message is printed, as Python
    prints it, and gives 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF  # what the OS keeps: sys.exit(256) is a success, sys.exit(-1) is 255
    print(code, file=sys.stderr)
    return 1


def _run_python(program: list[str], module: bool) -> int:
    """Run the program as ``python -m ember [-m] PROGRAM`` does; its exit status."""
    from ember import __main__ as ember_main
    try:
        status = ember_main.main(["-m", *program] if module else program)
    except SystemExit as exc:
        return _exit_status(exc.code)
    return status or 0


def _end(status: int, rank: int, world_size: int) -> int:
    """A non-zero status ends the whole job (``MPI_Abort``) instead of this rank alone."""
    if status != 0 and world_size > 1:
        sys.stdout.flush()
        sys.stderr.write(f"[rank {rank}] the job is aborted: this rank exited with status "
                         f"{status}\n")
        sys.stderr.flush()
        _mpi.mpi().COMM_WORLD.Abort(status)
    return status


def _finalize_after_clean_exit(clean_exit: list[bool]) -> None:
    """``MPI_Finalize`` at exit when the program ended cleanly: mpiexec takes a rank that exits
    without it for a failed one, and kills the others, whatever its exit status."""
    if clean_exit:
        MPI = _mpi.mpi()
        if not MPI.Is_finalized():
            MPI.Finalize()


def main(argv: list[str] | None = None) -> int:
    """Set torchrun's environment for this rank and run the program; its exit status."""
    options, program = _parse(sys.argv[1:] if argv is None else list(argv))
    if not program:
        print(f"{USAGE}\nno program given", file=sys.stderr)
        return 2
    no_python = bool(options["no-python"])
    topology = _topology_from_env()
    started_mpi = topology is None or not no_python
    if started_mpi:
        # NOTE: MPI starts here, on every rank, before the program runs. A failing rank must be
        # able to call MPI_Abort, and MPI_Init waits for every rank: one that started MPI only
        # in its failure handler would hang if another rank never started it.
        _mpi.mpi()
        topology = topology or _topology_from_mpi()
    rank, world_size, local_rank, local_world_size = topology
    os.environ.update(torchrun_env(rank, world_size, local_rank, local_world_size, options))
    if options["pass-local-rank"]:  # torch.distributed.launch without --use-env
        program = [program[0], f"--local-rank={os.environ['LOCAL_RANK']}", *program[1:]]
    _silence_unless_shown(options, local_rank)

    clean_exit: list[bool] = []
    if started_mpi:  # registered before the program's own atexit handlers: it runs after them
        atexit.register(_finalize_after_clean_exit, clean_exit)
    if not no_python:
        # python -u writes each piece of a print at once, so lines of the ranks interleave
        # mid-line; line buffering writes a whole line at once, and still nothing waits long
        for stream in (sys.stdout, sys.stderr):
            if hasattr(stream, "reconfigure"):
                stream.reconfigure(line_buffering=True, write_through=False)
        _mpi.abort_on_uncaught_exception()
        status = _run_python(program, module=bool(options["module"]))
    elif not started_mpi:
        # Hand the process over. A command that fails before it starts MPI ends only itself
        # (mpiexec returns its status once the other ranks end); one that started MPI (a Python
        # program on ember.distributed) ends the whole job, as MPI programs do.
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            os.execvp(program[0], program)
        except OSError as exc:
            print(f"{program[0]}: {exc.strerror}", file=sys.stderr)
            return 127  # the shell's status for a command that cannot run
    else:  # no hydra variables: MPI was started to learn the ranks, so the command is a child
        import subprocess
        try:
            status = subprocess.run(program, check=False).returncode
        except OSError as exc:
            print(f"{program[0]}: {exc.strerror}", file=sys.stderr)
            status = 127
        status = status if status >= 0 else 128 - status
    if status == 0:
        clean_exit.append(True)
    return _end(status, rank, world_size)


if __name__ == "__main__":
    sys.exit(main())
