"""NumPy's BLAS thread pool: ember's default of one thread, the user's environment,
``set_num_threads`` and DataLoader workers.

threadpoolctl is the witness: it asks the BLAS library itself. Defaults depend on the process's
start, so those tests run in fresh interpreters with a clean environment."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import ember
from ember import _threads
from ember.utils.data import DataLoader, Dataset

threadpoolctl = pytest.importorskip("threadpoolctl")

ROOT = Path(__file__).resolve().parent.parent
CPUS = _threads._cpu_count()
needs_two_cpus = pytest.mark.skipif(CPUS < 2, reason="BLAS caps its pool at the CPU count: "
                                    "one CPU cannot tell one thread from the default")


def _blas_threads() -> list[int]:
    """The pool size of every BLAS library loaded, as the libraries report it."""
    return [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]


if not _blas_threads():
    pytest.skip("NumPy's BLAS is not one threadpoolctl can see", allow_module_level=True)

# The witness run at the end of every child: ember's answer, and the libraries' own.
REPORT = """
import json, os, sys
sys.modules.pop("threadpoolctl", None)  # un-hide it where a test hid it
import threadpoolctl
ember_module = sys.modules.get("ember")
print(json.dumps({"blas": [i["num_threads"] for i in threadpoolctl.threadpool_info()
                           if i["user_api"] == "blas"],  # first: before ember's thread API runs
                  "ember": ember_module and ember_module.get_num_threads(),
                  "env": {k: v for k, v in os.environ.items() if k.endswith("_THREADS")}}))
"""


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _threads._USER_ENV}
    return {**env, **extra}


def _child(code: str, **env: str) -> dict:
    """Run ``code`` + ``REPORT`` in a fresh interpreter whose thread variables are only ``env``."""
    program = f"import sys; sys.path.insert(0, {str(ROOT)!r})\n" + textwrap.dedent(code) + REPORT
    done = subprocess.run([sys.executable, "-c", program], env=_clean_env(**env), cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- the default -----------------------------------------------------------------------------

def test_import_limits_blas_to_one_thread_and_leaves_the_environment_clean():
    out = _child("import ember; assert 'threadpoolctl' not in sys.modules")
    assert out["ember"] == 1 and set(out["blas"]) == {1}
    assert out["env"] == {}  # the variables set while NumPy loaded are gone: children see none


def test_default_needs_no_threadpoolctl_when_ember_loads_numpy():
    out = _child("""
        sys.modules["threadpoolctl"] = None  # not installed
        import ember
        reported = ember.get_num_threads()
        assert reported == 1, reported
    """)
    assert set(out["blas"]) == {1}


def test_numpy_imported_first_is_limited_through_threadpoolctl():
    out = _child("import numpy, ember")
    assert out["ember"] == 1 and set(out["blas"]) == {1}


@needs_two_cpus
def test_numpy_imported_first_without_threadpoolctl_reports_the_pool_numpy_started():
    # nothing can resize the pool then; get_num_threads must still tell the truth
    out = _child("""
        import numpy
        sys.modules["threadpoolctl"] = None
        import ember
        reported = ember.get_num_threads()
        assert reported > 1, reported  # NumPy's BLAS started with one thread per CPU
    """)
    assert out["blas"] == [out["ember"]]


# --- the user's choice -----------------------------------------------------------------------

@needs_two_cpus
@pytest.mark.parametrize("name", ["OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"])
def test_thread_variables_in_the_environment_are_respected(name):
    # the oracle: what NumPy alone does with the same environment (MKL_NUM_THREADS does not
    # size OpenBLAS, but it still tells ember to keep its hands off)
    alone = _child("import numpy", **{name: "2"})
    out = _child("import ember", **{name: "2"})
    assert out["blas"] == alone["blas"] and out["ember"] == max(out["blas"])
    assert out["env"] == {name: "2"}
    assert min(out["blas"]) >= 2  # not ember's default of 1


@needs_two_cpus
def test_set_num_threads_overrides_the_default_and_the_environment():
    out = _child("import ember; ember.set_num_threads(2)")
    assert out["ember"] == 2 and set(out["blas"]) == {2}
    out = _child("import ember; ember.set_num_threads(2)", OPENBLAS_NUM_THREADS="1")
    assert out["ember"] == 2 and set(out["blas"]) == {2}


def test_set_num_threads_without_threadpoolctl_warns_and_reports_the_real_pool():
    out = _child("""
        import warnings
        sys.modules["threadpoolctl"] = None
        import ember
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ember.set_num_threads(2)
            ember.set_num_threads(3)
        assert len(caught) == 1 and "pip install ember[threads]" in str(caught[0].message)
        assert ember.get_num_threads() == 1  # BLAS is unchanged, and ember says so
    """)
    assert set(out["blas"]) == {1}


# --- DataLoader workers ----------------------------------------------------------------------

class ThreadReport(Dataset):
    """Each sample: the worker's view of its BLAS pool, through ember and through the library."""

    def __getitem__(self, i):
        return {"ember": ember.get_num_threads(), "blas": max(_blas_threads())}

    def __len__(self) -> int:
        return 4


def _raise_to_two(worker_id: int) -> None:
    ember.set_num_threads(2)


@pytest.fixture
def parent_threads():
    """The test process at two BLAS threads, restored afterwards."""
    before = ember.get_num_threads()
    ember.set_num_threads(2)
    yield
    ember.set_num_threads(before)


@needs_two_cpus
@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_workers_run_one_blas_thread_while_the_parent_keeps_its_own(parent_threads, context):
    if context not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {context} start method here")
    loader = DataLoader(ThreadReport(), batch_size=None, num_workers=2,
                        multiprocessing_context=context)
    samples = list(loader)
    assert samples == [{"ember": 1, "blas": 1}] * 4
    assert ember.get_num_threads() == 2 and set(_blas_threads()) == {2}


@needs_two_cpus
def test_worker_init_fn_may_raise_the_workers_threads_again(parent_threads):
    loader = DataLoader(ThreadReport(), batch_size=None, num_workers=1,
                        worker_init_fn=_raise_to_two, multiprocessing_context="fork")
    assert list(loader) == [{"ember": 2, "blas": 2}] * 4
