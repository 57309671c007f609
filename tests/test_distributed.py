"""ember.distributed: collectives across MPI ranks, and what one process can check.

The multi-rank checks live in ``distributed/collectives_worker.py``, launched once per layout
under ``mpiexec``; each rank logs every check's result, and a failing check fails the test
with its name, the ranks it failed on and the message. Every launch has a timeout and its whole
process group is killed when it runs out, so a hang fails the test instead of stalling CI.
The single-process tests need neither mpiexec nor (mostly) mpi4py.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from datetime import timedelta
from pathlib import Path

import pytest

import ember
import ember.distributed as dist
from ember.distributed import _mpi

ROOT = Path(__file__).resolve().parent.parent
WORKER = Path(__file__).resolve().parent / "distributed" / "collectives_worker.py"
TIMEOUT = 180  # seconds for one launch, all ranks together
HAS_MPI4PY = importlib.util.find_spec("mpi4py") is not None
NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to call "
                   "init_process_group.")

requires_mpi4py = pytest.mark.skipif(not HAS_MPI4PY, reason="mpi4py is not installed: "
                                     'pip install "ember[mpi]"')

# variables a launcher (torchrun, mpiexec, a PMI) sets: a child must not inherit this process's
_LAUNCHER_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK",
                  "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID", "EXPECTED_WORLD_SIZE")
_LAUNCHER_PREFIXES = ("PMI_", "PMIX_", "HYDRA_", "OMPI_", "MPI_LOCAL")


@pytest.fixture(autouse=True)
def _no_default_group_left_behind():
    """A test that initialized the default group in this process (it should not) undoes it."""
    yield
    if dist.is_initialized():
        dist.destroy_process_group()


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in _LAUNCHER_VARS and not k.startswith(_LAUNCHER_PREFIXES)}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env.update(extra)
    return env


def _run(cmd: list[str], env: dict[str, str], timeout: float) -> tuple[int | None, str, str]:
    """Run ``cmd`` in a session of its own; (exit status or None on timeout, stdout, stderr).

    On timeout the whole process group (mpiexec, its proxies, the ranks) is killed."""
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
        try:
            out, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:  # a rank outside the group still holds the pipes
            proc.kill()
            out, err = "", "(no output: the pipes stayed open after the kill)"
        return None, out, err


def _python(code: str, timeout: float = 60, args: tuple[str, ...] = (), **env: str):
    """Run ``code`` in a fresh ``python -c`` (no mpiexec); (status, stdout, stderr)."""
    return _run([sys.executable, *args, "-c", textwrap.dedent(code)], _env(**env), timeout)


def _mpiexec_path() -> str | None:
    """The mpiexec beside this Python (the mpich wheel's), else the one on PATH."""
    beside = Path(sys.executable).parent / "mpiexec"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("mpiexec")


@pytest.fixture(scope="module")
def mpiexec() -> str:
    pytest.importorskip("mpi4py", reason='mpi4py is not installed: pip install "ember[mpi]"')
    path = _mpiexec_path()
    if path is None:
        pytest.skip("mpiexec is not installed (the mpich wheel provides it)")
    return path


# ---------------------------------------------------------------------- multi-rank checks
def _read_rank_logs(out_dir: Path, nproc: int) -> dict[int, dict]:
    """Per rank: the checks' results, the checks started, and whether it reached the end."""
    logs = {}
    for rank in range(nproc):
        path = out_dir / f"rank{rank}.jsonl"
        log = {"results": {}, "order": [], "started": None, "done": False, "timeout": None,
               "missing": not path.exists()}
        if path.exists():
            for line in path.read_text().splitlines():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:  # a line cut short by a killed rank
                    continue
                if "start" in record:
                    log["started"] = record["start"]
                elif "check" in record:
                    log["results"][record["check"]] = record["result"]
                    log["order"].append(record["check"])
                    log["started"] = None
                elif "timeout" in record:
                    log["timeout"] = record["timeout"]
                elif "done" in record:
                    log["done"] = True
        logs[rank] = log
    return logs


def _problems(logs: dict[int, dict]) -> list[str]:
    """Every failed check (with its ranks and message) and every rank that did not finish."""
    problems = []
    failed: dict[str, dict[int, str]] = {}
    for rank, log in logs.items():
        for name, result in log["results"].items():
            if result != "ok" and not result.startswith("skip:"):
                failed.setdefault(name, {})[rank] = result
    for name, by_rank in failed.items():
        messages = sorted(set(by_rank.values()))
        if len(messages) == 1:
            problems.append(f"FAILED {name!r} on ranks {sorted(by_rank)}:\n{messages[0]}")
        else:
            problems += [f"FAILED {name!r} on rank {r}:\n{m}" for r, m in sorted(by_rank.items())]
    for rank, log in logs.items():
        if log["missing"]:
            problems.append(f"rank {rank} wrote no log (did it start?)")
        elif log["started"] is not None:
            problems.append(f"rank {rank} stopped inside check {log['started']!r}")
        elif log["timeout"] is not None:
            problems.append(f"rank {rank} gave up waiting for the others after check "
                            f"{log['timeout']!r}")
        elif not log["done"]:
            problems.append(f"rank {rank} did not reach the end of the checks")
    orders = {tuple(log["order"]) for log in logs.values() if log["done"]}
    if len(orders) > 1:
        problems.append("the ranks ran different checks")
    return problems


@pytest.mark.parametrize(("nproc", "device"), [(2, "cpu"), (4, "cpu"), (2, "strict")],
                         ids=["2-ranks", "4-ranks", "2-ranks-strict-device"])
def test_collectives_under_mpiexec(mpiexec, tmp_path, nproc, device):
    """Every check of collectives_worker.py passes on every rank."""
    status, out, err = _run([mpiexec, "-n", str(nproc), sys.executable, str(WORKER),
                             str(tmp_path), device],
                            _env(EXPECTED_WORLD_SIZE=str(nproc)), TIMEOUT)
    logs = _read_rank_logs(tmp_path, nproc)
    problems = _problems(logs)
    if status is None:
        problems.insert(0, f"mpiexec -n {nproc} did not finish within {TIMEOUT} s")
    elif status != 0:
        problems.insert(0, f"mpiexec -n {nproc} exited with status {status}")
    if problems:
        tail = (err or out)[-4000:]
        pytest.fail("\n\n".join(problems) + f"\n\n--- output (tail) ---\n{tail}", pytrace=False)
    ran = logs[0]["results"]
    assert len(ran) >= 100, f"only {len(ran)} checks ran"


# ------------------------------------------------------------------------- one process
def test_import_does_not_load_mpi4py():
    status, out, err = _python("""
        import sys
        import ember.distributed as dist
        assert "mpi4py" not in sys.modules, "import ember.distributed loaded mpi4py"
        dist.is_available(), dist.is_gloo_available(), dist.is_mpi_available()
        assert "mpi4py" not in sys.modules, "is_available() loaded mpi4py"
        dist.ReduceOp.SUM, dist.group.WORLD, dist.is_initialized()
        assert "mpi4py" not in sys.modules, "the namespace's names loaded mpi4py"
        print("ok")
    """)
    assert status == 0 and out.strip() == "ok", err


def test_is_available_says_whether_mpi4py_is_installed():
    assert dist.is_available() is HAS_MPI4PY
    assert dist.is_gloo_available() is HAS_MPI4PY
    assert dist.is_nccl_available() is False


@requires_mpi4py
def test_is_available_with_mpi4py():
    assert dist.is_available() is True


@pytest.mark.parametrize("name", ["get_rank", "get_world_size", "get_backend", "barrier"])
def test_before_init_raises_torchs_error(name, torch):
    assert not dist.is_initialized()
    with pytest.raises(ValueError) as theirs:
        getattr(torch.distributed, name)()
    with pytest.raises(ValueError) as ours:
        getattr(dist, name)()
    assert str(ours.value) == str(theirs.value) == NOT_INITIALIZED


def test_collective_before_init_raises_torchs_error():
    with pytest.raises(ValueError) as info:
        dist.all_reduce(ember.ones(2))
    assert str(info.value) == NOT_INITIALIZED


@pytest.mark.parametrize("backend", ["nccl", "NCCL", "xccl"])
def test_init_with_a_gpu_backend_is_refused_naming_gloo(backend):
    with pytest.raises(RuntimeError, match="gloo"):
        dist.init_process_group(backend)
    assert not dist.is_initialized()


def test_init_with_an_unknown_backend_is_refused():
    with pytest.raises(ValueError, match="unknown backend"):
        dist.init_process_group("carrier-pigeon")


def test_init_timeout_must_be_a_timedelta(torch):
    with pytest.raises(TypeError) as theirs:
        torch.distributed.init_process_group("gloo", timeout=30)
    with pytest.raises(TypeError) as ours:
        dist.init_process_group("gloo", timeout=30)
    assert str(ours.value) == str(theirs.value)
    assert not dist.is_initialized()


def test_missing_mpi4py_raises_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "mpi4py", None)  # what `import mpi4py` fails on
    monkeypatch.setattr(_mpi, "_MPI", None)
    assert dist.is_available() is False
    with pytest.raises(RuntimeError, match=r"ember\[mpi\]"):
        dist.init_process_group("gloo")
    assert not dist.is_initialized()


