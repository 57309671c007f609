"""Per-op overhead: a chain of 1,000 small-tensor ops, forward and forward+backward.

The chain is 333 x ``y = tanh(y * c1 + c2)`` plus one multiply (1,000 ops) on a 16-element
float32 tensor that requires grad, then ``y.sum().backward()``. ember and torch run the same
code in fresh processes, alternating, with threads pinned to 1; medians are reported with the
ember/torch ratio.

Run:  python benchmarks/overhead.py [--repeats 5] [--threads 1] [--json out.json]
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
lib = sys.argv[1]
if lib == "torch":
    import torch
    torch.set_num_threads(int(sys.argv[2]))
else:
    sys.path.insert(0, sys.argv[3])
    import ember as torch
rng = np.random.default_rng(0)
x0 = rng.standard_normal(16).astype(np.float32)
c1 = torch.tensor(rng.standard_normal(16).astype(np.float32))
c2 = torch.tensor(rng.standard_normal(16).astype(np.float32))
N_OPS = 1000

def forward(x):
    y = x
    for _ in range(333):
        y = torch.tanh(y * c1 + c2)
    return y * c1

def run(backward):
    x = torch.tensor(x0, requires_grad=True)
    t = time.perf_counter()
    y = forward(x)
    if backward:
        y.sum().backward()
    return time.perf_counter() - t

for _ in range(3):
    run(True)
fwd = min(run(False) for _ in range(10))
both = min(run(True) for _ in range(10))
print(json.dumps({"forward_us_per_op": fwd / N_OPS * 1e6,
                  "fwd_bwd_us_per_op": both / N_OPS * 1e6}))
"""


def measure(lib: str, threads: int) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads),
               OPENBLAS_NUM_THREADS=str(threads))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", CHILD, lib, str(threads), root], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="fresh processes per library")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", help="also save the results to this file")
    args = parser.parse_args()
    try:
        import importlib.util
        libs = ["ember", "torch"] if importlib.util.find_spec("torch") else ["ember"]
    except ImportError:
        libs = ["ember"]
    runs: dict[str, list[dict]] = {lib: [] for lib in libs}
    for _ in range(args.repeats):
        for lib in libs:  # alternate, so drift in machine load hits both alike
            runs[lib].append(measure(lib, args.threads))
    med = {lib: {k: statistics.median(r[k] for r in rs) for k in rs[0]}
           for lib, rs in runs.items()}
    print(f"op overhead: 1,000-op chain on a 16-element tensor, {args.threads} thread(s), "
          f"median of {args.repeats} processes (µs per op)")
    print(f"{'workload':<22}{'ember':>10}{'torch':>10}{'ember/torch':>14}")
    for key, label in (("forward_us_per_op", "forward"), ("fwd_bwd_us_per_op",
                                                          "forward+backward")):
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
