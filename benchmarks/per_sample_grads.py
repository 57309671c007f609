"""Per-sample gradients: ``vmap(grad(loss))`` against a Python loop over the examples.

A small MLP, 64-128-128-10 (ReLU, Tanh), as ``nn.Sequential``, called through
``torch.func.functional_call``, cross-entropy per example; 256 examples from
``numpy.random.default_rng(0)`` (float32), the same in both libraries. Per library, in the same
run:

* ``vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)``: the gradient of every example's loss
  with respect to every parameter, one batched forward and backward (torch.func in torch, the
  batching rules of ``ember.func`` in ember: docs/func.md);
* the same gradients from a Python loop over the 256 examples, each a forward pass and an
  ``autograd.grad`` of its loss.

ember and torch run in fresh processes, alternating, with threads pinned; each process times
each way a few times (after a warm-up) and reports the median; the medians over processes are
reported in ms with the ember/torch ratio, then each library's loop/vmap speedup, the largest
difference between its two ways (a check that both give the same gradients) and, for ember,
how many ops ran through vmap's per-example loop fallback (0: everything batched).

Run:  python benchmarks/per_sample_grads.py [--examples 256] [--repeats 5] [--threads 1]
                                            [--quick] [--json out.json]
"""

from __future__ import annotations

import argparse
import json

from _harness import alternate, fmt, medians, row, run_child

CHILD = r"""
n, loops = int(args[0]), int(args[1])
functional_call, grad, vmap = torch.func.functional_call, torch.func.grad, torch.func.vmap

sizes = (64, 128, 128, 10)
rng = np.random.default_rng(0)
x = torch.tensor(rng.standard_normal((n, sizes[0])).astype(np.float32))
y = torch.tensor(rng.integers(0, sizes[-1], n))
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 128),
                            torch.nn.Tanh(), torch.nn.Linear(128, 10))
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.tensor((rng.standard_normal(tuple(p.shape)) * 0.1).astype(np.float32)))
params = {k: v.detach() for k, v in model.named_parameters()}


def loss_fn(params, xi, yi):
    out = functional_call(model, params, (xi.unsqueeze(0),))
    return torch.nn.functional.cross_entropy(out, yi.unsqueeze(0))


per_sample = vmap(grad(loss_fn), in_dims=(None, 0, 0))


def loop():
    leaves = [p for p in model.parameters()]
    rows = []
    for i in range(n):
        loss = torch.nn.functional.cross_entropy(model(x[i:i + 1]), y[i:i + 1])
        rows.append(torch.autograd.grad(loss, leaves))
    return {k: torch.stack([r[j] for r in rows]) for j, k in enumerate(params)}


def timed(fn):
    fn()
    times = []
    for _ in range(loops):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3, out


vmap_ms, g1 = timed(lambda: per_sample(params, x, y))
loop_ms, g2 = timed(loop)
diff = max(float((g1[k] - g2[k]).abs().max()) for k in params)
fallbacks = 0
if lib == "ember":
    import ember.func
    fallbacks = sum(ember.func.vmap_fallback_counts.values())
print(json.dumps({"vmap_ms": vmap_ms, "loop_ms": loop_ms, "diff": diff,
                  "fallbacks": fallbacks}))
"""


def collect(repeats: int = 5, threads: int = 1, quick: bool = False,
            examples: int = 256) -> dict:
    loops = 1 if quick else 5
    runs = alternate(lambda lib: run_child(CHILD, lib, threads, examples, loops), repeats)
    med = medians(runs)
    notes = []
    for lib, m in med.items():
        notes.append(f"{lib}: the loop takes {m['loop_ms'] / m['vmap_ms']:.1f}x as long as "
                     f"vmap(grad); largest |vmap - loop| difference {m['diff']:.2g}"
                     + (f"; ops through vmap's loop fallback: {int(m['fallbacks'])}"
                        if lib == "ember" else ""))
    return {
        "title": f"per-sample gradients, MLP 64-128-128-10, {examples} examples, "
                 f"{threads} thread(s), median of {repeats} processes",
        "rows": [row("psg_vmap", "vmap(grad(loss)), all examples", "ms", med, "vmap_ms"),
                 row("psg_loop", "Python loop over the examples", "ms", med, "loop_ms")],
        "notes": notes,
        "runs": runs,
    }


def markdown(result: dict) -> str:
    lines = [result["title"], "", "| workload | ember | torch | ember/torch |",
             "|---|---:|---:|---:|"]
    for r in result["rows"]:
        lines.append(f"| {r['workload']} ({r['unit']}) | {fmt(r['ember'])} | {fmt(r['torch'])} "
                     f"| {fmt(r['ratio'])} |")
    return "\n".join(lines + [""] + result["notes"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="fresh processes per library")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="a smaller, faster run")
    parser.add_argument("--examples", type=int, default=256)
    parser.add_argument("--json", help="also save the results to this file")
    args = parser.parse_args()
    result = collect(args.repeats, args.threads, args.quick, args.examples)
    print(markdown(result))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(result, threads=args.threads), f, indent=2)


if __name__ == "__main__":
    main()
