"""``ember.alias_torch()`` and ``python -m ember``: PyTorch programs run unchanged on ember.

This process has the real torch imported (it is the oracle), and one process cannot have both
under the name ``torch``, so every aliased program runs in a subprocess: ``python -m ember``.
Where the behaviour is Python's own (argv, ``__name__``, exit status, tracebacks), the same
program also runs under plain ``python`` and the outputs must match. einops and torchinfo run
the same script once on torch and once on ember, with weights set from NumPy, and their numbers
must agree.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import requires_torch

ROOT = Path(__file__).resolve().parent.parent
HAS_EINOPS = importlib.util.find_spec("einops") is not None
HAS_TORCHINFO = importlib.util.find_spec("torchinfo") is not None


def _env() -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", PYTHONWARNINGS="")
    return env


def python(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``python ARGS`` in a fresh interpreter, the working tree first on the path."""
    return subprocess.run([sys.executable, *args], cwd=cwd or ROOT, env=_env(),
                          capture_output=True, text=True, timeout=120, check=False)


def ember_main(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``python -m ember ARGS``."""
    return python("-m", "ember", *args, cwd=cwd)


def ok(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def write(path: Path, source: str) -> Path:
    path.write_text(textwrap.dedent(source))
    return path


# ----------------------------------------------------------------------------------------
# the alias: import forms, identity, errors


def test_every_import_form_resolves_to_ember():
    code = textwrap.dedent("""
        import sys
        import ember
        import torch
        import torch.nn as nn
        from torch import nn as nn2, optim
        import torch.nn.functional as F
        from torch.utils.data import DataLoader, TensorDataset
        import torch.optim.lr_scheduler
        from torch.optim.lr_scheduler import StepLR
        from torch.nn import Linear
        import torch.autograd
        assert torch is ember and nn is ember.nn and nn2 is ember.nn and optim is ember.optim
        assert F is ember.nn.functional
        assert DataLoader is ember.utils.data.DataLoader
        assert TensorDataset is ember.utils.data.TensorDataset
        assert torch.optim.lr_scheduler is ember.optim.lr_scheduler
        assert StepLR is ember.optim.lr_scheduler.StepLR and Linear is ember.nn.Linear
        for name in ("torch", "torch.nn", "torch.nn.functional", "torch.utils.data",
                     "torch.optim.lr_scheduler", "torch.autograd"):
            assert sys.modules[name] is sys.modules["ember" + name[5:]], name
        print("ok")
    """)
    assert ok(ember_main("-c", code)) == "ok\n"


def test_tensor_classes_are_ember_classes():
    code = textwrap.dedent("""
        import ember, torch
        from torch import nn
        assert torch.Tensor is ember.Tensor and torch.nn.Parameter is ember.nn.Parameter
        t = torch.zeros(2, 3)
        assert isinstance(t, torch.Tensor) and isinstance(t, ember.Tensor)
        lin = nn.Linear(3, 1)
        assert isinstance(lin, ember.nn.Module) and isinstance(lin.weight, torch.nn.Parameter)
        assert torch.is_tensor(lin(t)) and lin(t).dtype is torch.float32
        print(type(t).__module__)
    """)
    assert ok(ember_main("-c", code)) == "ember._tensor\n"


def test_lazy_namespaces_map_generically():
    # every namespace ember loads lazily (other helpers add more) is torch.X once imported
    code = textwrap.dedent("""
        import importlib, sys
        import ember
        mapped = []
        for name in sorted(ember._SUBMODULES):
            try:
                module = importlib.import_module("ember." + name)
            except ModuleNotFoundError as exc:
                if exc.name != "ember." + name:
                    raise
                continue  # not written yet: covered by the unknown-submodule test
            assert importlib.import_module("torch." + name) is module, name
            assert sys.modules["torch." + name] is module
            mapped.append(name)
        print(" ".join(mapped))
    """)
    mapped = ok(ember_main("-c", code)).split()
    assert {"nn", "optim", "utils", "linalg"} <= set(mapped)


def test_ember_modules_keep_their_own_spec():
    # no ImportWarning "__package__ != __spec__.parent", no module loaded twice
    code = textwrap.dedent("""
        import sys
        import torch.nn.functional, torch.utils.data, torch.optim.lr_scheduler
        import ember
        for name in ("ember", "ember.nn", "ember.nn.functional", "ember.utils.data"):
            assert sys.modules[name].__spec__.name == name, name
        twice = [k for k, m in sys.modules.items() if k.startswith("torch")
                 and m is not sys.modules.get("ember" + k[5:])]
        assert not twice, twice
        import importlib.util
        assert importlib.util.find_spec("torch") is ember.__spec__
        print("ok")
    """)
    assert ok(python("-W", "error", "-m", "ember", "-c", code)) == "ok\n"


def test_alias_is_idempotent_and_imports_no_real_torch():
    code = textwrap.dedent("""
        import sys
        import ember
        ember.alias_torch()
        ember.alias_torch()
        import torch, torch.nn
        finders = [f for f in sys.meta_path if getattr(f, "_ember_alias_finder", False)]
        assert len(finders) == 1, sys.meta_path
        assert sys.modules["torch"] is ember
        real = [k for k, m in sys.modules.items()
                if k.startswith("torch") and not m.__name__.startswith("ember")]
        assert not real, real
        print("ok")
    """)
    assert ok(python("-c", code)) == "ok\n"


def test_alias_puts_torch_in_sys_modules_before_any_import():
    # einops (and others) choose their backend by looking in sys.modules, without importing
    code = "import sys, ember; ember.alias_torch(); print(sys.modules['torch'] is ember)"
    assert ok(python("-c", code)) == "True\n"


@requires_torch
def test_alias_refuses_when_real_torch_is_imported():
    proc = python("-c", "import torch, ember; ember.alias_torch()")
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("RuntimeError: ember.alias_torch(): the real PyTorch is already")
    assert "before anything imports torch" in last and "python -m ember script.py" in last
    # the launcher says the same in one line (say a sitecustomize imported torch first)
    launch = "import torch, runpy, sys; sys.argv[1:] = ['-c', 'pass']; " \
             "runpy.run_module('ember', run_name='__main__')"
    proc = python("-c", launch)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1
    assert proc.stderr.startswith("python -m ember: error: ember.alias_torch(): the real")


@pytest.mark.parametrize("name, private", [("nosuchthing", False), ("_C", True)])
def test_missing_torch_submodule_names_both_modules(name, private):
    code = textwrap.dedent(f"""
        try:
            import torch.{name}
        except ModuleNotFoundError as exc:
            print(exc.name)
            print(exc)
    """)
    exc_name, message = ok(ember_main("-c", code)).splitlines()
    assert exc_name == f"torch.{name}"
    assert f"No module named 'torch.{name}'" in message and f"'ember.{name}'" in message
    assert "docs/differences.md" in message
    assert ("private part of PyTorch" in message) is private


def test_missing_torch_submodule_is_an_import_error_for_probing_libraries():
    # libraries probe optional parts with `try: import torch.X except ImportError`
    code = textwrap.dedent("""
        try:
            from torch._dynamo import allow_in_graph
        except ImportError:
            print("fallback")
        import torch
        print(hasattr(torch, "_C"))
    """)
    assert ok(ember_main("-c", code)) == "fallback\nFalse\n"


# ----------------------------------------------------------------------------------------
# python -m ember: the program runs as Python would run it

SCRIPT = """
    import pickle, sys
    class Point:  # defined in __main__: pickling needs sys.modules['__main__'] to be us
        pass
    def fail():
        raise ValueError("boom")
    print(__name__, sys.argv, sys.path[0] == __import__("os").path.dirname(__file__))
    print(type(pickle.loads(pickle.dumps(Point()))).__qualname__)
    if sys.argv[1:2] == ["fail"]:
        fail()
    if sys.argv[1:2] == ["exit"]:
        sys.exit(int(sys.argv[2]) if sys.argv[2].isdigit() else sys.argv[2])
    print("torch" in sys.modules and sys.modules["torch"].__name__)
"""


@pytest.mark.parametrize("args", [[], ["a", "--b", "-c"], ["fail"], ["exit", "7"],
                                  ["exit", "a message"], ["exit", "0"]])
def test_script_runs_as_python_runs_it(tmp_path, args):
    script = write(tmp_path / "prog.py", SCRIPT)
    for path in (str(script), "prog.py"):  # absolute, and relative to the working directory
        ours = ember_main(path, *args, cwd=tmp_path)
        plain = python(path, *args, cwd=tmp_path)
        assert ours.returncode == plain.returncode
        assert ours.stderr == plain.stderr  # tracebacks show the script's frames only
        assert ours.stdout.splitlines()[:2] == plain.stdout.splitlines()[:2]
    if args[:1] == ["fail"]:
        assert ours.returncode == 1 and "ValueError: boom" in ours.stderr
        assert 'prog.py", line 6, in fail' in ours.stderr and "runpy" not in ours.stderr
    if not args:  # plain python never imported torch; under ember the script sees ember
        assert ours.stdout.splitlines()[2] == "ember"


def test_code_runs_as_python_c_runs_it(tmp_path):
    code = "import sys; print(__name__, sys.argv, repr(sys.path[0])); print(1 / int(sys.argv[1]))"
    for args in (["1", "x"], ["0"]):
        ours, plain = ember_main("-c", code, *args, cwd=tmp_path), python("-c", code, *args,
                                                                          cwd=tmp_path)
        assert (ours.returncode, ours.stdout, ours.stderr) == (plain.returncode, plain.stdout,
                                                              plain.stderr)
    assert ours.returncode == 1 and ours.stderr.endswith("ZeroDivisionError: division by zero\n")
    assert ok(ember_main("-cimport torch; print(torch.__name__)")) == "ember\n"


def test_module_runs_as_python_m_runs_it(tmp_path):
    write(tmp_path / "prog.py", SCRIPT)
    ours, plain = ember_main("-m", "prog", "x", cwd=tmp_path), python("-m", "prog", "x",
                                                                        cwd=tmp_path)
    assert ok(ours).splitlines()[:2] == ok(plain).splitlines()[:2]  # argv[0] is the file
    failed = ember_main("-m", "prog", "fail", cwd=tmp_path)
    assert failed.returncode == 1 and failed.stderr.startswith("Traceback")
    assert 'prog.py", line 6, in fail' in failed.stderr and "ember" not in failed.stderr
    assert ember_main("-m", "prog", "exit", "3", cwd=tmp_path).returncode == 3


def test_missing_script_or_module_fails_as_python_does(tmp_path):
    for args in (["nosuch.py"], ["-m", "nosuch_module_xyz"]):
        ours, plain = ember_main(*args, cwd=tmp_path), python(*args, cwd=tmp_path)
        assert (ours.returncode, ours.stderr) == (plain.returncode, plain.stderr)
        assert ours.returncode in (1, 2) and ours.stderr.count("\n") == 1


def test_syntax_error_is_reported_as_python_does(tmp_path):
    write(tmp_path / "bad.py", "x = (\n")
    ours, plain = ember_main("bad.py", cwd=tmp_path), python("bad.py", cwd=tmp_path)
    assert (ours.returncode, ours.stderr) == (1, plain.stderr)
    assert "SyntaxError" in ours.stderr


def test_usage():
    helped = ember_main("-h")
    assert ok(helped).startswith("usage: python -m ember SCRIPT [ARGS...]")
    assert "-m MODULE" in helped.stdout and "alias_torch" in helped.stdout
    assert "python -m ember.demo" in helped.stdout
    assert ember_main("--help").stdout == helped.stdout
    for args in ([], ["-x"], ["-c"], ["-m"]):
        proc = ember_main(*args)
        assert proc.returncode == 2 and proc.stdout == ""
        assert proc.stderr.startswith("python -m ember: error:") and "usage:" in proc.stderr


def test_main_returns_status_in_process():
    from ember.__main__ import main  # parsing paths only: nothing runs with the alias here
    assert main(["-h"]) == 0
    assert main([]) == 2
    assert main(["--bogus"]) == 2


# ----------------------------------------------------------------------------------------
# real programs and libraries: the same script on torch and on ember


def both(tmp_path: Path, source: str) -> tuple[dict, dict]:
    """Run ``source`` under real torch and under ``python -m ember``; their JSON outputs."""
    script = write(tmp_path / "script.py", source)
    real = json.loads(ok(python(str(script), cwd=tmp_path)).splitlines()[-1])
    emb = json.loads(ok(ember_main(str(script), cwd=tmp_path)).splitlines()[-1])
    assert real.pop("torch") == "torch" and emb.pop("torch") == "ember"
    assert real.keys() == emb.keys()
    return real, emb


TRAINING = """
    import json
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.utils.data import DataLoader, TensorDataset

    rng = np.random.default_rng(0)
    x = torch.tensor(rng.standard_normal((32, 4)).astype(np.float32))
    y = torch.tensor(rng.integers(0, 3, 32))
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
    with torch.no_grad():  # weights from NumPy: the two libraries' random streams differ
        for p in model.parameters():
            p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32) * 0.5))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    losses = []
    for epoch in range(4):
        for xb, yb in DataLoader(TensorDataset(x, y), batch_size=8):  # no shuffle: same order
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        sched.step()
    print(json.dumps({"torch": torch.__name__, "losses": losses,
                      "weight": model[0].weight.detach().numpy().tolist()}))
