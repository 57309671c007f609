"""Whole programs: the scripts in ``tests/corpus`` run unchanged under PyTorch
(``python script.py``) and under ember (``python -m ember script.py``), and report the same values.

Each script is written the way the upstream tutorials and examples are: the everyday import
forms, the device boilerplate, ``torch.backends`` flags, autocast, checkpoints and whole-model
save/load. The values a script reports are built without random draws (the two libraries'
random streams differ), so they must agree to float32 tolerance, and to bfloat16 tolerance where
autocast computed them.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

CORPUS = Path(__file__).parent / "corpus"
SCRIPTS = sorted(p.stem for p in CORPUS.glob("*.py") if not p.stem.startswith("_"))

# script -> its command-line arguments (the run must not depend on dropout's random masks)
ARGS = {"mnist_example": ["--dropout", "0", "--save-model"]}
# values computed under bfloat16 autocast, or trained through it, agree to bfloat16 precision
LOOSE_KEYS = ("amp", "inference")
LOOSE_SCRIPTS = ("nanogpt",)
TIGHT = dict(rel=2e-4, abs=2e-5)
# programs whose modules are each called with a new signature every time (sizes that change,
# one call per module), so that nothing is replayed
NOT_REPLAYED = ("ensembling", "forward_ad_tutorial", "nanogpt", "tensors_tutorial")
LOOSE = dict(rel=3e-2, abs=3e-2)


def _run(cmd: list[str], out: Path, cwd: Path, stderr: list | None = None) -> dict:
    env = dict(os.environ, CORPUS_OUT=str(out), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               PYTHONWARNINGS="ignore")
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    if stderr is not None:
        stderr.append(proc.stderr)
    return json.loads(out.read_text())


def _compare(ember, torch, path: str, tol: dict) -> None:
    loose = any(k in path for k in LOOSE_KEYS)
    tol = LOOSE if loose else tol
    if isinstance(torch, dict):
        assert isinstance(ember, dict) and sorted(ember) == sorted(torch), path
        for k in torch:
            _compare(ember[k], torch[k], f"{path}.{k}", tol)
    elif isinstance(torch, list):
        assert isinstance(ember, list) and len(ember) == len(torch), f"{path}: {ember} vs {torch}"
        for i, (e, t) in enumerate(zip(ember, torch)):
            _compare(e, t, f"{path}[{i}]", tol)
    elif isinstance(torch, float) and not isinstance(ember, bool):
        if math.isinf(torch) or math.isnan(torch):
            assert str(ember) == str(torch), path
        else:
            assert ember == pytest.approx(torch, **tol), f"{path}: ember {ember} vs torch {torch}"
    else:
        assert ember == torch, f"{path}: ember {ember!r} vs torch {torch!r}"


@pytest.mark.parametrize("script", SCRIPTS)
def test_script_runs_unchanged_with_torchs_numbers(script, tmp_path):
    cmd = [str(CORPUS / f"{script}.py"), *ARGS.get(script, [])]
    ember = _run([sys.executable, "-m", "ember", *cmd], tmp_path / "ember.json", tmp_path)
    pytest.importorskip("torch")
    torch = _run([sys.executable, *cmd], tmp_path / "torch.json", tmp_path)
    _compare(ember, torch, script, LOOSE if script in LOOSE_SCRIPTS else TIGHT)


@pytest.mark.parametrize("script", SCRIPTS)
def test_script_with_its_modules_compiled_reports_eager_numbers(script, tmp_path):
    """Every module call a program makes from its own code compiled (``torch.compile(model)``):
    the same report as eager ember, bit for bit, and the modules replayed."""
    cmd = [str(CORPUS / f"{script}.py"), *ARGS.get(script, [])]
    eager = _run([sys.executable, "-m", "ember", *cmd], tmp_path / "eager.json", tmp_path)
    err: list = []
    compiled = _run([sys.executable, str(CORPUS / "_compile_modules.py"), *cmd],
                    tmp_path / "compiled.json", tmp_path, err)
    assert compiled == eager
    line = next(ln for ln in err[0].splitlines() if ln.startswith("COMPILED "))
    report = json.loads(line[len("COMPILED "):])
    assert not report["eager"], report
    if report["modules"] and script not in NOT_REPLAYED:
        assert report["replays"] > 0, report


def test_corpus_is_large_enough():
    assert len(SCRIPTS) >= 12
