"""``python -m ember.distributed.run`` (torchrun on MPI), its per-rank worker, ``launch`` and
``@record``.

Real jobs of 2 and 4 ranks run as subprocesses, each with a timeout so that nothing can hang
the suite: a job that should fail must also end quickly, with the failing rank's traceback.
Option errors are checked in-process through ``main(argv)``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytest.importorskip("mpi4py")

import ember.distributed  # after the skip: the tests need MPI
from ember.distributed import run as launcher
from ember.distributed.elastic.multiprocessing.errors import record

try:
    MPIEXEC = launcher.find_mpiexec()
except launcher.LaunchError:
    pytest.skip("mpiexec not found: pip install 'ember[mpi]'", allow_module_level=True)

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 120  # per launch; a passing launch takes about a second
QUICK = 60  # a failing job must end well before TIMEOUT: the other ranks must not hang

requires_core = pytest.mark.skipif(not hasattr(ember.distributed, "barrier"),
                                   reason="ember.distributed has no collectives yet")


def _env(**extra: str) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items()
           if not name.startswith("PET_") and name != "TORCHELASTIC_ERROR_FILE"}
    env.update(PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])]),
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", PYTHONWARNINGS="")
    env.update(extra)
    return env


def launch(*args: str, cwd: Path, module: str = "ember.distributed.run",
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``python -m MODULE ARGS`` in ``cwd``: the job's status and output."""
    return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, env=env or _env(),
                          capture_output=True, text=True, timeout=TIMEOUT, check=False)


