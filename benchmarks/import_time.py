"""Import time: wall time of a fresh interpreter running ``python -c "import ember"`` versus
``import torch``, with ``import numpy`` and a bare ``python -c pass`` as references.

Each command runs once untimed (to warm the file cache and write bytecode), then the commands run
in turn, several times each (``--repeats``, at least 5), from the repository root (so this
checkout's ember is the one imported), with threads pinned; the median wall time of each is
reported in ms. The times include the interpreter's own start-up; the bare ``pass`` shows how
much that is. Bytecode is cached as after an install (in ``benchmarks/results/pycache``, through
``PYTHONPYCACHEPREFIX``, so the source tree is left alone) even where the environment sets
``PYTHONDONTWRITEBYTECODE``; ember's import without any bytecode cache, compiling its sources
each time, is reported alongside.

Run:  python benchmarks/import_time.py [--repeats 5] [--threads 1] [--quick] [--json out.json]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

from _harness import ROOT, child_env, libraries, row, standalone

PYCACHE = os.path.join(ROOT, "benchmarks", "results", "pycache")


def import_env(threads: int, bytecode: bool = True) -> dict[str, str]:
    env = child_env(threads)
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = PYCACHE
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.pop("PYTHONPYCACHEPREFIX", None)
    return env


def wall_ms(statement: str, env: dict[str, str]) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", statement], cwd=ROOT, env=env, check=True,
                   capture_output=True)
    return (time.perf_counter() - t) * 1e3


def collect(repeats: int = 5, threads: int = 1, quick: bool = False) -> dict:
    n = 3 if quick else max(repeats, 5)
    # The check asserts the ember imported is this checkout's, not an installed copy.
    check = f"import ember, os; assert os.path.dirname(ember.__file__) == {ROOT + '/ember'!r}"
    cached, uncached = import_env(threads), import_env(threads, bytecode=False)
    subprocess.run([sys.executable, "-c", check], cwd=ROOT, env=cached, check=True)
    names = [*libraries(), "numpy", "pass"]
    statements = {name: "pass" if name == "pass" else f"import {name}" for name in names}
    for statement in statements.values():
        wall_ms(statement, cached)
    runs: dict[str, list[dict]] = {name: [] for name in [*names, "ember_uncached"]}
    for _ in range(n):
        for name, statement in statements.items():
            runs[name].append({"import_ms": wall_ms(statement, cached)})
        runs["ember_uncached"].append({"import_ms": wall_ms("import ember", uncached)})
    med = {name: {"import_ms": statistics.median(r["import_ms"] for r in rs)}
           for name, rs in runs.items()}
    return {
        "title": f"import time: fresh `python -c \"import ...\"`, wall, median of {n} runs",
        "rows": [row("import", "import, fresh interpreter", "ms", med, "import_ms")],
        "notes": [(f"import references: numpy alone {med['numpy']['import_ms']:.1f} ms, "
                  f"bare interpreter (`pass`) {med['pass']['import_ms']:.1f} ms; ember adds "
                  f"{med['ember']['import_ms'] - med['numpy']['import_ms']:.1f} ms over numpy; "
                  f"ember without bytecode cache {med['ember_uncached']['import_ms']:.1f} ms")],
        "runs": runs,
    }


def main() -> None:
    standalone(__doc__, collect)


if __name__ == "__main__":
    main()