# names scripts use: each is in torch.distributed too
TORCH_NAMES = [
    "init_process_group", "destroy_process_group", "is_initialized", "is_available",
    "get_rank", "get_world_size", "get_backend", "new_group", "barrier", "monitored_barrier",
    "all_reduce", "reduce", "broadcast", "all_gather", "all_gather_into_tensor",
    "all_gather_object", "gather", "gather_object", "scatter", "scatter_object_list",
    "reduce_scatter", "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "send",
    "recv", "isend", "irecv", "batch_isend_irecv", "P2POp", "broadcast_object_list",
    "send_object_list", "recv_object_list", "get_process_group_ranks", "get_global_rank",
    "get_group_rank", "ReduceOp", "reduce_op", "Backend", "GroupMember", "group",
    "ProcessGroup", "Work", "is_gloo_available", "is_nccl_available", "is_mpi_available",
    "is_torchelastic_launched", "default_pg_timeout",
]


@pytest.mark.parametrize("name", TORCH_NAMES)
def test_torch_distributed_names_exist(name, torch):
    assert hasattr(torch.distributed, name), f"torch.distributed has no {name} (update list)"
    assert hasattr(dist, name), f"ember.distributed has no {name}"


REDUCE_OPS = ["SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM"]


@pytest.mark.parametrize("name", REDUCE_OPS)
def test_reduce_op_members_look_like_torchs(name, torch):
    ours, theirs = getattr(dist.ReduceOp, name), getattr(torch.distributed.ReduceOp, name)
    assert repr(ours) == repr(theirs)
    assert str(ours) == str(theirs)
    assert int(ours) == int(theirs)
    assert ours == getattr(dist.ReduceOp.RedOpType, name)
    assert ours == getattr(dist.ReduceOp, name) and ours != (dist.ReduceOp.SUM if name != "SUM"
                                                             else dist.ReduceOp.MAX)
    assert getattr(dist.reduce_op, name) is ours


