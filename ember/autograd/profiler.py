"""``torch.autograd.profiler``: the legacy profiler names, over ``ember.profiler``."""

from ..profiler._legacy import (  # noqa: F401
    EventList,
    FunctionEvent,
    FunctionEventAvg,
    profile,
    record_function,
)
