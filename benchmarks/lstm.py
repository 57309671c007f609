"""LSTM training step: ``nn.LSTM(64, 128)`` over 50 time steps of a batch of 32, a linear head
on every step's output, a mean-squared loss, and backward.

ember and torch run the same code in fresh processes, alternating, with threads pinned to 1;
medians of the per-step times are reported with the ember/torch ratio, for forward + backward
and for the forward alone (no_grad).

Run:  python benchmarks/lstm.py [--steps 10] [--repeats 5] [--threads 1] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import sys, time, json
import numpy as np
lib, threads, root, steps = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
if lib == "torch":
    import torch
    torch.set_num_threads(threads)
else:
    sys.path.insert(0, root)
    import ember as torch
import importlib
nn = importlib.import_module(torch.__name__ + ".nn")
F = importlib.import_module(torch.__name__ + ".nn.functional")

T, B, I, H = 50, 32, 64, 128
rng = np.random.default_rng(0)
x = torch.tensor(rng.standard_normal((T, B, I)).astype(np.float32))
y = torch.tensor(rng.standard_normal((T, B, 1)).astype(np.float32))
lstm = nn.LSTM(I, H)
head_w = torch.tensor(rng.uniform(-H ** -0.5, H ** -0.5, (1, H)).astype(np.float32),
                      requires_grad=True)
head_b = torch.tensor(np.zeros(1, np.float32), requires_grad=True)


def step():
    out, _ = lstm(x)
    loss = ((F.linear(out, head_w, head_b) - y) ** 2).mean()
    loss.backward()
    for p in list(lstm.parameters()) + [head_w, head_b]:
        p.grad = None


def forward():
    with torch.no_grad():
        lstm(x)


def timed(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


for _ in range(2):
    step()
train = sorted(timed(step) for _ in range(steps))[steps // 2]
fwd = sorted(timed(forward) for _ in range(steps))[steps // 2]
print(json.dumps({"train_ms": train * 1e3, "forward_ms": fwd * 1e3}))
"""


def measure(lib: str, threads: int, steps: int) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads),
               OPENBLAS_NUM_THREADS=str(threads))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", CHILD, lib, str(threads), root, str(steps)],
                         env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10, help="timed steps per process")
    parser.add_argument("--repeats", type=int, default=5, help="fresh processes per library")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", help="also save the results to this file")
    args = parser.parse_args()
    import importlib.util
    libs = ["ember", "torch"] if importlib.util.find_spec("torch") else ["ember"]
    runs: dict[str, list[dict]] = {lib: [] for lib in libs}
    for _ in range(args.repeats):
        for lib in libs:  # alternate, so drift in machine load hits both alike
            runs[lib].append(measure(lib, args.threads, args.steps))
    med = {lib: {k: statistics.median(r[k] for r in rs) for k in rs[0]}
           for lib, rs in runs.items()}
    print(f"LSTM(64, 128), 50 steps x batch 32, linear head + MSE, {args.threads} thread(s), "
          f"median of {args.repeats} processes (ms per step)")
    print(f"{'workload':<22}{'ember':>10}{'torch':>10}{'ember/torch':>14}")
    for key, label in (("train_ms", "forward+backward"), ("forward_ms", "forward, no_grad")):
        e = med["ember"][key]
        if "torch" in med:
            t = med["torch"][key]
            print(f"{label:<22}{e:>10.2f}{t:>10.2f}{e / t:>14.2f}")
        else:
            print(f"{label:<22}{e:>10.2f}{'-':>10}{'-':>14}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"median": med, "runs": runs, "threads": args.threads}, f, indent=2)


if __name__ == "__main__":
    main()
