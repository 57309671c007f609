"""Deep chain: 100,000 multiplies on a one-element tensor that requires grad, then backward.

``y = x; for _ in range(100_000): y = y * c`` (``c`` a one-element constant), then
``y.backward()``. Both the time and the peak memory are measured, each library in its own fresh
process, alternating, with threads pinned. Peak memory is measured the same way for both: the
growth of the process's resident set (RSS) over a baseline taken after import and a 1,000-op
warm-up, i.e. the kernel's peak-RSS mark (VmHWM, reset through /proc/self/clear_refs where the
kernel allows it, else ``ru_maxrss``) minus the RSS at the start. The first chain in each process
gives the memory figure; the time is the median over that and further chains. Medians over
processes are reported with the ember/torch ratio.

Run:  python benchmarks/deep_chain.py [--length 100000] [--repeats 5] [--threads 1] [--quick]
                                      [--json out.json]
"""

from __future__ import annotations

from _harness import alternate, medians, row, run_child, standalone

CHILD = r"""
import gc, resource
length, loops = int(args[0]), int(args[1])
rng = np.random.default_rng(0)
x0 = rng.standard_normal(1).astype(np.float32)
c = torch.tensor((1.0 + 1e-6 * rng.standard_normal(1)).astype(np.float32))


def status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])


def reset_peak():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def chain(n):
    x = torch.tensor(x0, requires_grad=True)
    t = time.perf_counter()
    y = x
    for _ in range(n):
        y = y * c
    y.backward()
    elapsed = time.perf_counter() - t
    del y
    return elapsed, float(x.grad[0])


chain(1000)
gc.collect()
exact = reset_peak()
base = status_kib("VmRSS") if exact else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
times = []
first, grad = chain(length)
peak = status_kib("VmHWM") if exact else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
times.append(first)
for _ in range(loops - 1):
    gc.collect()
    times.append(chain(length)[0])
print(json.dumps({"time_ms": statistics.median(times) * 1e3, "peak_mib": (peak - base) / 1024,
                  "grad": grad, "exact_peak": exact}))
"""


def collect(repeats: int = 5, threads: int = 1, quick: bool = False,
            length: int = 100_000) -> dict:
    if quick:
        length = min(length, 20_000)
    loops = 1 if quick else 3
    runs = alternate(lambda lib: run_child(CHILD, lib, threads, length, loops), repeats)
    med = medians(runs)
    return {
        "title": f"deep chain: {length:,} multiplies on a one-element tensor + backward, "
                 f"{threads} thread(s), median of {repeats} processes",
        "rows": [row("deep_chain_time", f"deep chain {length:,}, forward+backward", "ms", med,
                     "time_ms"),
                 row("deep_chain_memory", f"deep chain {length:,}, peak RSS growth", "MiB", med,
                     "peak_mib")],
        "notes": ["deep chain x.grad: " + ", ".join(f"{lib} {m['grad']:.6g}"
                                                    for lib, m in med.items())],
        "runs": runs,
    }


def main() -> None:
    standalone(__doc__, collect, length=(int, 100_000, "multiplies in the chain"))


if __name__ == "__main__":
    main()