def ok(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def write(path: Path, source: str) -> Path:
    path.write_text(textwrap.dedent(source))
    return path


# each rank writes what it sees to OUT/rank<RANK>.json
REPORT = """\
    import json, os, sys
    import torch
    import torch.distributed
    names = ["RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK",
             "GROUP_WORLD_SIZE", "ROLE_RANK", "ROLE_WORLD_SIZE", "ROLE_NAME", "MASTER_ADDR",
             "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS",
             "TORCHELASTIC_RUN_ID", "OMP_NUM_THREADS"]
    seen = {name: os.environ.get(name) for name in names}
    seen.update(argv=sys.argv, torch=torch.__name__, dist=torch.distributed.__name__,
                main=__name__)
    out = os.environ["OUT"]
    with open(os.path.join(out, "rank" + os.environ["RANK"] + ".json"), "w") as file:
        json.dump(seen, file)
"""


def reports(out: Path, world_size: int) -> list[dict]:
    found = sorted(out.glob("rank*.json"))
    assert len(found) == world_size, [path.name for path in found]
    return [json.loads((out / f"rank{rank}.json").read_text()) for rank in range(world_size)]


# ----------------------------------------------------------------------------------------
# the environment and the program each rank runs


@pytest.mark.parametrize("world_size", [2, 4])
def test_each_rank_sees_torchruns_environment_and_runs_the_script_on_ember(tmp_path, world_size):
    script = write(tmp_path / "report.py", REPORT)
    ok(launch(f"--nproc-per-node={world_size}", script.name, "--lr", "0.1", "two words",
              cwd=tmp_path, env=_env(OUT=str(tmp_path))))
    seen = reports(tmp_path, world_size)
    assert len({rank["TORCHELASTIC_RUN_ID"] for rank in seen}) == 1  # one job, one id
    assert seen[0]["TORCHELASTIC_RUN_ID"] != "none"  # a uuid, as torchrun on one machine
    for rank, env in enumerate(seen):
        assert env == {
            "RANK": str(rank), "WORLD_SIZE": str(world_size), "LOCAL_RANK": str(rank),
            "LOCAL_WORLD_SIZE": str(world_size), "GROUP_RANK": "0", "GROUP_WORLD_SIZE": "1",
            "ROLE_RANK": str(rank), "ROLE_WORLD_SIZE": str(world_size), "ROLE_NAME": "default",
            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500",
            "TORCHELASTIC_RESTART_COUNT": "0", "TORCHELASTIC_MAX_RESTARTS": "0",
            "TORCHELASTIC_RUN_ID": seen[0]["TORCHELASTIC_RUN_ID"], "OMP_NUM_THREADS": "1",
            "argv": ["report.py", "--lr", "0.1", "two words"], "torch": "ember",
            "dist": "ember.distributed", "main": "__main__"}


def test_master_address_port_role_and_rendezvous_id_are_passed_on(tmp_path):
    script = write(tmp_path / "report.py", REPORT)
    ok(launch("--nproc_per_node", "2", "--master_addr=10.1.2.3", "--master-port", "1234",
              "--rdzv-backend=c10d", "--rdzv-endpoint=10.1.2.3:1234", "--rdzv_id=job7",
              "--role", "trainer", script.name, cwd=tmp_path, env=_env(OUT=str(tmp_path))))
    for env in reports(tmp_path, 2):
        assert (env["MASTER_ADDR"], env["MASTER_PORT"]) == ("10.1.2.3", "1234")
        assert (env["TORCHELASTIC_RUN_ID"], env["ROLE_NAME"]) == ("job7", "trainer")


def test_options_default_from_pet_variables_and_standalone_gets_a_fresh_run_id(tmp_path):
    script = write(tmp_path / "report.py", REPORT)
    ok(launch("--standalone", "--rdzv-id=ignored", script.name, cwd=tmp_path,
              env=_env(OUT=str(tmp_path), PET_NPROC_PER_NODE="2")))
    seen = reports(tmp_path, 2)
    assert seen[0]["TORCHELASTIC_RUN_ID"] not in ("ignored", "none")


def test_module_runs_as_python_dash_m(tmp_path):
    package = tmp_path / "trainer"
    package.mkdir()
    (package / "__init__.py").write_text("")
    write(package / "job.py", REPORT)
    ok(launch("--nproc-per-node=2", "-m", "trainer.job", "--epochs", "3", cwd=tmp_path,
              env=_env(OUT=str(tmp_path))))
    for env in reports(tmp_path, 2):
        assert env["argv"] == [str(package / "job.py"), "--epochs", "3"]
        assert (env["torch"], env["main"]) == ("ember", "__main__")


def test_no_python_runs_the_command_with_the_same_environment(tmp_path):
    code = ("import os, sys; open(os.path.join(sys.argv[1], 'rank' + os.environ['RANK']), 'w')"
            ".write(os.environ['WORLD_SIZE'] + ' ' + os.environ['LOCAL_RANK'])")
    ok(launch("--nproc-per-node=2", "--no-python", sys.executable, "-c", code, str(tmp_path),
              cwd=tmp_path))
    assert [(tmp_path / f"rank{rank}").read_text() for rank in (0, 1)] == ["2 0", "2 1"]


def test_local_ranks_filter_shows_only_those_ranks(tmp_path):
    script = write(tmp_path / "hello.py", """\
        import os
        print("hello from", os.environ["RANK"])
    """)
    out = ok(launch("--nproc-per-node=2", "--local-ranks-filter=1", script.name, cwd=tmp_path))
    assert out.splitlines() == ["hello from 1"]


def test_two_machines_from_a_hostfile(tmp_path):
    """Two machines named in a hostfile; hydra's fork launcher starts both here (no ssh)."""
    hostfile = tmp_path / "hosts"
    hostfile.write_text("# the machines\nnode-a\nnode-b:4\n")
    script = write(tmp_path / "report.py", REPORT)
    ok(launch("--nnodes=2", "--nproc-per-node=2", f"--hostfile={hostfile}", script.name,
              cwd=tmp_path, env=_env(OUT=str(tmp_path), HYDRA_LAUNCHER="fork")))
    seen = reports(tmp_path, 4)
    assert [(env["GROUP_RANK"], env["LOCAL_RANK"]) for env in seen] == [
        ("0", "0"), ("0", "1"), ("1", "0"), ("1", "1")]
    assert {(env["WORLD_SIZE"], env["LOCAL_WORLD_SIZE"], env["GROUP_WORLD_SIZE"],
             env["MASTER_ADDR"]) for env in seen} == {("4", "2", "2", "node-a")}


def test_the_worker_under_plain_mpiexec_asks_mpi_what_hydra_does_not_say(tmp_path):
    """Without hydra's local-rank variables, the local group is MPI's shared-memory split."""
    script = write(tmp_path / "report.py", REPORT)
    ok(subprocess.run([MPIEXEC, "-n", "2", "env", "-u", "MPI_LOCALRANKID", "-u", "MPI_LOCALNRANKS",
                       sys.executable, "-m", "ember.distributed._worker", script.name],
                      cwd=tmp_path, env=_env(OUT=str(tmp_path)), capture_output=True, text=True,
                      timeout=TIMEOUT, check=False))
    seen = reports(tmp_path, 2)
    assert [(env["LOCAL_RANK"], env["LOCAL_WORLD_SIZE"]) for env in seen] == [("0", "2"),
                                                                              ("1", "2")]
    assert seen[0]["TORCHELASTIC_RUN_ID"] == "none"  # no launcher: torchrun's default id


def test_ranks_that_finish_at_different_times_end_the_job_cleanly(tmp_path):
    """A rank that exits first must not look failed to mpiexec (it finalizes MPI)."""
    script = write(tmp_path / "staggered.py", """\
        import os, time
        from mpi4py import MPI
        time.sleep(0.2 * int(os.environ["RANK"]))
    """)
    ok(launch("--nproc-per-node=4", script.name, cwd=tmp_path))


# ----------------------------------------------------------------------------------------
# a failing rank ends the whole job

FAILING = """\
    import os, sys
    import torch
    rank = int(os.environ["RANK"])
    {setup}
    if rank == 2:
        raise ValueError("rank 2 cannot go on")
    {barrier}
    print("passed the barrier", rank)
"""


@pytest.mark.parametrize("barrier", [
    pytest.param(("from mpi4py import MPI", "MPI.COMM_WORLD.Barrier()"), id="mpi4py"),
    pytest.param(("import torch.distributed as dist; dist.init_process_group('gloo')",
                  "dist.barrier()"), id="torch.distributed", marks=requires_core),
])
def test_a_rank_that_raises_ends_the_job_with_its_traceback(tmp_path, barrier):
    setup, wait = barrier
    script = write(tmp_path / "fail.py", FAILING.format(setup=setup, barrier=wait))
    start = time.monotonic()
    proc = launch("--nproc-per-node=4", script.name, cwd=tmp_path)
    assert time.monotonic() - start < QUICK
    assert proc.returncode != 0
    assert "[rank 2]" in proc.stderr
    assert "Traceback (most recent call last)" in proc.stderr
    assert 'fail.py", line' in proc.stderr and "ValueError: rank 2 cannot go on" in proc.stderr
    assert "passed the barrier" not in proc.stdout


@pytest.mark.parametrize(("code", "status"), [("3", 3), ("'stopped: bad config'", 1)])
def test_a_rank_that_exits_non_zero_ends_the_job_with_its_status(tmp_path, code, status):
    script = write(tmp_path / "exits.py", f"""\
        import os, sys
        from mpi4py import MPI
        if os.environ["RANK"] == "1":
            sys.exit({code})
        MPI.COMM_WORLD.Barrier()
    """)
    start = time.monotonic()
    proc = launch("--nproc-per-node=2", script.name, cwd=tmp_path)
    assert time.monotonic() - start < QUICK
    assert proc.returncode == status, proc.stderr
    assert f"[rank 1] the job is aborted: this rank exited with status {status}" in proc.stderr
    if status == 1:
        assert "stopped: bad config" in proc.stderr


def test_one_rank_exits_with_the_programs_own_status(tmp_path):
    script = write(tmp_path / "exits.py", "import sys\nsys.exit(5)\n")
    proc = launch(script.name, cwd=tmp_path)
    assert proc.returncode == 5
    assert "aborted" not in proc.stderr


def test_ctrl_c_ends_every_rank(tmp_path):
    script = write(tmp_path / "sleeps.py", """\
        import os, time
        with open(os.path.join(os.environ["OUT"], "pid" + os.environ["RANK"]), "w") as file:
            file.write(str(os.getpid()))
        time.sleep(100)
    """)
    job = subprocess.Popen([sys.executable, "-m", "ember.distributed.run", "--nproc-per-node=2",
                            script.name], cwd=tmp_path, env=_env(OUT=str(tmp_path)),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + QUICK
        while len(list(tmp_path.glob("pid*"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        job.send_signal(signal.SIGINT)  # the launcher alone: it must end the ranks itself
        assert job.wait(timeout=QUICK) != 0
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
    for path in tmp_path.glob("pid*"):
        status = Path(f"/proc/{path.read_text()}/status")
        if status.exists():  # gone, or a zombie waiting for a reaper
            assert "zombie" in status.read_text()


# ----------------------------------------------------------------------------------------
# @record and the error file


def test_record_writes_the_error_file_torch_writes(tmp_path, monkeypatch, torch):
    from torch.distributed.elastic.multiprocessing.errors import record as torch_record

    def fails():
        raise ValueError("bad input")

    files = {}
    for name, decorator in (("ember", record), ("torch", torch_record)):
        files[name] = tmp_path / f"{name}.json"
        monkeypatch.setenv("TORCHELASTIC_ERROR_FILE", str(files[name]))
        with pytest.raises(ValueError, match="bad input"):
            decorator(fails)()
    ours, theirs = (json.loads(files[name].read_text()) for name in ("ember", "torch"))
    assert ours["message"]["message"] == theirs["message"]["message"] == "ValueError: bad input"
    assert ours["message"]["extraInfo"].keys() == theirs["message"]["extraInfo"].keys()
    assert 'raise ValueError("bad input")' in ours["message"]["extraInfo"]["py_callstack"]
    assert abs(int(ours["message"]["extraInfo"]["timestamp"]) - time.time()) < 60


def test_record_returns_on_exit_zero_and_passes_other_exits(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHELASTIC_ERROR_FILE", str(tmp_path / "error.json"))
    assert record(lambda: sys.exit(0))() is None
    with pytest.raises(SystemExit):
        record(lambda: sys.exit(2))()
    assert record(lambda x: x + 1)(1) == 2
    assert not (tmp_path / "error.json").exists()


def test_record_under_the_launcher_writes_each_ranks_error_file(tmp_path):
    script = write(tmp_path / "recorded.py", """\
        import os
        from mpi4py import MPI
        from torch.distributed.elastic.multiprocessing.errors import record

        @record
        def main():
            if os.environ["RANK"] == "1":
                raise RuntimeError("rank 1 failed")
            MPI.COMM_WORLD.Barrier()

        main()
    """)
    proc = launch("--nproc-per-node=2", "--log-dir=logs", script.name, cwd=tmp_path)
    assert proc.returncode != 0
    assert "RuntimeError: rank 1 failed" in proc.stderr
    (error_file,) = (tmp_path / "logs").glob("*/attempt_0/1/error.json")
    assert json.loads(error_file.read_text())["message"]["message"] == "RuntimeError: rank 1 failed"


# ----------------------------------------------------------------------------------------
# torch.distributed.launch, the deprecated front end


def test_launch_passes_local_rank_unless_use_env(tmp_path):
    script = write(tmp_path / "report.py", REPORT)
    proc = launch("--nproc-per-node=2", script.name, "x", cwd=tmp_path,
                  module="ember.distributed.launch", env=_env(OUT=str(tmp_path)))
    assert "FutureWarning" in ok(proc) + proc.stderr
    assert [env["argv"] for env in reports(tmp_path, 2)] == [
        ["report.py", "--local-rank=0", "x"], ["report.py", "--local-rank=1", "x"]]

    ok(launch("--use-env", "--nproc-per-node=2", script.name, "x", cwd=tmp_path,
              module="ember.distributed.launch", env=_env(OUT=str(tmp_path))))
    assert [env["argv"] for env in reports(tmp_path, 2)] == [["report.py", "x"]] * 2


def test_launch_refuses_no_python_without_use_env(capsys):
    from ember.distributed import launch as legacy
    with pytest.warns(FutureWarning, match="torch.distributed.launch is deprecated"):
        assert legacy.main(["--no-python", "echo"]) == 1
    assert "you must also set the '--use-env' flag" in capsys.readouterr().err


# ----------------------------------------------------------------------------------------
# what the launcher cannot do: clear errors, before anything starts


@pytest.mark.parametrize(("argv", "message"), [
    (["--max-restarts", "2"], "--max-restarts 2: restarting workers is not supported"),
    (["--nnodes", "2"], "pass --hostfile FILE"),
    (["--nnodes=1:4"], "elastic node ranges are not supported"),
    (["--nproc-per-node=gpu"], "Unsupported nproc_per_node value: gpu"),
    (["--nproc-per-node=0"], "--nproc-per-node must be at least 1"),
    (["--node-rank=1"], "run the launcher once"),
    (["-m", "--no-python"], "Don't use both the '--no-python' flag and the '--module' flag"),
    (["--redirects=3"], "--redirects is not supported"),
    (["--tee", "1"], "--tee is not supported"),
    (["--local-ranks-filter=a"], "comma-separated list of integers"),
])
def test_unsupported_options_are_refused_with_the_alternative(capsys, argv, message):
    assert launcher.main([*argv, "train.py"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("python -m ember.distributed.run: error: ") and message in err


def test_a_refused_option_from_the_command_line(tmp_path):
    proc = launch("--max_restarts=2", "train.py", cwd=tmp_path)
    assert proc.returncode == 1 and "not supported" in proc.stderr


def test_usage_errors_and_help():
    assert launcher.main([]) == 2  # no script: argparse's message
    assert launcher.main(["--help"]) == 0


def test_a_missing_mpiexec_names_the_install(tmp_path, monkeypatch, capsys):
    assert launcher.main(["--mpiexec", str(tmp_path / "no-mpiexec"), "train.py"]) == 1
    assert "--mpiexec" in capsys.readouterr().err
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(launcher.LaunchError, match=r'pip install "ember\[mpi\]"'):
        launcher.find_mpiexec()


def test_the_mpiexec_command_line(tmp_path, monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    hostfile = tmp_path / "hosts"
    hostfile.write_text("# machines\nnode-a:8\nnode-b:8\n")
    args = launcher.parse_args(["--nnodes=2", "--nproc-per-node=3", f"--hostfile={hostfile}",
                                "-m", "trainer", "--lr", "1"])
    command, env = launcher.mpiexec_command(args, mpiexec="mpiexec")
    assert command[:7] == ["mpiexec", "-f", str(hostfile), "-ppn", "3", "-n", "6"]
    assert command[7:11] == [sys.executable, "-u", "-m", "ember.distributed._worker"]
    assert "--master-addr=node-a" in command and "--module" in command
    assert command[command.index("--"):] == ["--", "trainer", "--lr", "1"]
    assert env == {"OMP_NUM_THREADS": "1"}  # torchrun's default for several processes

    args = launcher.parse_args(["--nproc-per-node=auto", "train.py"])
    command, env = launcher.mpiexec_command(args, mpiexec="mpiexec")
    assert command[1:3] == ["-n", str(launcher._cpu_count())]
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    assert launcher.mpiexec_command(args, mpiexec="mpiexec")[1] == {}


def test_importing_the_launcher_modules_does_not_start_mpi():
    code = ("import sys, ember.distributed.run, ember.distributed.launch, "
            "ember.distributed._worker, ember.distributed.elastic.multiprocessing.errors; "
            "assert 'mpi4py' not in sys.modules, 'mpi4py imported'")
    subprocess.run([sys.executable, "-c", code], env=_env(), check=True, timeout=TIMEOUT)