def test_group_markers_and_backend_names_match_torch(torch):
    tdist = torch.distributed
    assert dist.GroupMember.NON_GROUP_MEMBER == tdist.GroupMember.NON_GROUP_MEMBER == -100
    assert dist.group.WORLD is None and tdist.group.WORLD is None  # before init
    assert dist.GroupMember.WORLD is None
    for name in ("GLOO", "NCCL", "MPI", "UCC", "UNDEFINED"):
        assert getattr(dist.Backend, name) == getattr(tdist.Backend, name)
    assert dist.Backend("GLOO") == tdist.Backend("GLOO") == "gloo"
    assert dist.default_pg_timeout == tdist.default_pg_timeout == timedelta(minutes=30)
    assert dist.is_torchelastic_launched() is False


def test_torch_distributed_is_ember_distributed_under_the_alias():
    status, out, err = _python("""
        import sys
        import torch
        import torch.distributed as dist
        import ember.distributed
        print(dist is ember.distributed, torch.distributed is ember.distributed,
              dist.ReduceOp.SUM is ember.distributed.ReduceOp.SUM, "mpi4py" in sys.modules)
    """, args=("-m", "ember"))
    assert status == 0, err
    assert out.split() == ["True", "True", "True", "False"]


# ---------------------------------------------------------- one process, MPI initialized
SINGLETON = """
    import json, os
    from datetime import timedelta
    import numpy as np
    import ember as torch
    import ember.distributed as dist
    from ember.distributed import ReduceOp

    report = {}

    def attempt(name, fn):
        try:
            fn()
            report[name] = None
        except Exception as e:
            report[name] = [type(e).__name__, str(e)]

    # WORLD_SIZE=2 is in the environment, as torchrun would set it
    attempt("env_world_size", lambda: dist.init_process_group("gloo"))
    del os.environ["WORLD_SIZE"]
    attempt("arg_world_size", lambda: dist.init_process_group("gloo", world_size=3))
    attempt("arg_rank", lambda: dist.init_process_group("gloo", rank=1))
    report["initialized_after_errors"] = dist.is_initialized()

    dist.init_process_group("gloo", world_size=1, rank=0, timeout=timedelta(seconds=60))
    report["layout"] = [dist.get_rank(), dist.get_world_size()]
    wrong = report["wrong"] = []
    x = np.array([[1.5, -2.0, 0.0], [3.0, 4.25, -0.5]], dtype=np.float32)

    def same(name, t, ref=x):
        if tuple(t.shape) != ref.shape or not np.array_equal(t.numpy(), ref):
            wrong.append(f"{name}: {t.tolist()} != {ref.tolist()}")

    for op in ("SUM", "AVG", "PRODUCT", "MIN", "MAX"):
        t = torch.tensor(x)
        dist.all_reduce(t, getattr(ReduceOp, op))
        same(f"all_reduce {op}", t)
    t = torch.tensor(x)
    dist.all_reduce(t, async_op=True).wait()
    same("async all_reduce", t)
    t = torch.tensor(x)
    dist.broadcast(t, src=0)
    same("broadcast", t)
    t = torch.tensor(x)
    dist.reduce(t, dst=0, op=ReduceOp.MAX)
    same("reduce", t)
    out = [torch.zeros(2, 3)]
    dist.all_gather(out, torch.tensor(x))
    same("all_gather", out[0])
    out = torch.zeros(2, 3)
    dist.all_gather_into_tensor(out, torch.tensor(x))
    same("all_gather_into_tensor", out)
    out = torch.zeros(2, 3)
    dist.reduce_scatter_tensor(out, torch.tensor(x), op=ReduceOp.AVG)
    same("reduce_scatter_tensor", out)
    out = torch.zeros(2, 3)
    dist.all_to_all_single(out, torch.tensor(x))
    same("all_to_all_single", out)
    got = [torch.zeros(2, 3)]
    dist.gather(torch.tensor(x), got)
    same("gather", got[0])
    out = torch.zeros(2, 3)
    dist.scatter(out, [torch.tensor(x)])
    same("scatter", out)
    objs = [None]
    dist.all_gather_object(objs, {"a": 1})
    if objs != [{"a": 1}]:
        wrong.append(f"all_gather_object: {objs}")
    dist.barrier()
    dist.monitored_barrier(timeout=timedelta(seconds=30))
    g = dist.new_group([0])
    t = torch.tensor(x)
    dist.all_reduce(t, group=g)
    same("all_reduce on new_group([0])", t)
    dist.destroy_process_group()
    report["initialized_after_destroy"] = dist.is_initialized()
    print(json.dumps(report))
"""


