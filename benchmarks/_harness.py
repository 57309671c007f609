"""Shared plumbing for the benchmark scripts (not a benchmark itself).

Every workload runs its child program in fresh interpreters, one per library and repeat,
alternating ember and torch so drift in machine load hits both alike, with threads pinned
(``OMP_NUM_THREADS`` and friends, plus ``torch.set_num_threads``). Each child prints one JSON
line of measurements; medians over the processes are reported as rows of
``{key, workload, unit, ember, torch, ratio}``.

Children can measure peak memory with ``peak_rss_baseline()`` and ``peak_rss_growth_mib()``
(defined in ``CHILD_PRELUDE``). ``EMBER_BENCH_LIBS=ember`` runs ember alone (a smoke test
without torch's import time; the ratios are then blank).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Callable, Iterable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The child programs start with this: pick the library from argv, pin torch's threads, and
# make ``import ember`` find this checkout rather than any installed copy.
CHILD_PRELUDE = r"""
import sys, time, json, statistics, importlib
import numpy as np
lib, threads, root = sys.argv[1], int(sys.argv[2]), sys.argv[3]
args = sys.argv[4:]
if lib == "torch":
    import torch
    torch.set_num_threads(threads)
else:
    sys.path.insert(0, root)
    import ember as torch

import gc, resource


def _status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])


def _trim_heap():
    # Hand the C heap's free pages back to the kernel, so that memory the allocator kept from
    # earlier steps (glibc's free lists; ember also raises glibc's trim and mmap thresholds, so
    # it keeps more) is not counted in the baseline and silently reused: the window then shows
    # the step's own peak working set, for both libraries alike. glibc only; else a no-op.
    import ctypes
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


# Collect garbage, trim the heap and start a peak-memory window; returns (base KiB, exact).
# Exact where the kernel lets /proc/self/clear_refs reset the peak-RSS mark (VmHWM); else the
# lifetime peak ru_maxrss stands in, and only growth beyond every earlier peak shows.
def peak_rss_baseline():
    gc.collect()
    _trim_heap()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, False
    return _status_kib("VmRSS"), True


# Peak resident set since peak_rss_baseline(), minus its baseline, in MiB.
def peak_rss_growth_mib(base_kib, exact):
    peak = _status_kib("VmHWM") if exact else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return (peak - base_kib) / 1024
"""


def libraries() -> list[str]:
    """ember always; torch when it is installed, unless ``EMBER_BENCH_LIBS=ember``."""
    if os.environ.get("EMBER_BENCH_LIBS", "").strip() == "ember":
        return ["ember"]
    return ["ember", "torch"] if importlib.util.find_spec("torch") else ["ember"]


def child_env(threads: int) -> dict[str, str]:
    n = str(threads)
    return dict(os.environ, OMP_NUM_THREADS=n, MKL_NUM_THREADS=n, OPENBLAS_NUM_THREADS=n,
                VECLIB_MAXIMUM_THREADS=n, NUMEXPR_NUM_THREADS=n)


def run_child(code: str, lib: str, threads: int, *args: object) -> dict:
    """Run ``CHILD_PRELUDE + code`` in a fresh interpreter; return its last stdout line as JSON."""
    done = subprocess.run([sys.executable, "-c", CHILD_PRELUDE + code, lib, str(threads), ROOT,
                           *map(str, args)], env=child_env(threads), capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{lib} child failed (exit {done.returncode}):\n"
                           + done.stderr.strip()[-2000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def alternate(measure: Callable[[str], dict], repeats: int) -> dict[str, list[dict]]:
    """``repeats`` fresh measurements per library, alternating between the libraries."""
    libs = libraries()
    runs: dict[str, list[dict]] = {lib: [] for lib in libs}
    for _ in range(repeats):
        for lib in libs:
            runs[lib].append(measure(lib))
    return runs


def medians(runs: dict[str, list[dict]]) -> dict[str, dict[str, float]]:
    return {lib: {k: statistics.median(r[k] for r in rs) for k in rs[0]}
            for lib, rs in runs.items()}


def row(key: str, workload: str, unit: str, med: dict, metric: str) -> dict:
    """One table row: the medians of ``metric`` for each library and their ratio."""
    e = med["ember"][metric]
    t = med["torch"][metric] if "torch" in med else None
    return {"key": key, "workload": workload, "unit": unit, "ember": e, "torch": t,
            "ratio": e / t if t else None}


def fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def print_rows(title: str, rows: Iterable[dict], notes: Iterable[str] = ()) -> None:
    print(title)
    print(f"{'workload':<42}{'ember':>10}{'torch':>10}{'ember/torch':>13}")
    for r in rows:
        print(f"{r['workload'] + ' (' + r['unit'] + ')':<42}{fmt(r['ember']):>10}"
              f"{fmt(r['torch']):>10}{fmt(r['ratio']):>13}")
    for note in notes:
        print(note)


def standalone(doc: str, collect: Callable[..., dict], **extra: tuple[type, object, str]) -> None:
    """The ``main()`` of a benchmark script: parse the common options (and ``extra`` ones, given
    as ``name=(type, default, help)``), run ``collect`` and print its table."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="fresh processes per library")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="a smaller, faster run")
    parser.add_argument("--json", help="also save the results to this file")
    for name, (kind, default, text) in extra.items():
        parser.add_argument("--" + name.replace("_", "-"), type=kind, default=default, help=text)
    args = parser.parse_args()
    options = {name: getattr(args, name) for name in extra}
    result = collect(repeats=args.repeats, threads=args.threads, quick=args.quick, **options)
    print_rows(result["title"], result["rows"], result.get("notes", ()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(result, threads=args.threads), f, indent=2)
