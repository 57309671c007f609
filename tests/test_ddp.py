"""``ember.nn.parallel.DistributedDataParallel``: real multi-process jobs under ``mpiexec``.

``distributed/ddp_worker.py`` runs every check in one MPI job (launches cost about a second
each), once alone (an MPI singleton, world size 1) and once each with 2 and 4 ranks. Each
rank writes its results to a JSON file, and every (world size, check) pair is a test here, so
a failure names the check, the rank and the worker's traceback. The error and warning texts
the worker records are compared with real torch 2.13's. A job that hangs is killed at
``TIMEOUT`` and reported with the check each rank was running.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
from conftest import requires_torch

ROOT = Path(__file__).resolve().parent.parent
WORKER = Path(__file__).resolve().parent / "distributed" / "ddp_worker.py"
TIMEOUT = 180  # seconds for any one job; a healthy one takes a few



def _has_mpi4py() -> bool:
    try:
        import mpi4py  # noqa: F401 - the package only: MPI itself starts in the jobs
    except ImportError:
        return False
    return True


HAS_MPI4PY = _has_mpi4py()


def _mpiexec() -> str | None:
    beside = Path(sys.executable).parent / "mpiexec"  # the mpich wheel installs it here
    return str(beside) if beside.exists() else shutil.which("mpiexec")


MPIEXEC = _mpiexec()
requires_mpiexec = pytest.mark.skipif(not (HAS_MPI4PY and MPIEXEC), reason="needs mpi4py and "
                                      'mpiexec: pip install "ember[mpi]"')


def _load_worker():
    spec = importlib.util.spec_from_file_location("ddp_worker", WORKER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # defines the checks; MPI is loaded only by its main()
    return module


CHECK_NAMES = list(_load_worker().CHECKS)


def _env() -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    # one thread per rank: 4 ranks share this machine's cores
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTHONWARNINGS="")
    return env


class Job:
    """What one launch left: exit status, output, each rank's results, and the time taken."""

    def __init__(self, world: int, args: list[str], out: Path, timeout: float = TIMEOUT):
        self.world, self.timeout = world, timeout
        cmd = [sys.executable, str(WORKER), str(out), *args]
        if world > 1:
            cmd = [MPIEXEC, "-n", str(world), *cmd]
        start = time.monotonic()
        # its own session, so a hung job is killed with every rank mpiexec started
        proc = subprocess.Popen(cmd, cwd=ROOT, env=_env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            self.stdout, self.stderr = proc.communicate(timeout=timeout)
            self.timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            self.stdout, self.stderr = proc.communicate(timeout=30)
            self.timed_out = True
        self.seconds = time.monotonic() - start
        self.returncode = proc.returncode
        self.results = {}
        for rank in range(world):
            path = out / f"rank{rank}.json"
            if path.exists():
                self.results[rank] = json.loads(path.read_text())

    def describe(self) -> str:
        how = f"killed after {self.timeout} s" if self.timed_out else f"exit {self.returncode}"
        return (f"{self.world}-rank job ({how}, {self.seconds:.1f} s)\nstdout:\n"
                f"{self.stdout[-3000:]}\nstderr:\n{self.stderr[-3000:]}")


@pytest.fixture(scope="module", params=[1, 2, 4], ids=lambda n: f"{n}rank")
def job(request, tmp_path_factory) -> Job:
    world = request.param
    if not HAS_MPI4PY:
        pytest.skip('mpi4py is not installed: pip install "ember[mpi]"')
    if world > 1 and not MPIEXEC:
        pytest.skip('mpiexec is not on PATH: pip install "ember[mpi]" (the mpich wheel)')
    return Job(world, [], tmp_path_factory.mktemp(f"ddp{world}"))


UNFINISHED = {"running": "still running when the job ended: it hung or crashed here",
              "pending": "never ran: the job ended in an earlier check"}


@pytest.mark.parametrize("check", CHECK_NAMES)
def test_ddp_check(job: Job, check: str) -> None:
    problems = []
    for rank in range(job.world):
        res = job.results.get(rank)
        if res is None:
            problems.append(f"rank {rank} wrote no results")
            continue
        status = res["checks"].get(check, "missing from the worker's results")
        status = UNFINISHED.get(status, status)
        if status != "ok":
            problems.append(f"rank {rank}: {status}")
    if problems:
        pytest.fail(f"DDP check {check!r} with {job.world} rank(s):\n" + "\n".join(problems)
                    + ("" if len(problems) < job.world else "\n" + job.describe()),
                    pytrace=False)


def test_job_finishes_cleanly(job: Job) -> None:
    unfinished = [r for r in range(job.world) if not job.results.get(r, {}).get("finished")]
    assert job.returncode == 0 and not unfinished, \
        f"ranks {unfinished} did not finish\n{job.describe()}"
    assert "Traceback" not in job.stderr, job.describe()


# ----------------------------------------------------------------------------------------
# error and warning texts against real torch 2.13


@pytest.fixture(scope="module")
def torch_messages() -> dict:
    """The texts torch's DDP gives for what the worker's ``construction_errors`` and buffer
    checks do, from a one-process gloo group in this process."""
    torch = pytest.importorskip("torch")
    import torch.distributed as tdist
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel as DDP
    if not tdist.is_available() or tdist.is_initialized():
        pytest.skip("torch.distributed is unavailable or already in use in this process")

    def error_of(fn) -> list:
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - recorded and compared
            return [type(e).__name__, str(e)]
        return ["no error", ""]

    class TwoBranches(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.c = nn.Linear(2, 2), nn.Linear(2, 2)

        def forward(self, x):
            return self.a(x)  # ``c`` is never used

    def warned(**kwargs) -> list:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            DDP(nn.BatchNorm1d(2), **kwargs)
        return [w for w in seen if issubclass(w.category, FutureWarning)]

    messages = {"ddp_without_process_group": error_of(lambda: DDP(nn.Linear(2, 2)))}
    tdist.init_process_group("gloo", store=tdist.HashStore(), rank=0, world_size=1)
    try:
        frozen = nn.Linear(2, 2).requires_grad_(False)
        messages["no_trainable_parameters"] = error_of(lambda: DDP(frozen))
        messages["no_parameters"] = error_of(lambda: DDP(nn.ReLU()))
        messages["device_ids"] = error_of(lambda: DDP(nn.Linear(2, 2), device_ids=[0]))
        messages["output_device"] = error_of(lambda: DDP(nn.Linear(2, 2), output_device=1))
        messages["two_device_ids"] = error_of(lambda: DDP(nn.Linear(2, 2), device_ids=[0, 1]))
        messages["check_reduction_warning"] = [
            w.category.__name__ + ": " + str(w.message) for w in warned(check_reduction=True)]
        messages["broadcast_buffers_warning"] = str(warned(broadcast_buffers=False)[0].message)
        messages["both_buffers_warning"] = str(
            warned(broadcast_buffers=True, forward_sync_buffers=False)[0].message)
        assert not warned() and not warned(forward_sync_buffers=False)
        ddp = DDP(TwoBranches())
        ddp(torch.ones(1, 2)).sum().backward()
        messages["unused_parameters_error"] = error_of(lambda: ddp(torch.ones(1, 2)))[1]
    finally:
        tdist.destroy_process_group()
    return messages


EXACT = ["no_trainable_parameters", "no_parameters", "device_ids", "output_device",
         "two_device_ids", "check_reduction_warning", "broadcast_buffers_warning",
         "both_buffers_warning", "ddp_without_process_group"]


@requires_torch
@pytest.mark.parametrize("key", EXACT)
def test_messages_match_torch(job: Job, torch_messages: dict, key: str) -> None:
    ours = job.results.get(0, {}).get("messages", {})
    assert key in ours, f"the worker recorded no {key!r}\n{job.describe()}"
    assert ours[key] == torch_messages[key]


@requires_torch
def test_unused_parameter_error_starts_as_torch(job: Job, torch_messages: dict) -> None:
    """torch lists parameter indices (names under TORCH_DISTRIBUTED_DEBUG); ember lists the
    names. The explanation before the list is torch's."""
    ours = job.results.get(0, {}).get("messages", {}).get("unused_parameters_error", "")
    theirs = torch_messages["unused_parameters_error"]
    head = theirs[:theirs.index("and by")]
    assert ours.startswith(head), f"ember:\n{ours}\ntorch:\n{theirs}"
    assert "c.weight, c.bias" in ours, ours


# ----------------------------------------------------------------------------------------
# the alias, and a rank that fails


def test_alias_resolves_to_ember_classes() -> None:
    source = ("import sys, ember, torch\n"
              "import torch.nn.parallel.distributed as tnpd\n"
              "from torch.nn.parallel import DistributedDataParallel as DDP\n"
              "from torch.utils.data.distributed import DistributedSampler\n"
              "print(DDP is ember.nn.parallel.DistributedDataParallel,\n"
              "      torch.nn.parallel.DistributedDataParallel is DDP,\n"
              "      tnpd.DistributedDataParallel is DDP,\n"
              "      torch.distributed is ember.distributed,\n"
              "      DistributedSampler is ember.utils.data.DistributedSampler,\n"
              "      'mpi4py' not in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-m", "ember", "-c", source], cwd=ROOT, env=_env(),
                          capture_output=True, text=True, timeout=TIMEOUT, check=False)
    assert proc.returncode == 0, proc.stderr
    # the last: naming DDP does not load MPI
    assert proc.stdout.split() == ["True"] * 6, proc.stdout


@requires_mpiexec
def test_a_failing_rank_brings_the_job_down(tmp_path: Path) -> None:
    """Rank 1 raises after two steps while rank 0 goes on into the next all-reduce: the job
    must end with a non-zero status and rank 1's traceback, not hang."""
    job = Job(2, ["crash"], tmp_path, timeout=60)
    assert not job.timed_out, job.describe()
    assert job.returncode != 0, job.describe()
    assert "[rank 1]" in job.stderr and "Traceback" in job.stderr, job.describe()
    assert "RuntimeError: rank 1 fails on purpose at step 2" in job.stderr, job.describe()
    assert "finished all steps" not in job.stdout, job.describe()
    assert job.seconds < 30, job.describe()
