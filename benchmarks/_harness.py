"""Shared plumbing for the benchmark scripts (not a benchmark itself).

Every workload runs its child program in fresh interpreters, one per library and repeat,
alternating ember and torch so drift in machine load hits both alike, with threads pinned
(``OMP_NUM_THREADS`` and friends, plus ``torch.set_num_threads``). Each child prints one JSON
line of measurements; medians over the processes are reported as rows of
``{key, workload, unit, ember, torch, ratio}``.

Children can measure peak memory with ``peak_rss_baseline()`` and ``peak_rss_growth_mib()``
(defined in ``CHILD_PRELUDE``). ``EMBER_BENCH_LIBS=ember`` runs ember alone (a smoke test
without torch's import time; the ratios are then blank).

Compiled variants: ``alternate(..., compiled=True)`` also runs each child as ``ember_compiled``
and ``torch_compiled`` (the latter where ``torch.compile`` works here, see
``torch_compile_unavailable``). The child sees ``lib`` ("ember" or "torch") and ``compiled``,
wraps its step in ``compile_step``, warms up with ``warm_up`` and checks with ``check_replays``
that ember replayed every timed call. A compiled row compares ember-compiled with *eager* torch
(``compiled_row``); torch's compiled figure rides along as ``torch_compiled``, for context.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import os
import re
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
variant, threads, root = sys.argv[1], int(sys.argv[2]), sys.argv[3]
lib, compiled = variant.split("_")[0], variant.endswith("_compiled")
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


# The step as this variant runs it: wrapped in torch.compile (default backend) when compiled.
def compile_step(step):
    return torch.compile(step) if compiled else step


# The best of 3 timed loops of fn(), in µs a call: each loop as many calls as fill ``budget``
# seconds (from one call timed after a first, warm-up one), at least 2.
def best_of(fn, budget):
    fn()
    start = time.perf_counter()
    fn()
    loops = max(2, int(budget / max(time.perf_counter() - start, 1e-7)))
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(loops):
            fn()
        best = min(best, (time.perf_counter() - start) / loops)
    return best * 1e6


# Warm-up: call(i) for i < n, each call timed. Compiled, n >= 3 makes the timed calls replays:
# ember traces call 1 as it runs it eagerly (looking for graph breaks), captures call 2 and
# replays from call 3; torch compiles at call 1. Returns the compiled variant's figures (empty
# when eager): the latencies of calls 1-3, capture_call_ms (the call that compiles: ember's
# call 2, torch's call 1), and ember's capture time (all calls) and kernel count from its stats.
def warm_up(call, n, step):
    if compiled and n < 3:
        raise ValueError(f"a compiled step needs at least 3 warm-up calls, got {n}")
    times = []
    for i in range(n):
        t = time.perf_counter()
        call(i)
        times.append((time.perf_counter() - t) * 1e3)
    if not compiled:
        return {}
    out = {"call1_ms": times[0], "call2_ms": times[1], "call3_ms": times[2]}
    if lib == "torch":
        return dict(out, capture_call_ms=times[0])
    stats = step.stats
    return dict(out, capture_call_ms=times[1], capture_ms=stats.capture_seconds * 1e3,
                kernels=stats.kernels)


# Fail loudly unless ember's compiled step ran its first call eagerly, captured its second and
# replayed every other one of its `calls` calls (so every timed call was a replay).
def check_replays(step, calls):
    if not compiled or lib != "ember":
        return
    stats = step.stats
    if (stats.eager_calls, stats.captures, stats.replays) != (1, 1, calls - 2):
        raise SystemExit(f"ember.compile did not replay the timed calls: {calls} calls gave "
                         f"{stats}; graph breaks: {getattr(step, 'breaks', '?')}")
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


@functools.cache
def torch_compile_unavailable() -> str | None:
    """Why ``torch.compile`` (default backend, inductor on CPU: it needs a C compiler) cannot
    give the torch-compiled context figures here, or None when a tiny compiled function runs in
    a child process. ``EMBER_BENCH_TORCH_COMPILE=0`` skips them."""
    if os.environ.get("EMBER_BENCH_TORCH_COMPILE", "").strip() == "0":
        return "skipped (EMBER_BENCH_TORCH_COMPILE=0)"
    code = ("import torch\n"
            "x = torch.ones(3)\n"
            "assert torch.allclose(torch.compile(lambda x: x.sin() * 2)(x), x.sin() * 2)\n")
    try:
        done = subprocess.run([sys.executable, "-c", code], env=child_env(1),
                              capture_output=True, text=True, timeout=600, check=False)
    except subprocess.TimeoutExpired:
        return "torch.compile of a tiny function took over 10 minutes"
    return None if done.returncode == 0 else error_line(done.stderr, done.returncode)


def error_line(stderr: str, code: int | None = None) -> str:
    """The exception line of a child's traceback (torch's dynamo adds hints after it)."""
    lines = stderr.strip().splitlines()
    errors = [ln for ln in lines if re.match(r"[A-Za-z_][\w.]*(Error|Exception|Exit)\b", ln)]
    return (errors or lines or [f"exit {code}"])[-1]


def variants(compiled: bool) -> list[str]:
    """The libraries, then (``compiled``) their compiled variants: ``ember_compiled`` always,
    ``torch_compiled`` where torch runs and ``torch.compile`` works."""
    libs = libraries()
    if not compiled:
        return libs
    extra = ["ember_compiled"]
    if "torch" in libs and torch_compile_unavailable() is None:
        extra.append("torch_compiled")
    return libs + extra


def alternate(measure: Callable[[str], dict], repeats: int,
              compiled: bool = False) -> dict[str, list[dict]]:
    """``repeats`` fresh measurements per variant (see ``variants``), alternating between them.
    A failing ``torch_compiled`` child (context only) drops that variant, with the reason in
    ``runs["torch_compiled_error"]``; any other failure propagates."""
    runs: dict[str, list] = {v: [] for v in variants(compiled)}
    for _ in range(repeats):
        for v in list(runs):
            if v == "torch_compiled_error":
                continue
            try:
                runs[v].append(measure(v))
            except RuntimeError as e:
                if v != "torch_compiled":
                    raise
                del runs[v]
                runs["torch_compiled_error"] = [error_line(str(e))]
    return runs


def medians(runs: dict[str, list[dict]]) -> dict[str, dict[str, float]]:
    return {lib: {k: statistics.median(r[k] for r in rs) for k in rs[0]}
            for lib, rs in runs.items() if not lib.endswith("_error")}


def row(key: str, workload: str, unit: str, med: dict, metric: str) -> dict:
    """One table row: the medians of ``metric`` for each library and their ratio."""
    e = med["ember"][metric]
    t = med["torch"][metric] if "torch" in med else None
    return {"key": key, "workload": workload, "unit": unit, "ember": e, "torch": t,
            "ratio": e / t if t else None, "torch_compiled": None}


def compiled_row(key: str, workload: str, unit: str, med: dict, metric: str,
                 against: str | None = "torch") -> dict:
    """A compiled variant's row: ember-compiled's median of ``metric`` over eager torch's (the
    ``against`` variant's; None for no ratio), with torch-compiled's median as context."""
    e = med["ember_compiled"][metric]
    t = med[against][metric] if against in med else None
    tc = med.get("torch_compiled", {}).get(metric)  # None for ember's own figures
    return {"key": key, "workload": workload, "unit": unit, "ember": e, "torch": t,
            "ratio": e / t if t else None, "torch_compiled": tc}


def compiled_notes(name: str, runs: dict[str, list], med: dict) -> list[str]:
    """One line on what compiling cost: ember's kernel count and its calls 1-3 (eager and
    traced, capture, replay), torch.compile's calls 1-3, or why torch.compile is missing."""
    if "ember_compiled" not in med:
        return []
    m = med["ember_compiled"]
    line = (f"{name}, compiled: ember {m['kernels']:.0f} kernels, calls 1-3 "
            f"{m['call1_ms']:.1f} / {m['call2_ms']:.1f} / {m['call3_ms']:.1f} ms")
    if "torch_compiled" in med:
        t = med["torch_compiled"]
        line += (f"; torch.compile calls 1-3 {t['call1_ms']:.1f} / {t['call2_ms']:.1f} / "
                 f"{t['call3_ms']:.1f} ms")
    elif "torch_compiled_error" in runs:
        line += f"; torch.compile failed: {runs['torch_compiled_error'][0]}"
    elif "torch" in med:
        line += f"; torch.compile not available: {torch_compile_unavailable()}"
    return [line]


