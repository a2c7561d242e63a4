"""Timelines as Chrome traces: the Trace Event Format that Perfetto (ui.perfetto.dev) and
chrome://tracing open, written and read back through one mapping.

A figure drawn with the timeline helper hands its schedule over through the model's
`trace()` hook (`FigureModel.trace`), which returns a `Trace`: the schedule, its lanes in
the figure's order (each lane a resource on a device) and the schedule's time unit. In
the file:

    device                  a process ("M" events process_name, process_sort_index)
    lane                    a thread of its device (thread_name with args {name,
                            resource}, thread_sort_index)
    task                    an "X" (complete) event: name = the text of its box,
                            ts and dur in microseconds, args = {task, kind}
    idle time               nothing

Sort indices keep the lanes in the figure's order. Reading takes the "X" and "M" events
of any trace (others are skipped) and builds a schedule with the times as given
(`schedule_at`), in microseconds, with a lane for each named thread and each thread with
events. What other tools leave out is filled in: a thread's resource is "process:
thread", a task's name its text (primed where it repeats).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuviz.core.model import FigureModel
from gpuviz.core.schedule import Schedule, Task, schedule_at

MICROSECONDS = 1e-6  # seconds: the trace's time unit


@dataclass(frozen=True)
class Lane:
    """One lane of a timeline: the tasks of `resource`, drawn in a device's process."""

    device: str  # e.g. "GPU 0", "Stage 1"
    resource: str  # the schedule's resource
    label: str = ""  # the lane's name in the figure; the resource if empty

    @property
    def text(self) -> str:
        return self.label or self.resource


@dataclass(frozen=True)
class Trace:
    """A schedule with its lanes in the figure's order (top to bottom) and its unit."""

    schedule: Schedule
    lanes: tuple[Lane, ...]
    seconds: float = 1.0  # one time unit of the schedule, in seconds

    @property
    def devices(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(lane.device for lane in self.lanes))


def has_trace(model: FigureModel) -> bool:
    """Whether the figure's model declares a timeline (overrides `trace()`), without
    computing it."""
    return type(model).trace is not FigureModel.trace


def trace_events(trace: Trace) -> list[dict[str, Any]]:
    """The trace's events: metadata naming and ordering every process and thread, then one
    "X" event per task on a lane (tasks of other resources are left out), lane by lane in
    time order."""
    devices = trace.devices
    events: list[dict[str, Any]] = []
    for d, device in enumerate(devices):
        events += [_meta("process_name", d + 1, None, name=device),
                   _meta("process_sort_index", d + 1, None, sort_index=d)]
    to_us = trace.seconds / MICROSECONDS
    result = trace.schedule
    for t, lane in enumerate(trace.lanes):
        pid, tid = devices.index(lane.device) + 1, t + 1
        events += [_meta("thread_name", pid, tid, name=lane.text, resource=lane.resource),
                   _meta("thread_sort_index", pid, tid, sort_index=t)]
        for i in result.on(lane.resource):
            task = result.tasks[i]
            events.append({"name": task.text, "ph": "X", "pid": pid, "tid": tid,
                           "ts": float(result.start[i]) * to_us,
                           "dur": task.duration * to_us,
                           "args": {"task": task.name, "kind": task.kind}})
    return events


def _meta(event_name: str, pid: int, tid: int | None, **args: Any) -> dict[str, Any]:
    event = {"name": event_name, "ph": "M", "pid": pid, "args": args}
    if tid is not None:
        event["tid"] = tid
    return event


def write_trace(trace: Trace, path: str | Path) -> None:
    """Save as a JSON trace file (the object form, times shown in ms); raises OSError."""
    text = json.dumps({"traceEvents": trace_events(trace), "displayTimeUnit": "ms"})
    Path(path).write_text(text, encoding="utf-8")


def read_trace(path: str | Path) -> Trace:
    """A trace file read back (times in microseconds); raises OSError, or ValueError for a
    file that is not a trace."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"not a JSON trace: {error}") from error
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list):
        raise ValueError("not a trace: no list of trace events")
    return trace_from_events(events)


def trace_from_events(events: Iterable[Mapping[str, Any]]) -> Trace:
    """The schedule of a list of trace events (see the module docstring), in microseconds:
    lanes ordered by the processes' and threads' sort indices, then by their ids."""
    names: dict[tuple[Any, Any], str] = {}
    resources: dict[tuple[Any, Any], str] = {}
    order: dict[tuple[Any, Any], float] = {}
    boxes = []
    for event in events:
        if not isinstance(event, Mapping):
            raise ValueError(f"not a trace event: {event!r}")
        phase, name = event.get("ph"), str(event.get("name", ""))
        pid, tid = _ident(event.get("pid")), _ident(event.get("tid"))
        args = event.get("args") if isinstance(event.get("args"), Mapping) else {}
        if phase == "M":
            key = (pid, None) if name.startswith("process") else (pid, tid)
            if name in ("process_name", "thread_name"):
                names[key] = str(args.get("name", ""))
                if "resource" in args:
                    resources[key] = str(args["resource"])
            elif name in ("process_sort_index", "thread_sort_index"):
                order[key] = _number(args.get("sort_index"), "sort_index")
        elif phase == "X":
            boxes.append((pid, tid, event, args))
    lanes: dict[tuple[Any, Any], Lane] = {}
    threads = [key for key in names if key[1] is not None] + [box[:2] for box in boxes]
    for pid, tid in dict.fromkeys(threads):
        device = names.get((pid, None), f"process {pid}")
        label = names.get((pid, tid), f"thread {tid}")
        resource = resources.get((pid, tid), f"{device}: {label}")
        lanes[(pid, tid)] = Lane(device, resource, "" if label == resource else label)
    tasks, starts, taken = [], [], set()
    for pid, tid, event, args in boxes:
        text = str(event.get("name", ""))
        name = str(args.get("task", text))
        while name in taken:  # events of other tools repeat their names
            name += "'"
        taken.add(name)
        tasks.append(Task(name, lanes[(pid, tid)].resource,
                          _number(event.get("dur"), "dur"), kind=str(args.get("kind", "")),
                          label="" if text == name else text))
        starts.append(_number(event.get("ts"), "ts"))

    def rank(key: tuple[Any, Any]) -> tuple:
        pid, tid = key
        return (order.get((pid, None), 0), _id_order(pid), order.get(key, 0), _id_order(tid))

    ordered = tuple(lanes[key] for key in sorted(lanes, key=rank))
    return Trace(schedule_at(tasks, starts), ordered, MICROSECONDS)


def _ident(value: Any) -> int | float | str | None:
    """A process or thread id as a key: numbers and strings as they are, anything else as
    its text."""
    return value if value is None or isinstance(value, int | float | str) else str(value)


def _id_order(value: Any) -> tuple[int, Any]:
    """Ids are numbers in most traces, strings in some: numbers first, in order."""
    return (0, value) if isinstance(value, int | float) else (1, str(value))


def _number(value: Any, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"not a trace: {field} is {value!r}, not a number")
    return float(value)
