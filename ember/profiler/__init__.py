"""``ember.profiler``: torch.profiler's API over ember's ops (CPU only).

``profile`` times every op call while it records and summarizes them as torch does
(``key_averages().table()``, ``export_chrome_trace``); op names follow torch's (``aten::mm``,
``aten::add``), backward nodes appear as ``autograd::engine::evaluate_function: MmBackward0``.
It costs nothing when no profiler runs: the timed wrappers exist only while one records
(``_patch.py`` says which calls are seen). Loaded on first use of ``ember.profiler``.
"""

from __future__ import annotations

import enum
import functools
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from ._events import EventList, FunctionEvent, FunctionEventAvg
from ._patch import Patches, Recorder, state

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "ProfilerAction",
           "ProfilerActivity", "profile", "record_function", "schedule",
           "supported_activities", "tensorboard_trace_handler"]


class ProfilerActivity(enum.Enum):
    """torch's activities; ember records CPU only (the others are accepted and ignored)."""

    CPU = 0
    XPU = 1
    CUDA = 2
    HPU = 3
    MTIA = 4
    PrivateUse1 = 5


class ProfilerAction(enum.Enum):
    """What a ``schedule`` says the profiler does at a step."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities() -> set:
    return {ProfilerActivity.CPU}


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:
    """``torch.profiler.schedule``: skip ``skip_first`` steps, then cycles of ``wait`` idle,
    ``warmup`` and ``active`` recorded steps, ``repeat`` times (0: until the end)."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} "
            f"(need >= 0), active={active} (need > 0), repeat={repeat} (need >= 0), "
            f"skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results",
                      stacklevel=2)

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return (ProfilerAction.RECORD if mod_step < num_steps - 1
                else ProfilerAction.RECORD_AND_SAVE)

    return schedule_fn


def _always_record(step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


_RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)


class profile:
    """``torch.profiler.profile``: a context manager that records ember's op calls.

    With a ``schedule``, call ``prof.step()`` once per iteration: steps are recorded as the
    schedule says, each inside a ``ProfilerStep#<n>`` range, and ``on_trace_ready(prof)`` runs
    at the end of each active cycle (without one, at exit).
    """

    def __init__(self, *, activities: Iterable[ProfilerActivity] | None = None,
                 schedule: Callable[[int], ProfilerAction] | None = None,
                 on_trace_ready: Callable[[profile], Any] | None = None,
                 record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_flops: bool = False, with_modules: bool = False,
                 experimental_config=None, execution_trace_observer=None,
                 acc_events: bool = False, use_cuda: bool | None = None,
                 custom_trace_id_callback=None) -> None:
        self.activities = set(activities) if activities is not None else supported_activities()
        self.schedule = schedule or _always_record
        self._has_schedule = schedule is not None
        self.on_trace_ready = on_trace_ready
        self.record_shapes, self.profile_memory = record_shapes, profile_memory
        self.with_stack = with_stack
        self.acc_events = acc_events
        self.step_num = 0
        self.current_action = self.schedule(0)
        self._recorder: Recorder | None = None
        self._patches: Patches | None = None
        self._step_event = None
        self._events: EventList | None = None
        self._kept: list = []

    # --- lifecycle -------------------------------------------------------------------------
    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.stop()

    def start(self) -> None:
        if self.current_action in _RECORDING:
            self._start_recording()

    def stop(self) -> None:
        if self._recorder is not None:
            self._stop_recording()
            self._trace_ready()

    def step(self) -> None:
        """Mark the end of an iteration: the schedule decides what the next one does."""
        previous = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        if previous in _RECORDING:
            self._stop_recording()
            if previous is ProfilerAction.RECORD_AND_SAVE:
                self._trace_ready()
        if self.current_action in _RECORDING:
            self._start_recording(keep=previous is ProfilerAction.RECORD)

    def _start_recording(self, keep: bool = False) -> None:
        if state.recorder is not None and state.recorder is not self._recorder:
            raise RuntimeError("Profiler is already enabled on this thread")
        if not keep:
            self._kept = []
        self._recorder = Recorder(self.record_shapes, self.profile_memory, self.with_stack)
        self._patches = Patches()
        state.recorder = self._recorder
        self._patches.install()
        if self._has_schedule:
            self._step_event = self._recorder.begin(f"ProfilerStep#{self.step_num}",
                                                    user_annotation=True)

    def _stop_recording(self) -> None:
        rec = self._recorder
        if self._step_event is not None:
            rec.end(self._step_event)
            self._step_event = None
        for evt in reversed(rec.stack):  # ranges still open: closed now
            rec.end(evt)
        self._patches.uninstall()
        state.recorder = None
        self._kept.extend(rec.events)
        self._recorder = self._patches = None
        self._events = EventList(self._kept, profile_memory=self.profile_memory)

    def _trace_ready(self) -> None:
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    # --- results ---------------------------------------------------------------------------
    def events(self) -> EventList:
        """Every recorded call of the last active cycle, in start order."""
        if self._events is None:
            raise AssertionError("Profiler didn't finish running")
        return self._events

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        return self.events().key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path: str) -> None:
        self.events().export_chrome_trace(path)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """torch's flame-graph input: one ``frame;frame;... <µs>`` line per stack."""
        with open(path, "w") as f:
            for evt in self.events():
                if evt.stack:
                    f.write(";".join(reversed(evt.stack)) + f" {int(getattr(evt, metric))}\n")


class record_function:
    """``torch.profiler.record_function``: label a range of code (a context manager or a
    decorator); a no-op when no profiler records."""

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name, self.args = name, args
        self._event = None

    def __enter__(self) -> record_function:
        rec = state.recorder
        if rec is not None:
            self._event = (rec, rec.begin(self.name, user_annotation=True))
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if self._event is not None:
            rec, evt = self._event
            self._event = None
            if state.recorder is rec:
                rec.end(evt)

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)
        return wrapped


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None,
                              use_gzip: bool = False) -> Callable:
    """Not supported: ember writes Chrome traces, not TensorBoard's profiler plugin format."""
    raise NotImplementedError(
        "tensorboard_trace_handler is not supported by ember: use on_trace_ready=lambda p: "
        "p.export_chrome_trace(path) and open the file in chrome://tracing or Perfetto")
