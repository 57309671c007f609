"""Data-parallel training on MPI: DistributedDataParallel's throughput on 1 and 2 ranks, and how
much of its gradient communication backward hides.

The model is ``mlp.py``'s 784-512-256-10 MLP (ReLU, 535,818 float32 parameters, 2.04 MiB of
gradients), trained with cross-entropy and ``optim.SGD(lr=0.01)`` on synthetic batches of 128
per rank (``numpy.random.default_rng(rank)``, a pool of 8 batches cycled through; no downloads).
This script launches ``mpiexec -n 1`` and ``mpiexec -n 2`` jobs of its own ``--worker`` mode,
alternating, each with a timeout and with one BLAS thread per rank. Every rank runs, in
interleaved rounds so that drift in machine load hits them alike, the same training step in
these modes:

* no DDP: the plain model, no communication at all (what the ranks' compute alone allows);
* DDP with each ``--bucket-cap-mb``: ``DistributedDataParallel``, whose bucket all-reduces start
  during backward; the time inside its end-of-backward engine callback (waiting for them and
  writing the averages back) is timed too;
* all-reduce after backward, for each ``--bucket-cap-mb``: the plain model, then the same
  buckets as DDP's (same parameters, same order), each copied into one flat host buffer as DDP
  copies it, ``dist.all_reduce``'d synchronously and written back averaged: the total
  communication, none of it overlapped.

Every step starts at a barrier (not timed), and each rank notes when it finishes forward,
backward, the after-backward all-reduce and the optimizer step; per step the last rank's time
counts, and medians over the steps are reported, then the median over the jobs
(``--repeats``). Throughput is ranks x batch / step time. The total communication runs from the
last rank's end of backward to the end of the all-reduces; the exposed communication is DDP's
forward+backward minus the forward+backward of the all-reduce-after-backward mode (the same
plain model on the same ranks, stepping in lockstep with the same communication after it, so
the ranks' imbalance and what the all-reduces do to the caches are in both); the overlapped
fraction is 1 - exposed / total.

Run:  python benchmarks/distributed.py [--steps 100] [--repeats 3] [--batch 128]
                                       [--bucket-cap-mb 25 0.25] [--quick] [--json out.json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
MARK = "EMBER_DISTRIBUTED_BENCH "  # the worker's result line starts with this
POOL = 8
WARMUP = 3
SIZES = (784, 512, 256, 10)
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


# ------------------------------------------------------------------------------- worker
def worker(steps: int, batch: int, caps: list[float], rounds: int) -> None:
    """One rank of the job: time every mode, gather the per-step times on rank 0, print them."""
    sys.path.insert(0, str(ROOT))
    import ember as torch
    import ember.distributed as dist
    from ember import nn, optim
    from ember.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    rng = np.random.default_rng(rank)
    xs = [torch.tensor(rng.standard_normal((batch, SIZES[0]), dtype=np.float32))
          for _ in range(POOL)]
    ys = [torch.tensor(rng.integers(0, SIZES[-1], batch)) for _ in range(POOL)]
    loss_fn = nn.CrossEntropyLoss()

    def mlp():
        torch.manual_seed(0)
        layers = []
        for n_in, n_out in itertools.pairwise(SIZES):
            layers += [nn.Linear(n_in, n_out), nn.ReLU()]
        return nn.Sequential(*layers[:-1])

    def timed_step(model, opt, after_backward=None, callback_s=None):
        # times from the step's start (every rank leaves the barrier together) to the end of
        # forward, of backward, of the after-backward all-reduce and of the optimizer step,
        # and the time spent in DDP's engine callback
        def step(i: int) -> list[float]:
            x, y = xs[i % POOL], ys[i % POOL]
            dist.barrier()
            t0 = time.perf_counter()
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            t1 = time.perf_counter()
            loss.backward()
            t2 = time.perf_counter()
            if after_backward is not None:
                after_backward()
            t3 = time.perf_counter()
            opt.step()
            t4 = time.perf_counter()
            wait = callback_s.pop() if callback_s else 0.0
            return [t1 - t0, t2 - t0, t3 - t0, t4 - t0, wait]
        return step

    def allreduce_after_backward(params, layout):
        # DDP's own work, done after backward: copy each bucket's gradients into one flat
        # host buffer, all-reduce it (handed to MPI without a copy), write the averages back
        buffers = [(np.empty(sum(params[i].numel() for i in bucket), dtype=np.float32),
                    [params[i] for i in bucket]) for bucket in layout]
        scale = 1.0 / world

        def reduce() -> None:
            for flat, ps in buffers:
                grads = [p.grad.numpy() for p in ps]
                start = 0
                for g in grads:
                    flat[start:start + g.size] = g.reshape(-1)
                    start += g.size
                dist.all_reduce(torch.from_numpy(flat))
                start = 0
                for g in grads:
                    np.multiply(flat[start:start + g.size].reshape(g.shape), scale, out=g)
                    start += g.size
        return reduce

    modes = {}
    plain = mlp()
    modes["plain"] = timed_step(plain, optim.SGD(plain.parameters(), lr=0.01))
    layouts = {}
    for cap in caps:
        ddp = DDP(mlp(), bucket_cap_mb=cap)
        callback_s: list[float] = []
        finish = ddp._finish_reduction

        def timed_finish(finish=finish, callback_s=callback_s) -> None:
            t = time.perf_counter()
            finish()
            callback_s.append(time.perf_counter() - t)
        ddp._finish_reduction = timed_finish  # the engine callback DDP queues in backward
        modes[f"ddp {cap}"] = timed_step(ddp, optim.SGD(ddp.parameters(), lr=0.01),
                                         callback_s=callback_s)
        layout = [list(b.params) for b in ddp._buckets]  # indices into ddp's parameters
        layouts[str(cap)] = {"bytes": ddp._get_ddp_logging_data()["bucket_sizes"],
                             "params": [len(b) for b in layout]}
        sync = mlp()
        modes[f"sync {cap}"] = timed_step(sync, optim.SGD(sync.parameters(), lr=0.01),
                                          allreduce_after_backward(list(sync.parameters()),
                                                                   layout))

    times: dict[str, list[list[float]]] = {name: [] for name in modes}
    for name, step in modes.items():
        for i in range(WARMUP):
            step(i)
    per_round = max(1, steps // rounds)
    for r in range(rounds):
        for name, step in modes.items():
            for i in range(per_round):
                times[name].append(step(r * per_round + i))
    gathered = [None] * world if rank == 0 else None
    dist.gather_object(times, gathered, dst=0)
    if rank == 0:
        result = {"world": world, "batch": batch, "steps": per_round * rounds,
                  "params": sum(p.numel() for p in plain.parameters()), "layouts": layouts,
                  "modes": {}}
        for name in modes:
            marks = np.array([g[name] for g in gathered]) * 1e3  # (rank, step, mark) in ms
            last = marks.max(axis=0)  # per step, when the last rank got to each mark
            med = np.median  # over the steps
            result["modes"][name] = {
                "forward_ms": med(last[:, 0]),
                # to the end of the slowest rank's backward: DDP's includes its exposed
                # communication; the ranks' imbalance is in every mode's figure alike
                "backward_ms": med(last[:, 1]),
                # from the last rank's end of backward to the all-reduces' end everywhere
                "comm_ms": med(last[:, 2] - last[:, 1]),
                "step_ms": med(last[:, 3]),
                # the rank that waits least in the callback: the last one out of backward
                "callback_ms": med(marks[:, :, 4].min(axis=0)),
            }
        print(MARK + json.dumps(result), flush=True)
    dist.destroy_process_group()


# ------------------------------------------------------------------------------- launcher
def find_mpiexec() -> str | None:
    """The ``mpiexec`` next to this Python (as the ``mpich`` wheel installs it), else PATH's."""
    beside = Path(sys.executable).parent / "mpiexec"
    return str(beside) if beside.exists() else shutil.which("mpiexec")


