"""Convolution kernels: ember's forward, d/dinput and d/dweight array kernels against torch's.

For each case (the two layers of benchmarks/cnn.py, then strided, depthwise, 1x1 and 1-d
convolutions) it times, in one process and interleaved so machine load hits both alike:

* forward: ``ember.ops.conv._conv`` (im2col + matmul, keeping the columns as the training step
  does) vs ``aten.convolution``;
* grad-input: ``_conv_transposed`` (matmul + col2im) vs ``aten.convolution_backward`` with
  ``output_mask=[True, False, False]``;
* grad-weight: ``_conv_weight`` on the columns kept by the forward (as in training) vs
  ``aten.convolution_backward`` with ``output_mask=[False, True, False]``.

Each number is the best of ``--repeats`` rounds (minima: the machines are shared and noisy);
the ratio is ember/torch. ``--against REV`` also times the array kernels of
``ember/ops/conv.py`` at git revision REV (read with ``git show``), for before/after tables.
Threads are pinned to ``--threads`` before NumPy and torch load.

Run:  python benchmarks/conv_kernels.py [--repeats 30] [--threads 1] [--against HEAD]
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (name, N, C, spatial, Cout, kernel, stride, padding, groups)
CASES = [
    ("cnn.py conv1", 64, 1, (28, 28), 16, 3, 1, 1, 1),
    ("cnn.py conv2", 64, 16, (14, 14), 32, 3, 1, 1, 1),
    ("stride 2", 32, 32, (16, 16), 64, 3, 2, 1, 1),
    ("depthwise", 32, 32, (16, 16), 32, 3, 1, 1, 32),
    ("1x1", 32, 64, (14, 14), 64, 1, 1, 0, 1),
    ("conv1d", 32, 16, (256,), 32, 5, 1, 2, 1),
]


def kernels_at(rev: str) -> dict:
    """The array kernels of ember/ops/conv.py at ``rev``: its kernel section alone, imported
    from a temporary module (the ops below that section are not registered a second time)."""
    src = subprocess.run(["git", "show", f"{rev}:ember/ops/conv.py"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    begin = src.index("# " + "-" * 75 + " array kernels")
    end = src.index("# " + "-" * 75 + " the ops")
    header = ("from __future__ import annotations\nimport math\n"
              "from ember._backend import host, ndarray, xp_of\n"
              "from ember.ops.vision import accumulate_windows, pad_array, windows\n")
    folder = tempfile.mkdtemp()
    path = os.path.join(folder, "conv_at_rev.py")
    with open(path, "w") as f:
        f.write(header + src[begin:end])
    spec = importlib.util.spec_from_file_location("conv_at_rev", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return vars(module)


def best_of(fns: dict, repeats: int) -> dict:
    """The minimum time of each function over ``repeats`` interleaved rounds, in ms."""
    best = dict.fromkeys(fns, math.inf)
    for _ in range(repeats):
        for key, fn in fns.items():
            t = time.perf_counter()
            fn()
            best[key] = min(best[key], time.perf_counter() - t)
    return {key: v * 1e3 for key, v in best.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--against", help="also time the kernels at this git revision")
    args = parser.parse_args()
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                "VECLIB_MAXIMUM_THREADS"):
        os.environ[var] = str(args.threads)
    sys.path.insert(0, ROOT)
    import numpy as np
    import torch

    from ember.ops import conv as current
    torch.set_num_threads(args.threads)
    impls = {"ember": vars(current)}
    if args.against:
        impls[args.against] = kernels_at(args.against)
    head = f"{'case':<14}{'kernel':<13}{'ember':>8}{'torch':>8}{'ratio':>7}"
    if args.against:
        head += f"{args.against:>10}{'ratio':>7}"
    print(f"conv kernels, {args.threads} thread(s), best of {args.repeats} interleaved "
          "rounds, ms")
    print(head)
    for case in CASES:
        times = measure(case, impls, args.repeats, np, torch)
        for kind in ("forward", "grad-input", "grad-weight"):
            t = times[kind, "torch"]
            e = times[kind, "ember"]
            line = f"{case[0]:<14}{kind:<13}{e:>8.3f}{t:>8.3f}{e / t:>7.2f}"
            if args.against:
                r = times[kind, args.against]
                line += f"{r:>10.3f}{r / t:>7.2f}"
            print(line)


def measure(case: tuple, impls: dict, repeats: int, np, torch) -> dict:
    """Check each implementation's kernels against torch on one case, then time them all."""
    name, n, c, size, cout, k, s, p, groups = case
    nd = len(size)
    kernel, stride = (k,) * nd, (s,) * nd
    out = tuple((i + 2 * p - k) // s + 1 for i in size)
    spec = (stride, ((p, p),) * nd, (1,) * nd, groups)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, c, *size), dtype=np.float32)
    w = rng.standard_normal((cout, c // groups, *kernel), dtype=np.float32)
    g = rng.standard_normal((n, cout, *out), dtype=np.float32)
    tx, tw, tg = map(torch.from_numpy, (x, w, g))
    targs = ([s] * nd, [p] * nd, [1] * nd, False, [0] * nd, groups)
    aten = torch.ops.aten

    def torch_grad(mask: list):
        return lambda: aten.convolution_backward(tg, tx, tw, None, *targs, mask)

    fns: dict = {
        ("forward", "torch"): lambda: aten.convolution(tx, tw, None, *targs),
        ("grad-input", "torch"): torch_grad([True, False, False]),
        ("grad-weight", "torch"): torch_grad([False, True, False]),
    }
    for label, ns in impls.items():
        conv, conv_t, conv_w = ns["_conv"], ns["_conv_transposed"], ns["_conv_weight"]
        cols = conv(x, w, spec, out, keep_cols=True)[1]
        fns["forward", label] = (lambda f=conv: f(x, w, spec, out, keep_cols=True)[0])
        fns["grad-input", label] = (lambda f=conv_t: f(g, w, spec, size))
        fns["grad-weight", label] = (lambda f=conv_w, cols=cols: f(x, g, spec, kernel, cols))
    # the kernels must agree with torch before their times mean anything
    ref_gx, ref_gw = (r.numpy() for r in torch_grad([True, True, False])()[:2])
    refs = {"forward": fns["forward", "torch"]().numpy(), "grad-input": ref_gx,
            "grad-weight": ref_gw}
    for (kind, label), fn in fns.items():
        ref = refs[kind]
        scale = float(np.abs(ref).max()) or 1.0
        if label != "torch" and not np.allclose(fn(), ref, rtol=1e-4, atol=1e-4 * scale):
            raise AssertionError(f"{name}: {kind} ({label}) differs from torch")
    return best_of(fns, repeats)

if __name__ == "__main__":
    main()
