"""``torch.autograd.profiler``'s names: the legacy ``profile`` (``enabled=`` first, results
through ``table()``/``key_averages()``/``function_events`` on the profiler itself) and
``record_function``, over the same recorder as ``ember.profiler.profile``."""

from __future__ import annotations


from . import EventList, FunctionEvent, FunctionEventAvg, record_function
from . import profile as _profile

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "profile", "record_function"]


class profile:
    """``torch.autograd.profiler.profile``: records while entered, if ``enabled``."""

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device=None,
                 record_shapes: bool = False, with_flops: bool = False,
                 profile_memory: bool = False, with_stack: bool = False,
                 with_modules: bool = False, use_kineto: bool = False, use_cpu: bool = True,
                 experimental_config=None, acc_events: bool = False,
                 custom_trace_id_callback=None) -> None:
        self.enabled = enabled
        self._inner = _profile(record_shapes=record_shapes, profile_memory=profile_memory,
                               with_stack=with_stack)
        self.function_events: EventList | None = None

    def __enter__(self) -> profile:
        if self.enabled:
            self._inner.start()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if self.enabled:
            self._inner.stop()
            self.function_events = self._inner.events()

    def _events(self) -> EventList:
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")
        return self.function_events

    def key_averages(self, group_by_input_shape: bool = False,
                     group_by_stack_n: int = 0) -> EventList:
        return self._events().key_averages(group_by_input_shape, group_by_stack_n)

    def table(self, sort_by: str | None = None, row_limit: int = 100, **kwargs) -> str:
        return self._events().table(sort_by=sort_by, row_limit=row_limit, **kwargs)

    def export_chrome_trace(self, path: str) -> None:
        self._events().export_chrome_trace(path)

    def total_average(self) -> FunctionEventAvg:
        return self._events().total_average()

    @property
    def self_cpu_time_total(self) -> float:
        return self._events().self_cpu_time_total

    def __str__(self) -> str:
        return self.table()