def launch(mpiexec: str, nproc: int, steps: int, batch: int, caps: list[float], rounds: int,
           timeout: float) -> dict:
    """Run the worker on ``nproc`` ranks; its result, or RuntimeError with what it printed."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    env.update({var: "1" for var in THREAD_VARS})
    cmd = [mpiexec, "-n", str(nproc), sys.executable, "-u", str(Path(__file__).resolve()),
           "--worker", "--steps", str(steps), "--batch", str(batch), "--rounds", str(rounds),
           "--bucket-cap-mb", *map(str, caps)]
    # a session of its own, so that a timeout can end mpiexec and the ranks it started
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise RuntimeError(f"mpiexec -n {nproc} did not finish within {timeout:.0f} s\n"
                           f"{out}\n{err}") from None
    for line in out.splitlines():
        if line.startswith(MARK):
            return json.loads(line[len(MARK):])
    raise RuntimeError(f"mpiexec -n {nproc} exited with {proc.returncode} without a result\n"
                       f"stdout:\n{out}\nstderr:\n{err}")


def median_of(runs: list[dict]) -> dict:
    """The median over the jobs of each mode's figures (layouts are the same in every job)."""
    out = dict(runs[0])
    out["modes"] = {name: {key: statistics.median(r["modes"][name][key] for r in runs)
                           for key in runs[0]["modes"][name]}
                    for name in runs[0]["modes"]}
    return out


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


# ------------------------------------------------------------------------------- report
def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _kib(nbytes: int) -> str:
    return f"{nbytes / 1024:,.0f}"