@pytest.fixture(scope="module")
def singleton_report() -> dict:
    """What one plain ``python`` process (MPI's singleton, no mpiexec) saw."""
    pytest.importorskip("mpi4py", reason='mpi4py is not installed: pip install "ember[mpi]"')
    status, out, err = _python(SINGLETON, timeout=120, WORLD_SIZE="2")
    assert status == 0, f"the single-process script failed (status {status}):\n{err[-3000:]}"
    return json.loads(out.strip().splitlines()[-1])


def test_world_size_from_the_environment_must_match_mpi(singleton_report):
    kind, message = singleton_report["env_world_size"]
    assert kind == "RuntimeError"
    assert "WORLD_SIZE=2" in message and "mpiexec -n 2" in message


def test_world_size_argument_must_match_mpi(singleton_report):
    kind, message = singleton_report["arg_world_size"]
    assert kind == "RuntimeError" and "mpiexec -n 3" in message


def test_rank_argument_must_match_mpi(singleton_report):
    kind, message = singleton_report["arg_rank"]
    assert kind == "ValueError" and "rank=1" in message
    assert singleton_report["initialized_after_errors"] is False


def test_single_process_collectives_are_the_identity(singleton_report):
    assert singleton_report["layout"] == [0, 1]
    assert singleton_report["wrong"] == []
    assert singleton_report["initialized_after_destroy"] is False
