"""benchmarks/distributed.py in its quick mode: it launches its own 1- and 2-rank mpiexec jobs
and prints every row of its tables. Skipped without mpi4py or mpiexec (``ember[mpi]``)."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "distributed.py"


def _mpiexec() -> str | None:
    beside = Path(sys.executable).parent / "mpiexec"
    return str(beside) if beside.exists() else shutil.which("mpiexec")


pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("mpi4py") is None or _mpiexec() is None,
    reason='needs mpi4py and mpiexec: pip install "ember[mpi]"')


def test_quick_run_prints_every_row():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--timeout", "120",
         "--bucket-cap-mb", "25", "0.25"],
        check=False, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    out = proc.stdout
    assert proc.returncode == 0, f"stdout:\n{out}\nstderr:\n{proc.stderr}"
    for label in ["no DDP (no communication)",
                  "all-reduce after backward, bucket_cap_mb=25", "DDP, bucket_cap_mb=25",
                  "all-reduce after backward, bucket_cap_mb=0.25", "DDP, bucket_cap_mb=0.25"]:
        for ranks in (1, 2):
            row = rf"^\| {re.escape(label)} \| {ranks} \| [\d,]+ \| [\d.]+ \| "
            assert re.search(row, out, re.MULTILINE), f"no row {label!r}, {ranks} rank(s):\n{out}"
    # the 2-rank DDP rows have an overlapped fraction, and the bucket layout is DDP's: one
    # bucket under torch's default 25 MiB cap (the first bucket closes past 1 MiB, with every
    # parameter in it), two under 0.25 MiB
    assert re.search(r"^\| DDP, bucket_cap_mb=25 \| 2 \|.*\| -?\d+% \|$", out, re.MULTILINE), out
    assert "| 25 | 1 | 2,093 | 6 | 1 | 2,093 |" in out
    assert "| 0.25 | 2 | 523, 1,570 | 4, 2 | 2 | 2,093 |" in out
    assert "2 ranks on" in out and "is the upper limit here" in out