def tables(results: dict[int, dict], caps: list[float]) -> list[str]:
    """The results table and the bucket-layout table, as Markdown lines."""
    ranks = sorted(results)
    batch = results[ranks[0]]["batch"]

    def throughput(p: int, mode: str) -> float:
        return p * batch / (results[p]["modes"][mode]["step_ms"] / 1e3)

    lines = [("| configuration | ranks | samples/s | vs 1 rank | step (ms) "
              "| forward+backward (ms) | comm. total (ms) | exposed (ms) | callback wait (ms) "
              "| overlapped |"),
             "|---|---|---|---|---|---|---|---|---|---|"]
    configs = [("no DDP (no communication)", "plain")]
    for cap in caps:
        configs += [(f"all-reduce after backward, bucket_cap_mb={cap:g}", f"sync {cap}"),
                    (f"DDP, bucket_cap_mb={cap:g}", f"ddp {cap}")]
    for label, mode in configs:
        kind, _, cap = mode.partition(" ")
        for p in ranks:
            m = results[p]["modes"][mode]
            rate = throughput(p, mode)
            total = exposed = wait = None
            overlapped = "—"
            if kind != "plain":
                total = results[p]["modes"][f"sync {cap}"]["comm_ms"]
            if kind == "ddp":
                # against the same plain model stepping in lockstep with the same all-reduces
                # after it, so that what communication does to the next step cancels out
                exposed = m["backward_ms"] - results[p]["modes"][f"sync {cap}"]["backward_ms"]
                wait = m["callback_ms"]
                if p > 1 and total > 0:
                    overlapped = f"{1 - exposed / total:.0%}"
            lines.append(f"| {label} | {p} | {rate:,.0f} | {rate / throughput(ranks[0], mode):.2f} "
                         f"| {_ms(m['step_ms'])} | {_ms(m['backward_ms'])} | {_ms(total)} "
                         f"| {_ms(exposed)} | {_ms(wait)} | {overlapped} |")
    lines += ["", ("| bucket_cap_mb | buckets | bucket sizes (KiB, in launch order) "
                   "| parameters per bucket | all-reduces per step | KiB all-reduced per step |"),
              "|---|---|---|---|---|---|"]
    for cap in caps:
        layout = results[ranks[0]]["layouts"][str(cap)]
        sizes = layout["bytes"]
        lines.append(f"| {cap:g} | {len(sizes)} | {', '.join(map(_kib, sizes))} "
                     f"| {', '.join(map(str, layout['params']))} | {len(sizes)} "
                     f"| {_kib(sum(sizes))} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100, help="timed steps per mode and job")
    parser.add_argument("--repeats", type=int, default=3, help="jobs per rank count")
    parser.add_argument("--batch", type=int, default=128, help="samples per rank and step")
    parser.add_argument("--bucket-cap-mb", type=float, nargs="+", default=[25.0, 0.25],
                        help="DDP bucket caps to measure (25 is torch's default)")
    parser.add_argument("--quick", action="store_true", help="a smoke test: few steps, 1 job")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per mpiexec job")
    parser.add_argument("--json", help="also save the results to this file")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.steps, args.repeats, args.rounds = min(args.steps, 8), 1, 2
    if args.worker:
        worker(args.steps, args.batch, args.bucket_cap_mb, args.rounds)
        return

    import importlib.util
    mpiexec = find_mpiexec()
    if importlib.util.find_spec("mpi4py") is None or mpiexec is None:
        sys.exit('benchmarks/distributed.py needs mpi4py and mpiexec: pip install "ember[mpi]"')
    n_cores = cores()
    load_before = os.getloadavg()[0]
    runs: dict[int, list[dict]] = {1: [], 2: []}
    started = time.perf_counter()
    for _ in range(args.repeats):
        for nproc, jobs in runs.items():  # alternating: drift in machine load hits both alike
            jobs.append(launch(mpiexec, nproc, args.steps, args.batch, args.bucket_cap_mb,
                               args.rounds, args.timeout))
    results = {nproc: median_of(r) for nproc, r in runs.items()}
    first = results[1]
    print(f"DDP on MPI: MLP {'-'.join(map(str, SIZES))} ({first['params']:,} float32 "
          f"parameters), SGD, batch {args.batch} per rank, 1 BLAS thread per rank, median of "
          f"{args.repeats} job(s) x {first['steps']} steps per mode "
          f"({time.perf_counter() - started:.0f} s)\n")
    print("\n".join(tables(results, args.bucket_cap_mb)))
    print(f"\nThis machine has {n_cores} core(s): 2 ranks on {n_cores} cores is the upper limit "
          "here" + ("" if n_cores >= 2 else " (oversubscribed: the 2-rank figures measure "
                    "contention)") + "; more ranks would share cores and measure contention. "
          f"Load average (1 min) {load_before:.2f} before the run, {os.getloadavg()[0]:.2f} "
          "after: other work on these cores slows the 2-rank jobs most.")
    print("comm. total: DDP's bucket all-reduces issued synchronously after backward (copies "
          "in and out included); exposed: DDP's forward+backward minus that of the all-reduce-"
          "after-backward run on the same ranks; callback wait: time in DDP's end-of-backward "
          "engine callback (on the rank that waits least); overlapped = 1 - exposed / total "
          "(noise can push it past 0% or 100%).")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cores": n_cores, "load_average": [load_before, os.getloadavg()[0]],
                       "runs": runs, "results": results}, f, indent=2)


if __name__ == "__main__":
    main()