def capture_rows(prefix: str, label: str, med: dict) -> list[dict]:
    """The compiled variant's first-call rows (no targets, no ratio): ember's capture time
    (``stats.capture_seconds``: tracing call 1 and capturing call 2) and the latency of the
    call that captures, beside torch.compile's compiling first call."""
    if "ember_compiled" not in med:
        return []
    return [compiled_row(prefix + "_capture_time", label + ", compiled: capture time", "ms",
                         med, "capture_ms", against=None),
            compiled_row(prefix + "_capture_call", label + ", compiled: capture call", "ms",
                         med, "capture_call_ms", against=None)]


def fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def print_rows(title: str, rows: Iterable[dict], notes: Iterable[str] = ()) -> None:
    print(title)
    print(f"{'workload':<52}{'ember':>10}{'torch':>10}{'ember/torch':>13}{'torch.compile':>15}")
    for r in rows:
        print(f"{r['workload'] + ' (' + r['unit'] + ')':<52}{fmt(r['ember']):>10}"
              f"{fmt(r['torch']):>10}{fmt(r['ratio']):>13}{fmt(r.get('torch_compiled')):>15}")
    for note in notes:
        print(note)


def standalone(doc: str, collect: Callable[..., dict], compiles: bool = False,
               **extra: tuple[type, object, str]) -> None:
    """The ``main()`` of a benchmark script: parse the common options (and ``extra`` ones, given
    as ``name=(type, default, help)``; ``--compile`` where ``compiles``), run ``collect`` and
    print its table."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="fresh processes per library")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="a smaller, faster run")
    parser.add_argument("--json", help="also save the results to this file")
    if compiles:
        parser.add_argument("--compile", action="store_true",
                            help="also run the step wrapped in torch.compile (ember's, and "
                                 "torch's where it works) and add the compiled rows")
    for name, (kind, default, text) in extra.items():
        parser.add_argument("--" + name.replace("_", "-"), type=kind, default=default, help=text)
    args = parser.parse_args()
    options = {name: getattr(args, name) for name in extra}
    if compiles:
        options["compile"] = args.compile
    result = collect(repeats=args.repeats, threads=args.threads, quick=args.quick, **options)
    print_rows(result["title"], result["rows"], result.get("notes", ()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(result, threads=args.threads), f, indent=2)