"""


@requires_torch
def test_training_script_runs_unchanged(tmp_path):
    real, emb = both(tmp_path, TRAINING)
    np.testing.assert_allclose(emb["losses"], real["losses"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(emb["weight"], real["weight"], rtol=1e-4, atol=1e-5)


EINOPS = """
    import json
    import numpy as np
    import torch
    from torch import nn
    from einops import rearrange, reduce, repeat
    from einops.layers.torch import Rearrange, Reduce

    rng = np.random.default_rng(0)
    x = torch.tensor(rng.standard_normal((2, 3, 4, 6)).astype(np.float32), requires_grad=True)
    out = {"torch": torch.__name__}
    r = rearrange(x, "b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=2, p2=3)
    m = reduce(x, "b c h w -> b c", "max")
    mean = reduce(x, "b c (h 2) w -> b h w", "mean")
    rp = repeat(x[0, 0], "h w -> h w k", k=2)
    (r.square().sum() + m.sum() + mean.exp().sum() + rp.sum()).backward()
    out.update(rearrange=r.tolist(), max=m.tolist(), mean=mean.tolist(), repeat=rp.tolist(),
               shape=list(r.shape), x_grad=x.grad.tolist())

    model = nn.Sequential(Rearrange("b c h w -> b (c h w)"), nn.Linear(72, 5),
                          Reduce("b k -> k", "mean"))
    with torch.no_grad():
        model[1].weight.copy_(torch.tensor(rng.standard_normal((5, 72)).astype(np.float32)))
        model[1].bias.copy_(torch.tensor(rng.standard_normal(5).astype(np.float32)))
    y = model(x.detach())
    y.square().sum().backward()
    out.update(seq=y.tolist(), w_grad=model[1].weight.grad.tolist(),
               b_grad=model[1].bias.grad.tolist(), layer=repr(model[0]))
    print(json.dumps(out))
"""


@requires_torch
@pytest.mark.skipif(not HAS_EINOPS, reason="einops is not installed (the test extra has it)")
def test_einops_under_the_alias_matches_torch(tmp_path):
    real, emb = both(tmp_path, EINOPS)
    assert emb.pop("layer") == real.pop("layer") == "Rearrange('b c h w -> b (c h w)')"
    assert emb.pop("shape") == real.pop("shape") == [2, 4, 18]
    for key in real:
        np.testing.assert_allclose(emb[key], real[key], rtol=1e-5, atol=1e-6, err_msg=key)


TORCHINFO = """
    import json, sys
    import numpy as np
    import torch
    from torch import nn
    from torchinfo import summary

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.bn = nn.BatchNorm2d(8)
            self.pool = nn.AvgPool2d(2)
            self.head = nn.Sequential(nn.Flatten(), nn.Linear(8 * 4 * 4, 10))
            self.frozen = nn.Linear(10, 10)
            self.frozen.requires_grad_(False)

        def forward(self, x):
            return self.frozen(self.head(self.pool(torch.relu(self.bn(self.conv(x))))))

    stats = summary(Net(), input_size=(2, 3, 8, 8), verbose=0,
                    col_names=("input_size", "output_size", "num_params", "mult_adds"))
    print(json.dumps({"torch": torch.__name__, "table": str(stats),
                      "params": stats.total_params, "trainable": stats.trainable_params,
                      "mult_adds": stats.total_mult_adds, "input": stats.total_input,
                      "output_bytes": stats.total_output_bytes,
                      "param_bytes": stats.total_param_bytes}))
"""


@requires_torch
@pytest.mark.skipif(not HAS_TORCHINFO, reason="torchinfo is not installed (the test extra has it)")
def test_torchinfo_summary_under_the_alias_matches_torch(tmp_path):
    real, emb = both(tmp_path, TORCHINFO)
    # the input's bytes include the storage object's own size, which is torch's C struct
    assert abs(emb.pop("input") - real.pop("input")) <= 64
    assert emb == real
    assert "Conv2d: 1-1" in emb["table"] and "Total params: 1,640" in emb["table"]
