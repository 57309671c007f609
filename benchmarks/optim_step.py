"""Optimizer step: ``opt.step()`` alone over the MLP's parameters, for each optimizer.

The parameter set is the one ``mlp.py`` trains (784-512-256-10: weights 512x784, 256x512,
10x256 and their biases, 535,818 float32 numbers in 6 tensors), with gradients drawn once from
``numpy.random.default_rng(0)`` and left in place, so every step is the optimizer's update and
nothing else. Each optimizer (the configurations in ``CONFIGS``: Adam, AdamW, Adam with
AMSGrad, SGD plain / momentum / Nesterov with weight decay, RMSprop, Adagrad, Adamax, NAdam,
RAdam, Adadelta) takes 3 warm-up steps, then the best of 5 timed loops of ``steps`` steps is
its per-step time. ember and torch run the same code in fresh processes, alternating, threads
pinned; the medians over the processes are reported with the ember/torch ratio.

Run:  python benchmarks/optim_step.py [--steps 20] [--repeats 5] [--threads 1] [--quick]
                                      [--json out.json]
"""

from __future__ import annotations

from _harness import alternate, medians, row, run_child, standalone

CONFIGS: list[tuple[str, str, dict]] = [
    ("adam", "Adam", {}),
    ("adamw", "AdamW", {}),
    ("adam_amsgrad", "Adam", {"amsgrad": True}),
    ("sgd", "SGD", {"lr": 0.01}),
    ("sgd_momentum", "SGD", {"lr": 0.01, "momentum": 0.9}),
    ("sgd_nesterov_wd", "SGD", {"lr": 0.01, "momentum": 0.9, "nesterov": True,
                                "weight_decay": 1e-4}),
    ("rmsprop", "RMSprop", {}),
    ("adagrad", "Adagrad", {}),
    ("adamax", "Adamax", {}),
    ("nadam", "NAdam", {}),
    ("radam", "RAdam", {}),
    ("adadelta", "Adadelta", {}),
]

CHILD = r"""
steps, configs = int(args[0]), json.loads(args[1])
optim = importlib.import_module(torch.__name__ + ".optim")
rng = np.random.default_rng(0)
SHAPES = [(512, 784), (512,), (256, 512), (256,), (10, 256), (10,)]
init = [rng.standard_normal(s).astype(np.float32) * 0.05 for s in SHAPES]
grads = [rng.standard_normal(s).astype(np.float32) * 0.01 for s in SHAPES]

out = {}
for key, name, kwargs in configs:
    params = [torch.nn.Parameter(torch.tensor(a.copy())) for a in init]
    for p, g in zip(params, grads):
        p.grad = torch.tensor(g.copy())
    opt = getattr(optim, name)(params, **kwargs)
    for _ in range(3):
        opt.step()
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(steps):
            opt.step()
        best = min(best, (time.perf_counter() - t) / steps)
    out[key] = best * 1e3
print(json.dumps(out))
"""


def collect(repeats: int = 5, threads: int = 1, quick: bool = False, steps: int = 20) -> dict:
    import json

    if quick:
        steps = min(steps, 5)
    configs = json.dumps(CONFIGS)
    runs = alternate(lambda lib: run_child(CHILD, lib, threads, steps, configs), repeats)
    med = medians(runs)
    rows = [row(key, f"{name} {_describe(kwargs)}", "ms", med, key)
            for key, name, kwargs in CONFIGS]
    return {
        "title": f"Optimizer step over the MLP's 535,818 parameters (6 tensors), {threads} "
                 f"thread(s), median of {repeats} processes x best of 5 loops x {steps} steps",
        "rows": rows,
        "runs": runs,
    }


def _describe(kwargs: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in kwargs.items()) or "defaults"


def main() -> None:
    standalone(__doc__, collect, steps=(int, 20, "timed steps per loop"))


if __name__ == "__main__":
    main()
