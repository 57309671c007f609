"""Profiler events and their summaries: ``FunctionEvent``, ``FunctionEventAvg``, ``EventList``
with torch's ``table()`` layout (torch.autograd.profiler_util, 2.13)."""

from __future__ import annotations

import json
import os
import threading


def _format_time(time_us: float) -> str:
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_time_share(time_us: float, total_us: float) -> str:
    if total_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_us:.2f}%"


def _format_memory(nbytes: int) -> str:
    kb, mb, gb = 1024, 1024 ** 2, 1024 ** 3
    if abs(nbytes) >= gb:
        return f"{nbytes * 1.0 / gb:.2f} GB"
    if abs(nbytes) >= mb:
        return f"{nbytes * 1.0 / mb:.2f} MB"
    if abs(nbytes) >= kb:
        return f"{nbytes * 1.0 / kb:.2f} KB"
    return f"{nbytes} B"


class FunctionEvent:
    """One timed call (an op, a ``record_function`` range, a backward node): times in µs."""

    def __init__(self, id: int, name: str, start_ns: int, parent: FunctionEvent | None,
                 input_shapes: list | None = None, stack: list | None = None,
                 is_user_annotation: bool = False) -> None:
        self.id, self.name, self.key = id, name, name
        self._start_ns, self._end_ns = start_ns, start_ns
        self.cpu_parent = parent
        self.cpu_children: list[FunctionEvent] = []
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.stack = stack or []
        self.is_user_annotation = is_user_annotation
        self.thread = threading.get_ident()
        self.cpu_memory_usage = 0
        self.count = 1
        self.node_id = -1
        self.is_async = False
        self.is_legacy = False
        self.overload_name = ""
        self.device_type = "cpu"
        self.self_device_time_total = self.device_time_total = 0.0

    @property
    def time_range(self) -> tuple[float, float]:
        return self._start_ns / 1e3, self._end_ns / 1e3

    @property
    def cpu_time_total(self) -> float:
        return (self._end_ns - self._start_ns) / 1e3

    @property
    def self_cpu_time_total(self) -> float:
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def self_cpu_memory_usage(self) -> int:
        return self.cpu_memory_usage - sum(c.cpu_memory_usage for c in self.cpu_children)

    cpu_time = cpu_time_total

    def __repr__(self) -> str:
        return (f"<FunctionEvent id={self.id} name={self.name} cpu_time="
                f"{_format_time(self.cpu_time_total)} cpu_children="
                f"{[c.id for c in self.cpu_children]} input_shapes={self.input_shapes}>")


class FunctionEventAvg:
    """The events of one key (name, and input shapes when grouped by them), summed."""

    def __init__(self, key: str, input_shapes=None) -> None:
        self.key = key
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.count = 0
        self.cpu_time_total = self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = self.self_cpu_memory_usage = 0
        self.is_user_annotation = False
        self.node_id = -1
        self.is_async = False
        self.is_legacy = False
        self.overload_name = ""
        self.cpu_parent = None
        self.stack: list = []
        self.self_device_time_total = self.device_time_total = 0.0

    def add(self, evt) -> FunctionEventAvg:
        self.count += evt.count
        self.cpu_time_total += evt.cpu_time_total
        self.self_cpu_time_total += evt.self_cpu_time_total
        self.cpu_memory_usage += evt.cpu_memory_usage
        self.self_cpu_memory_usage += evt.self_cpu_memory_usage
        self.is_user_annotation = evt.is_user_annotation
        return self

    __iadd__ = add

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / self.count if self.count else 0.0

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} self_cpu_time="
                f"{_format_time(self.self_cpu_time_total)} cpu_time="
                f"{_format_time(self.cpu_time_total)} count={self.count} "
                f"input_shapes={self.input_shapes}>")


