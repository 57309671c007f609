"""The benchmark suite (benchmarks/): each workload runs in its smallest mode with ember alone
(with its compiled variant where it has one), and run_all judges rows against its targets and
counts them as the README says."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))  # the scripts import ``_harness`` as a top-level module

run_all = importlib.import_module("run_all")

# Each workload's smallest run: quick mode, one process, and its size option turned down
# further where it has one, so that the whole file takes seconds.
SMALLEST = {
    "overhead": {},
    "two_layer": {"steps": 5},
    "mlp": {"steps": 2},
    "cnn": {"steps": 2},
    "deep_chain": {"length": 2000},
    "import": {},
    "lstm": {"steps": 2},
}


def test_every_workload_has_a_smallest_mode():
    assert set(SMALLEST) == set(run_all.WORKLOADS)


def test_every_compiled_target_names_a_workload_with_a_compiled_variant():
    compiled = [k for k in run_all.TARGETS if k.endswith("_compiled")]
    assert len(compiled) == 5
    for key in compiled:
        assert any(key.startswith(name + "_") for name in run_all.COMPILED), key


@pytest.mark.parametrize("name", list(SMALLEST))
def test_workload_runs_with_ember_alone(name, monkeypatch):
    monkeypatch.setenv("EMBER_BENCH_LIBS", "ember")
    # compiled, the child fails unless ember replayed every timed call
    options = {"compile": True} if name in run_all.COMPILED else {}
    result = run_all.WORKLOADS[name](repeats=1, threads=1, quick=True, **SMALLEST[name],
                                     **options)
    assert result["rows"], name
    for row in result["rows"]:
        assert row["ember"] is not None and row["ember"] >= 0, row
        assert row["torch"] is None and row["ratio"] is None, row
        run_all.judge(row)
        # A target with no torch figure to compare against is unjudged, not met or missed.
        assert row["met"] is None, row
    # Every target of this workload names one of its rows (a renamed row would drop it silently).
    keys = {row["key"] for row in result["rows"]}
    assert set(run_all.summarize(result["rows"], [name])["not_measured"]) <= keys
    if options:
        assert {name + "_capture_time", name + "_capture_call"} <= keys
        assert any(key.endswith("_compiled") for key in keys)


@pytest.mark.parametrize("script, options", [
    ("linear", {}),
    ("ops", {"only": ["softmax", "embedding", "topk"]}),
    ("optim_step", {"steps": 2}),
    ("floors", {}),
], ids=["linear", "ops", "optim_step", "floors"])
def test_sweep_runs_with_ember_alone(script, options, monkeypatch):
    """The sweeps outside run_all (no targets): one row per case, each with ember's figure."""
    monkeypatch.setenv("EMBER_BENCH_LIBS", "ember")
    module = importlib.import_module(script)
    result = module.collect(repeats=1, threads=1, quick=True, **options)
    assert result["rows"]
    for row in result["rows"]:
        assert row["ember"] is not None and row["ember"] > 0, row
        assert row["torch"] is None and row["ratio"] is None, row
    if script == "ops":
        assert {row["key"] for row in result["rows"]} == {
            f"{name}_{kind}" for name in options["only"] for kind in ("forward", "train")}


def _row(key: str, ratio: float | None) -> dict:
    return {"key": key, "workload": key, "unit": "ms", "ember": 1.0,
            "torch": None if ratio is None else 1.0 / ratio, "ratio": ratio}


@pytest.mark.parametrize("ratio, met", [(0.85, True), (0.84, True), (0.86, False), (None, None)])
def test_judge_meets_a_target_at_or_under_its_ratio(ratio, met):
    row = _row("two_layer", ratio)
    run_all.judge(row)
    assert (row["target"], row["target_ratio"], row["met"]) == ("<= 0.85", 0.85, met)


def test_judge_leaves_rows_without_a_target_unjudged():
    row = _row("mlp_forward", 2.0)
    run_all.judge(row)
    assert (row["target"], row["met"], row["margin"]) == (None, None, None)


def test_summary_counts_met_targets_and_names_the_unmeasured():
    rows = [_row("mlp_train", 0.9), _row("mlp_forward", 3.0), _row("mlp_train_memory", 1.2),
            _row("lstm_train", None)]
    for row in rows:
        run_all.judge(row)
    summary = run_all.summarize(rows, ["mlp", "lstm"], compiled=False)
    assert (summary["met"], summary["measured"]) == (1, 2)
    assert summary["not_measured"] == ["lstm_train", "lstm_forward", "lstm_train_memory"]
    assert run_all.summary_line(summary).startswith("1 of 2 targets met (3 not measured: ")
    table = run_all.markdown_table(rows, summary)
    assert "| mlp_train (ms) | 1.00 | 1.11 | 0.90 | <= 1 | yes | -10% | — |" in table
    assert table.endswith("1 of 2 targets met (3 not measured: lstm_train, lstm_forward, "
                          "lstm_train_memory).")


def test_summary_expects_compiled_targets_only_when_compiled_variants_ran():
    rows = [_row("mlp_train", 0.9)]
    run_all.judge(rows[0])
    assert "mlp_train_compiled" in run_all.summarize(rows, ["mlp"])["not_measured"]
    assert "mlp_train_compiled" not in run_all.summarize(rows, ["mlp"],
                                                         compiled=False)["not_measured"]


def test_compiled_row_compares_with_eager_torch_and_shows_torch_compiled():
    harness = importlib.import_module("_harness")
    med = {"ember": {"ms": 4.0}, "torch": {"ms": 5.0}, "ember_compiled": {"ms": 2.0},
           "torch_compiled": {"ms": 3.0}}
    row = harness.compiled_row("mlp_train_compiled", "MLP, compiled", "ms", med, "ms")
    assert (row["ember"], row["torch"], row["ratio"], row["torch_compiled"]) == (2.0, 5.0, 0.4,
                                                                              3.0)
    run_all.judge(row)
    assert "| MLP, compiled (ms) | 2.00 | 5.00 | 0.40 | <= 0.9 | yes | -56% | 3.00 |" in \
        run_all.markdown_table([row])
