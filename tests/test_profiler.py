"""ember.profiler: exact call counts under torch's op names, record_function nesting, torch's
table layout, schedules, Chrome traces, and nothing left behind when the profiler stops."""

from __future__ import annotations

import json

import pytest

import ember
import ember.nn as enn
from ember.profiler import (
    ProfilerAction,
    ProfilerActivity,
    profile,
    record_function,
    schedule,
    tensorboard_trace_handler,
)


def counts(prof) -> dict:
    return {e.key: e.count for e in prof.key_averages()}


def test_calls_are_counted_exactly_under_torch_names():
    x = ember.randn(4, 4)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(3):
            y = x @ x
        ember.tanh(y).sum()
        y + 1
    c = counts(prof)
    assert c["aten::matmul"] == 3 and c["aten::mm"] == 3  # mm nested in matmul, as torch
    assert c["aten::tanh"] == 1 and c["aten::sum"] == 1 and c["aten::add"] == 1
    mm = next(e for e in prof.events() if e.name == "aten::mm")
    assert mm.cpu_parent.name == "aten::matmul"


def test_record_function_contains_the_ops_and_works_as_decorator():
    @record_function("decorated")
    def f(t):
        return t * 2

    x = ember.ones(3)
    with profile() as prof, record_function("label"):
        ember.exp(x)
        f(x)
    events = prof.events()
    label = next(e for e in events if e.name == "label")
    assert label.is_user_annotation
    assert [c.name for c in label.cpu_children] == ["aten::exp", "decorated"]
    assert label.cpu_children[1].cpu_children[0].name == "aten::mul"
    assert label.cpu_time_total >= sum(c.cpu_time_total for c in label.cpu_children)


def test_backward_nodes_and_nn_functional_are_timed():
    lin = enn.Linear(4, 2)
    x = ember.randn(3, 4)
    with profile() as prof:
        ember.nn.functional.relu(lin(x)).sum().backward()
    c = counts(prof)
    assert c["aten::linear"] == 1 and c["aten::relu"] == 1
    assert any(k.startswith("autograd::engine::evaluate_function: ") for k in c)


def test_table_has_torch_columns():
    x = ember.randn(3, 3)
    with profile(record_shapes=True) as prof:
        ember.mm(x, x)
    table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=10)
    lines = table.splitlines()
    assert lines[0].startswith("-") and lines[2].startswith("-")
    assert lines[1].split("  ") and [h.strip() for h in lines[1].split("  ") if h.strip()] == [
        "Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
        "# of Calls"]
    assert "aten::mm" in lines[3] and lines[3].rstrip().endswith("1")
    assert lines[-1].startswith("Self CPU time total: ")
    shaped = prof.key_averages(group_by_input_shape=True).table()
    assert "Input Shapes" in shaped and "[[3, 3], [3, 3]]" in shaped


def test_table_matches_torch_layout():
    torch = pytest.importorskip("torch")

    def layout(T, prof_mod):
        x = T.randn(3, 3)
        with prof_mod.profile(record_shapes=True) as prof:
            T.mm(x, x)
        rows = prof.key_averages().table().splitlines()
        name_width = len(rows[0].split("  ")[0])  # the longest name decides it
        assert rows[1][:name_width].lstrip() == "Name"  # right-aligned
        # the other columns, the separators and the footer, character for character
        return [r[name_width:] for r in rows[:3]], rows[-1].split(":")[0]

    assert layout(ember, ember.profiler) == layout(torch, torch.profiler)


def test_schedule_records_active_steps_only():
    seen = []
    sched = schedule(wait=1, warmup=1, active=2, repeat=1)
    assert [sched(i) for i in range(5)] == [
        ProfilerAction.NONE, ProfilerAction.WARMUP, ProfilerAction.RECORD,
        ProfilerAction.RECORD_AND_SAVE, ProfilerAction.NONE]
    x = ember.ones(2)
    with profile(schedule=sched, on_trace_ready=lambda p: seen.append(counts(p))) as prof:
        for _ in range(6):
            ember.exp(x)
            prof.step()
    assert len(seen) == 1
    assert seen[0]["aten::exp"] == 2
    assert seen[0]["ProfilerStep#2"] == 1 and seen[0]["ProfilerStep#3"] == 1


def test_chrome_trace_is_valid_json(tmp_path):
    x = ember.ones(2)
    with profile() as prof, record_function("outer"):
        ember.sin(x)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    names = {e["name"] for e in events}
    assert {"outer", "aten::sin"} <= names
    assert all(e["ph"] == "X" and e["dur"] >= 0 for e in events)


def test_originals_are_restored_and_nothing_recorded_after():
    before = (ember.mm, ember.Tensor.__matmul__, ember.Tensor.add_, ember.Tensor.__iadd__)
    with profile():
        assert ember.mm is not before[0]
    after = (ember.mm, ember.Tensor.__matmul__, ember.Tensor.add_, ember.Tensor.__iadd__)
    assert all(a is b for a, b in zip(before, after))
    with record_function("idle"):  # no profiler: a no-op
        ember.mm(ember.ones(2, 2), ember.ones(2, 2))


def test_exception_inside_profile_restores():
    before = ember.exp
    with pytest.raises(ValueError), profile():
        raise ValueError
    assert ember.exp is before


def test_profile_memory_column_and_nesting_error():
    with profile(profile_memory=True) as prof:
        ember.zeros(256) * 2
        with pytest.raises(RuntimeError, match="already enabled"), profile():
            pass
    assert "Self CPU Mem" in prof.key_averages().table()
    mul = next(e for e in prof.events() if e.name == "aten::mul")
    assert mul.cpu_memory_usage == 1024


def test_tensorboard_handler_is_not_supported():
    with pytest.raises(NotImplementedError, match="export_chrome_trace"):
        tensorboard_trace_handler("./log")


def test_legacy_autograd_profiler_names():
    from ember.profiler import _legacy  # ember.autograd.profiler once wired (see docs)
    x = ember.ones(3, 3)
    with _legacy.profile(record_shapes=True) as prof, _legacy.record_function("legacy"):
        ember.mm(x, x)
    assert {e.key: e.count for e in prof.key_averages()} == {"legacy": 1, "aten::mm": 1}
    assert "aten::mm" in prof.table(sort_by="self_cpu_time_total")
    with _legacy.profile(enabled=False) as off:
        ember.mm(x, x)
    with pytest.raises(RuntimeError, match="didn't finish"):
        off.key_averages()