class EventList(list):
    """A list of events with torch's summaries: ``key_averages``, ``table``, chrome trace."""

    def __init__(self, *args, profile_memory: bool = False, **kwargs) -> None:
        super().__init__(*args)
        self._profile_memory = profile_memory

    @property
    def self_cpu_time_total(self) -> float:
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shape: bool = False,
                     group_by_stack_n: int = 0) -> EventList:
        """Events summed by name (and by input shapes if asked), in first-seen order."""
        groups: dict = {}
        for evt in self:
            key = evt.key
            if group_by_input_shape:
                key = (key, str(evt.input_shapes))
            if group_by_stack_n > 0:
                key = (key, tuple(evt.stack[:group_by_stack_n]))
            avg = groups.get(key)
            if avg is None:
                avg = groups[key] = FunctionEventAvg(
                    evt.key, evt.input_shapes if group_by_input_shape else None)
                if group_by_stack_n > 0:
                    avg.stack = evt.stack[:group_by_stack_n]
            avg.add(evt)
        return EventList(groups.values(), profile_memory=self._profile_memory)

    def total_average(self) -> FunctionEventAvg:
        total = FunctionEventAvg("Total")
        for evt in self:
            total.add(evt)
        return total

    def table(self, sort_by: str | None = None, row_limit: int = 100,
              max_src_column_width: int = 75, max_name_column_width: int = 55,
              max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False, time_unit: str | None = None) -> str:
        """torch's ``_build_table``: Name, Self CPU %, Self CPU, CPU total %, CPU total, CPU time
        avg, (CPU Mem, Self CPU Mem,) # of Calls (, Input Shapes, Source Location)."""
        return _build_table(self, sort_by, header, row_limit, max_src_column_width,
                            max_name_column_width, max_shapes_column_width,
                            self._profile_memory, top_level_events_only, time_unit)

    def __str__(self) -> str:
        return self.table()

    def export_chrome_trace(self, path: str) -> None:
        """A Chrome trace (``chrome://tracing``, Perfetto): one complete event per call."""
        pid = os.getpid()
        trace = []
        for evt in self:
            entry = {"ph": "X", "cat": "user_annotation" if evt.is_user_annotation else "cpu_op",
                     "name": evt.name, "pid": pid, "tid": evt.thread,
                     "ts": evt._start_ns / 1e3, "dur": evt.cpu_time_total, "args": {}}
            if evt.input_shapes:
                entry["args"]["Input Dims"] = evt.input_shapes
            trace.append(entry)
        with open(path, "w") as f:
            json.dump({"schemaVersion": 1, "traceEvents": trace, "displayTimeUnit": "ms",
                       "traceName": str(path)}, f)


def _build_table(events, sort_by, header, row_limit, max_src_column_width,
                 max_name_column_width, max_shapes_column_width, profile_memory,
                 top_level_events_only, time_unit) -> str:
    if len(events) == 0:
        return ""
    has_input_shapes = any(e.input_shapes for e in events)
    if sort_by is not None:
        attr = sort_by.replace("cuda", "device").replace("xpu", "device")
        events = sorted(events, key=lambda e: getattr(e, attr), reverse=True)
    name_width = min(max(len(e.key) for e in events) + 4, max_name_column_width)
    shapes_width = min(max(len(str(e.input_shapes)) for e in events) + 4,
                       max_shapes_column_width)
    stacks = [e.stack for e in events if e.stack]
    src_width = None
    if stacks:
        src_width = min(max(len(entry) for s in stacks for entry in s) + 4, max_src_column_width)

    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
    headers.append("# of Calls")
    row_format, sep, widths = "", "", [name_width] + [12] * (len(headers) - 1)
    aligns = [">"] * len(widths)
    if has_input_shapes:
        headers.append("Input Shapes")
        widths.append(shapes_width)
        aligns.append(">")
    if stacks:
        headers.append("Source Location")
        widths.append(src_width)
        aligns.append("<")
    for w, a in zip(widths, aligns):
        row_format += "{: " + a + str(w) + "}  "
        sep += "-" * w + "  "
    line_length = sum(widths) + 2 * (len(widths) - 1)

    def fmt_time(us: float) -> str:
        if time_unit == "s":
            return f"{us / 1e6:.3f}s"
        if time_unit == "ms":
            return f"{us / 1e3:.3f}ms"
        if time_unit == "us":
            return f"{us:.3f}us"
        return _format_time(us)

    total = sum(e.self_cpu_time_total for e in events)
    out = []
    if header is not None:
        out += ["=" * line_length, header]
    if top_level_events_only:
        out += ["=" * line_length, "This report only display top-level ops statistics"]
    out += [sep, row_format.format(*headers), sep]
    shown = 0
    for evt in events:
        if shown == row_limit:
            break
        if top_level_events_only and evt.cpu_parent is not None:
            continue
        shown += 1
        name = evt.key
        if len(name) >= max_name_column_width - 3:
            name = name[:max_name_column_width - 3] + "..."
        row = [name, _format_time_share(evt.self_cpu_time_total, total),
               fmt_time(evt.self_cpu_time_total), _format_time_share(evt.cpu_time_total, total),
               fmt_time(evt.cpu_time_total), fmt_time(evt.cpu_time)]
        if profile_memory:
            row += [_format_memory(evt.cpu_memory_usage),
                    _format_memory(evt.self_cpu_memory_usage)]
        row.append(evt.count)
        if has_input_shapes:
            row.append(str(evt.input_shapes)[:shapes_width])
        if stacks:
            src = evt.stack[0] if evt.stack else ""
            if len(src) > src_width:
                src = "..." + src[len(src) - src_width + 3:]
            row.append(src)
        out.append(row_format.format(*row))
        for entry in evt.stack[1:] if stacks else ():
            out.append(row_format.format(*([""] * (len(headers) - 1)), entry[:src_width]))
    out += [sep, f"Self CPU time total: {fmt_time(total)}"]
    return "".join(line + "\n" for line in out)
