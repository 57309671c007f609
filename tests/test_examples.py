"""Smoke tests for examples/: each program runs with ``--fast`` and prints what it should.

Each example runs as a user would run it (``python examples/x.py --fast`` from the repo root,
with the working tree on ``PYTHONPATH``), must exit 0, and must print its key line: for the
training examples, a final loss below the first one.
"""

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
EXAMPLES = ROOT / "examples"
LOSS_FELL = re.compile(r"fell from ([-+\d.e]+) to ([-+\d.e]+)")


def run_example(name: str, *args: str) -> str:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    # Small matrices: BLAS threads only contend for the shared CPUs.
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env.setdefault("OMP_NUM_THREADS", "1")
    proc = subprocess.run([sys.executable, str(EXAMPLES / name), *args], check=False, cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, (f"{name} exited with {proc.returncode}\n"
                                  f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc.stdout


def assert_losses_fell(out: str, expected_count: int = 1) -> None:
    found = LOSS_FELL.findall(out)
    assert len(found) == expected_count, out
    for first, last in found:
        assert float(last) < float(first), out


def test_autograd_basics():
    out = run_example("autograd_basics.py", "--fast")
    assert "grad_fn=<AddBackward0>" in out
    assert "tensor([[4.5000, 4.5000],\n        [4.5000, 4.5000]])" in out
    assert "x.grad == v * 2048: True" in out or re.search(r"x\.grad == v \* \d+: True", out)
    assert "after w.grad.zero_(): tensor([0., 0., 0.])" in out


@pytest.mark.parametrize("name", ["two_layer_net_by_hand.py", "two_layer_net_autograd.py"])
def test_two_layer_net(name):
    out = run_example(name, "--fast")
    assert_losses_fell(out)
    assert re.match(r"0 \d+\.\d+\n", out)  # the tutorial's "step loss" lines


def test_two_layer_net_by_hand_and_autograd_agree():
    by_hand = run_example("two_layer_net_by_hand.py", "--steps", "20")
    autograd = run_example("two_layer_net_autograd.py", "--steps", "20")
    assert LOSS_FELL.findall(by_hand) == LOSS_FELL.findall(autograd)


def test_custom_function():
    out = run_example("custom_function.py", "--fast")
    assert_losses_fell(out, expected_count=2)
    assert "MyReLUBackward" in out
    assert "Result: y = " in out and "* P3(" in out


def test_freezing_layers():
    out = run_example("freezing_layers.py", "--fast")
    assert_losses_fell(out)
    assert "0.weight   changed=False" in out
    assert "frozen layer unchanged: True; other layers updated: True" in out
    assert "model[0].weight.grad is None" in out


def test_hooks():
    out = run_example("hooks.py", "--fast")
    assert "x.grad, clipped to 3 by x's hook: tensor([2., 3., 3.])" in out
    assert "x.grad after clip.remove(): tensor([2., 4., 6.])" in out
    assert "y.grad (retain_grad): tensor([1., 1., 1.])" in out
    assert "output doubled: True" in out and "after remove(): True" in out
    assert "grad_input of layer 0 is x.grad: True" in out


def test_higher_order_gradients():
    out = run_example("higher_order_gradients.py", "--fast")
    assert "dy/dx = 12.0, d2y/dx2 = 12.0, d3y/dx3 = 6.0" in out
    assert "4th derivative equals sin: True" in out
    assert "H equals A + 12 diag(w^2): True" in out
    assert "Hv matches: True" in out
    assert_losses_fell(out)


def test_digits_cnn():
    if importlib.util.find_spec("sklearn") is None:
        pytest.skip("digits_cnn.py needs scikit-learn: pip install scikit-learn")
    out = run_example("digits_cnn.py", "--fast")
    assert_losses_fell(out)
    assert "reloaded state_dict gives the same accuracy: True" in out
    accuracy = float(re.search(r"accuracy ([\d.]+)%\s*$", out).group(1))
    assert accuracy > 30  # one epoch: well above the 10% of chance


def test_digits_cnn_without_sklearn_says_what_to_install():
    # sys.modules[name] = None makes "import sklearn" fail, as if it were not installed.
    code = ("import runpy, sys; sys.modules['sklearn'] = None; sys.argv = ['digits_cnn.py']; "
            "runpy.run_path('examples/digits_cnn.py', run_name='__main__')")
    proc = subprocess.run([sys.executable, "-c", code], check=False, cwd=ROOT, capture_output=True,
                          text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=60)
    assert proc.returncode == 1
    assert "pip install scikit-learn" in proc.stderr


def test_char_lstm():
    out = run_example("char_lstm.py", "--fast")
    assert_losses_fell(out)
    sample = out.split("sample:\n", 1)[1]
    assert sample.startswith("The keeper") and len(sample.rstrip("\n")) >= len("The keeper") + 30


def test_char_lstm_trains_on_a_given_text(tmp_path):
    text = tmp_path / "abc.txt"
    text.write_text("abcabcabc " * 40, encoding="utf-8")
    out = run_example("char_lstm.py", "--fast", "--text", str(text), "--hidden-size", "16")
    assert "vocabulary of 4" in out
    assert_losses_fell(out)


def test_tiny_transformer():
    out = run_example("tiny_transformer.py", "--fast")
    assert_losses_fell(out)
    token_acc = float(re.search(r"final accuracy: token ([\d.]+)%", out).group(1))
    assert token_acc > 15  # 60 steps: above the 10% of chance
    assert out.count("attends most to") == 2


def _run_distributed_train(launcher: list[str], checkpoint: Path) -> str:
    """examples/distributed_train.py is a PyTorch script (``import torch``): run it on ember
    through ``python -m ember``, under ``launcher`` (nothing for one process, or mpiexec)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env.setdefault("OMP_NUM_THREADS", "1")
    cmd = [*launcher, sys.executable, "-m", "ember", str(EXAMPLES / "distributed_train.py"),
           "--fast", "--checkpoint", str(checkpoint)]
    proc = subprocess.run(cmd, check=False, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, (f"{cmd} exited with {proc.returncode}\n"
                                  f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc.stdout


@pytest.mark.parametrize("ranks", [1, 2])
def test_distributed_train(ranks, tmp_path):
    if importlib.util.find_spec("mpi4py") is None:
        pytest.skip('distributed_train.py needs mpi4py: pip install "ember[mpi]"')
    launcher: list[str] = []  # one process started by hand: an MPI singleton, a world of one
    if ranks > 1:
        beside = Path(sys.executable).parent / "mpiexec"
        mpiexec = str(beside) if beside.exists() else shutil.which("mpiexec")
        if mpiexec is None:
            pytest.skip('no mpiexec: pip install "ember[mpi]" (the mpich wheel brings it)')
        launcher = [mpiexec, "-n", str(ranks)]
    out = _run_distributed_train(launcher, tmp_path / "checkpoint.pt")
    assert out.startswith(f"{ranks} rank(s), 2048 samples"), out  # rank 0 alone prints
    assert_losses_fell(out)
    assert "every rank reloaded the checkpoint: True" in out
    assert float(re.search(r"test accuracy ([\d.]+)%", out).group(1)) > 50  # chance: 25%
    assert (tmp_path / "checkpoint.pt").exists()


def test_every_example_is_tested():
    tested = {"autograd_basics", "two_layer_net_by_hand", "two_layer_net_autograd",
              "custom_function", "freezing_layers", "hooks", "higher_order_gradients",
              "digits_cnn", "char_lstm", "tiny_transformer", "distributed_train",
              "fashion_mnist_cnn"}  # tested in its own file by its author
    present = {p.stem for p in EXAMPLES.glob("*.py")}
    assert present <= tested, f"examples without a smoke test: {sorted(present - tested)}"
