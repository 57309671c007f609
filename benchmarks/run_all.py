"""Run every benchmark workload and print one table against the performance targets.

Workloads (each also runnable alone, see its docstring): op overhead (``overhead.py``), the
seed two-layer net (``two_layer.py``), MLP (``mlp.py``), CNN (``cnn.py``), deep chain
(``deep_chain.py``), import time (``import_time.py``) and LSTM (``lstm.py``). ember and torch run
in fresh processes, alternating, with threads pinned (``OMP_NUM_THREADS`` and friends, and
``torch.set_num_threads``); the table shows medians, the ember/torch ratio, the target (a
ratio, from ``TARGETS``), whether it is met (yes/no) and by what margin, then a line
"N of M targets met". The results are saved as JSON in ``benchmarks/results/<date-time>.json``
(git-ignored), and each row's change against the latest saved run of the same kind (quick or
full, same threads; or ``--compare FILE``) is printed.

The workloads in ``COMPILED`` also run their step wrapped in ``torch.compile`` (each script's
``--compile``): ember's compiled time over *eager* torch's, with torch's compiled time as
context where ``torch.compile`` works here; ``--no-compile`` leaves them out and
``--no-torch-compile`` skips the torch-compiled context.

Run:  python benchmarks/run_all.py [--threads 1] [--repeats 5] [--quick] [--only NAME ...]
                                   [--no-compile] [--no-torch-compile] [--compare FILE]
                                   [--no-save] [--markdown]
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import os
import platform
import subprocess
import sys
import time
import traceback

import cnn
import deep_chain
import import_time
import lstm
import mlp
import overhead
import two_layer
from _harness import fmt, libraries, torch_compile_unavailable

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")

WORKLOADS = {
    "overhead": overhead.collect,
    "two_layer": two_layer.collect,
    "mlp": mlp.collect,
    "cnn": cnn.collect,
    "deep_chain": deep_chain.collect,
    "import": import_time.collect,
    "lstm": lstm.collect,
}
# The workloads with a compiled variant (their ``collect`` takes ``compile``).
COMPILED = ("overhead", "two_layer", "mlp", "cnn", "lstm")

# The performance issue's targets, all as ember/torch ratios (ember's time or memory over
# torch's, lower is better): a row meets its target when its ratio is at most the limit. Rows
# without a target are shown for context.
TARGETS = {
    "overhead_fwd": 1.0,
    "overhead_fwd_bwd": 0.9,
    "two_layer": 0.85,
    "mlp_train": 1.0,
    "mlp_train_memory": 1.0,
    "cnn_train": 1.0,
    "lstm_train": 1.0,
    "lstm_forward": 1.0,
    "lstm_train_memory": 1.0,
    "deep_chain_time": 1.0,
    "deep_chain_memory": 0.8,
    "import": 0.07,
    # the step wrapped in ember.compile (replays), over eager torch's time
    "overhead_fwd_bwd_compiled": 0.3,
    "lstm_train_compiled": 0.5,
    "two_layer_compiled": 0.7,
    "mlp_train_compiled": 0.9,
    "cnn_train_compiled": 0.9,
}


def judge(row: dict) -> None:
    """Add ``target`` (text), ``target_ratio``, ``met`` and ``margin`` (how far over or under
    the limit, as a fraction); ``met`` is None where there is no target or no ratio."""
    limit = TARGETS.get(row["key"])
    ratio = row["ratio"]
    row["target"] = None if limit is None else f"<= {limit:g}"
    row["target_ratio"] = limit
    row["met"] = None if limit is None or ratio is None else ratio <= limit
    row["margin"] = None if row["met"] is None else ratio / limit - 1.0


def summarize(rows: list[dict], workloads: list[str], compiled: bool = True) -> dict:
    """How many targets were met, out of those measured; and the targets of the workloads run
    that have no verdict (the workload failed, or torch is missing). The compiled rows' targets
    are expected only when ``compiled``."""
    judged = [r for r in rows if r["met"] is not None]
    verdicts = {r["key"] for r in judged}
    # Row keys are named after their workload: ``mlp`` gives ``mlp_train``, ``import`` ``import``.
    expected = [k for k in TARGETS
                if any(k == name or k.startswith(name + "_") for name in workloads)
                and (compiled or not k.endswith("_compiled"))]
    return {"met": sum(r["met"] for r in judged), "measured": len(judged),
            "not_measured": [k for k in expected if k not in verdicts]}


def summary_line(summary: dict) -> str:
    line = f"{summary['met']} of {summary['measured']} targets met"
    if summary["not_measured"]:
        missing = summary["not_measured"]
        line += f" ({len(missing)} not measured: {', '.join(missing)})"
    return line


def versions() -> dict:
    info = {"python": platform.python_version(), "machine": platform.machine(),
            "processor": _cpu_name(), "cpus": os.cpu_count()}
    for name in ("numpy", "torch"):
        try:
            info[name] = __import__(name).__version__
        except ImportError:
            info[name] = None
    return info


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def previous_results(compare: str | None, current: str | None, quick: bool,
                     threads: int) -> str | None:
    """``compare`` if given, else the latest saved run of the same kind (quick or full, same
    threads), so that like is compared with like."""
    if compare:
        return compare
    files = sorted(f for f in glob.glob(os.path.join(RESULTS, "*.json")) if f != current)
    for path in reversed(files):
        try:
            with open(path) as f:
                old = json.load(f)
        except (OSError, ValueError):
            continue
        if old.get("quick") == quick and old.get("threads") == threads:
            return path
    return None


def _met(row: dict) -> str:
    if row["target"] is None:
        return "-"
    return "?" if row["met"] is None else ("yes" if row["met"] else "no")


def _margin(row: dict) -> str:
    return "-" if row["margin"] is None else f"{row['margin']:+.0%}"


def print_table(rows: list[dict]) -> None:
    print(f"{'workload':<56}{'ember':>10}{'torch':>10}{'ember/torch':>13}{'target':>10}"
          f"{'met':>5}{'margin':>8}{'torch.compile':>15}")
    for r in rows:
        print(f"{r['workload'] + ' (' + r['unit'] + ')':<56}{fmt(r['ember']):>10}"
              f"{fmt(r['torch']):>10}{fmt(r['ratio']):>13}{r['target'] or '-':>10}"
              f"{_met(r):>5}{_margin(r):>8}{fmt(r.get('torch_compiled')):>15}")


def markdown_table(rows: list[dict], summary: dict | None = None) -> str:
    lines = ["| workload | ember | torch | ember/torch | target | met | margin | torch.compile |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        met = {"no": "**no**", "-": "—"}.get(_met(r), _met(r))
        margin = "—" if r["margin"] is None else _margin(r)
        compiled = r.get("torch_compiled")
        lines.append(f"| {r['workload']} ({r['unit']}) | {fmt(r['ember'])} | {fmt(r['torch'])} | "
                     f"{fmt(r['ratio'])} | {r['target'] or '—'} | {met} | {margin} | "
                     f"{'—' if compiled is None else fmt(compiled)} |")
    if summary is not None:
        lines += ["", summary_line(summary) + "."]
    return "\n".join(lines)


def print_changes(rows: list[dict], path: str) -> None:
    with open(path) as f:
        old = json.load(f)
    before = {r["key"]: r for r in old.get("rows", [])}
    mode = "quick" if old.get("quick") else "full"
    print(f"\nchange vs {os.path.relpath(path)} ({old.get('date', '?')}, {mode} run, "
          f"{old.get('threads', '?')} thread(s)):")
    print(f"{'workload':<46}{'ember':>10}{'torch':>10}{'ratio then':>12}{'ratio now':>11}")
    for r in rows:
        b = before.get(r["key"])
        if b is None or not b.get("ember") or r["ember"] is None:
            print(f"{r['workload']:<46}{'(new)':>10}")
            continue
        ember = f"{r['ember'] / b['ember'] - 1.0:+.1%}"
        torch = f"{r['torch'] / b['torch'] - 1.0:+.1%}" if r["torch"] and b.get("torch") else "-"
        print(f"{r['workload']:<46}{ember:>10}{torch:>10}{fmt(b.get('ratio')):>12}"
              f"{fmt(r['ratio']):>11}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="threads for both libraries")
    parser.add_argument("--repeats", type=int, default=None,
                        help="fresh processes per library and workload (default 5, quick 1)")
    parser.add_argument("--quick", action="store_true",
                        help="one process per library and shorter workloads: a smoke test")
    parser.add_argument("--only", nargs="+", choices=list(WORKLOADS), help="run only these")
    parser.add_argument("--no-compile", action="store_true",
                        help="leave out the compiled variants (the rows ending in 'compiled')")
    parser.add_argument("--no-torch-compile", action="store_true",
                        help="skip torch.compile's context figures (it takes seconds to "
                             "compile in every process)")
    parser.add_argument("--compare", help="results JSON to compare with (default: the latest "
                                          "of the same kind in benchmarks/results/)")
    parser.add_argument("--no-save", action="store_true", help="do not write a results file")
    parser.add_argument("--markdown", action="store_true",
                        help="also print the table in Markdown (for benchmarks/README.md)")
    args = parser.parse_args()
    if args.no_torch_compile:
        os.environ["EMBER_BENCH_TORCH_COMPILE"] = "0"
    repeats = args.repeats if args.repeats is not None else (1 if args.quick else 5)
    started = datetime.datetime.now()
    print(f"ember benchmark suite, {started:%Y-%m-%d %H:%M}, {args.threads} thread(s), "
          f"{repeats} process(es) per library and workload{', quick' if args.quick else ''}")

    rows: list[dict] = []
    details: dict[str, dict] = {}
    errors: dict[str, str] = {}
    for name in args.only or WORKLOADS:
        t = time.perf_counter()
        options = {"compile": not args.no_compile} if name in COMPILED else {}
        try:
            result = WORKLOADS[name](repeats=repeats, threads=args.threads, quick=args.quick,
                                     **options)
        # Keep going: one broken workload (a failing child process) should not hide the others.
        except (RuntimeError, OSError, ValueError, KeyError, subprocess.CalledProcessError):
            errors[name] = traceback.format_exc()
            tail = "\n".join(errors[name].rstrip().splitlines()[-12:])
            print(f"  {name}: FAILED\n{tail}", file=sys.stderr)
            continue
        print(f"  {name}: {time.perf_counter() - t:.0f} s")
        details[name] = result
        for r in result["rows"]:
            judge(r)
            rows.append(r)

    summary = summarize(rows, list(args.only or WORKLOADS), compiled=not args.no_compile)
    print()
    print_table(rows)
    print(summary_line(summary))
    for result in details.values():
        for note in result.get("notes", ()):
            print(note)
    if errors:
        print("failed workloads: " + ", ".join(errors))
    if args.markdown:
        print("\n" + markdown_table(rows, summary))

    path = None
    if not args.no_save:
        os.makedirs(RESULTS, exist_ok=True)
        path = os.path.join(RESULTS, f"{started:%Y%m%d-%H%M%S}.json")
    previous = previous_results(args.compare, path, args.quick, args.threads)
    if path:
        record = {"date": started.isoformat(timespec="seconds"), "threads": args.threads,
                  "repeats": repeats, "quick": args.quick, "compile": not args.no_compile,
                  "torch_compile": (torch_compile_unavailable() or "available")
                  if not args.no_compile and "torch" in libraries() else None,
                  "versions": versions(),
                  "rows": rows, "errors": errors, "summary": summary,
                  "details": {name: {k: v for k, v in r.items() if k != "rows"}
                              for name, r in details.items()}}
        with open(path, "w") as f:
            json.dump(record, f, indent=2)
        print(f"\nsaved {os.path.relpath(path)}")
    if previous:
        print_changes(rows, previous)


if __name__ == "__main__":
    main()
