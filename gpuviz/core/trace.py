"""Timelines as Chrome traces: the Trace Event Format that Perfetto (ui.perfetto.dev) and
chrome://tracing open, written and read back through one mapping.

A figure drawn with the timeline helper hands its schedule over through the model's
`trace()` hook (`FigureModel.trace`), which returns a `Trace`: the schedule, its lanes in
the figure's order (each lane a resource on a device) and the schedule's time unit. In
the file:

    device                  a process ("M" events process_name, process_sort_index)
    lane                    a thread of its device (thread_name with args {name,
                            resource, row}, thread_sort_index)
    task                    an "X" (complete) event: name = the text of its box,
                            ts and dur in microseconds, cat = its Kineto category,
                            args = {task, kind} (and correlation, below)
    idle time               nothing

Sort indices keep the lanes in the figure's order. Reading takes the "X" and "M" events
of any trace (others are skipped) and builds a schedule with the times as given
(`schedule_at`), in microseconds, with a lane for each named thread and each thread with
events. What other tools leave out is filled in: a thread's resource is "process:
thread", a task's name its text (primed where it repeats).

Profiles. Every lane is on a row of a profiler's view: the CPU, a compute stream or a
communication (NCCL) stream. `PROFILE_KINDS` is the one table between a task's kind and
the event torch.profiler (Kineto) writes for it: a kernel launch or a blocking call on
the CPU is "cuda_runtime", a kernel "kernel" (NCCL's on their own stream, named nccl...),
a copy "gpu_memcpy". The writer files each task under its kind's category and each lane
under its row; the reader takes a thread's row from our metadata, else from its events'
categories and names, and a launch and its kernel share Kineto's `correlation` number
(the kernel's task then comes `after` the launch), so a figure's trace and a
torch.profiler trace read back alike. The field meanings follow Kineto's
`output_json.cpp` and Holistic Trace Analysis (facebookresearch/HolisticTraceAnalysis).
Reading refuses files over `MAX_TRACE_BYTES` or `MAX_TRACE_EVENTS` (a parsed event takes
about a kilobyte of Python objects) and reads the events one by one, so a caller off the
UI thread can show progress and cancel (`progress`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuviz.core.model import FigureModel
from gpuviz.core.schedule import Schedule, Task, schedule_at

MICROSECONDS = 1e-6  # seconds: the trace's time unit
MAX_TRACE_BYTES = 100 * 2**20  # larger files are refused, not parsed
MAX_TRACE_EVENTS = 1_000_000

# The rows of a profile.
CPU, COMPUTE, COMMUNICATION = "cpu", "compute", "communication"
# A task's kind in a profile: (the "cat" Kineto gives its event, the row it is on).
PROFILE_KINDS = {
    "launch": ("cuda_runtime", CPU),  # cudaLaunchKernel, cudaMemcpyAsync
    "wait": ("cuda_runtime", CPU),  # the host blocked: a stream sync, the next batch
    "cpu": ("cpu_op", CPU),  # an operator on the CPU (aten::mm), enclosing launches
    "compute": ("kernel", COMPUTE),
    "memcpy": ("gpu_memcpy", COMPUTE),
    "nccl": ("kernel", COMMUNICATION),
}
ROW_KINDS = {CPU: "cpu", COMPUTE: "compute", COMMUNICATION: "nccl"}  # a row's plain kind
# Runtime calls that block the host until the GPU catches up (CUDA runtime API names).
BLOCKING_CALLS = ("cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize",
                  "cudaMemcpy", "cudaStreamWaitEvent")
# Kineto's complete events that are no work on a row: a sync's marker on the GPU stream,
# the profiler's own span.
KINETO_MARKERS = ("cuda_sync", "trace")
ProgressCallback = Callable[[float], None]  # told the share done; raises to cancel


@dataclass(frozen=True)
class Lane:
    """One lane of a timeline: the tasks of `resource`, drawn in a device's process."""

    device: str  # e.g. "GPU 0", "Stage 1"
    resource: str  # the schedule's resource
    label: str = ""  # the lane's name in the figure; the resource if empty
    row: str = COMPUTE  # CPU, COMPUTE or COMMUNICATION: where a profile shows it

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


def profile_kind(kind: str, row: str) -> str:
    """A task's kind in a profile: its own where `PROFILE_KINDS` has it, else its row's."""
    return kind if kind in PROFILE_KINDS else ROW_KINDS.get(row, "compute")


def event_kind(category: str, name: str) -> str | None:
    """The kind of an event torch.profiler (Kineto) wrote, from its category and name;
    None for events no row shows (flows, the profiler's own spans)."""
    category = category.lower()
    if category == "kernel":  # NCCL's kernels are named ncclKernel_..., ncclDevKernel_...
        return "nccl" if "nccl" in name.lower() else "compute"
    if category in ("gpu_memcpy", "gpu_memset"):
        return "memcpy"
    if category in ("cuda_runtime", "cuda_driver"):
        return "wait" if name in BLOCKING_CALLS else "launch"
    if category in ("cpu_op", "user_annotation", "python_function"):
        # the host waiting for the loader: enumerate(DataLoader)#...__next__
        return "wait" if "DataLoader" in name else "cpu"
    return None


def trace_events(trace: Trace) -> list[dict[str, Any]]:
    """The trace's events: metadata naming and ordering every process and thread, then one
    "X" event per task on a lane (tasks of other resources are left out), lane by lane in
    time order. A task on a GPU row that comes after a CPU task (its launch) shares a
    correlation number with it."""
    devices = trace.devices
    events: list[dict[str, Any]] = []
    for d, device in enumerate(devices):
        events += [_meta("process_name", d + 1, None, name=device),
                   _meta("process_sort_index", d + 1, None, sort_index=d)]
    to_us = trace.seconds / MICROSECONDS
    result = trace.schedule
    row_of = {lane.resource: lane.row for lane in trace.lanes}
    correlation: dict[str, int] = {}
    for task in result.tasks:
        if row_of.get(task.resource, CPU) != CPU:
            for name in task.after:
                launch = result.tasks[result.index(name)]
                if row_of.get(launch.resource) == CPU:
                    correlation[task.name] = correlation[name] = len(correlation) + 1
                    break
    for t, lane in enumerate(trace.lanes):
        pid, tid = devices.index(lane.device) + 1, t + 1
        events += [_meta("thread_name", pid, tid, name=lane.text, resource=lane.resource,
                         row=lane.row),
                   _meta("thread_sort_index", pid, tid, sort_index=t)]
        for i in result.on(lane.resource):
            task = result.tasks[i]
            args: dict[str, Any] = {"task": task.name, "kind": task.kind}
            if task.name in correlation:
                args["correlation"] = correlation[task.name]
            events.append({"name": task.text, "ph": "X", "pid": pid, "tid": tid,
                           "cat": PROFILE_KINDS[profile_kind(task.kind, lane.row)][0],
                           "ts": float(result.start[i]) * to_us,
                           "dur": task.duration * to_us, "args": args})
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


def read_trace(path: str | Path, progress: ProgressCallback | None = None) -> Trace:
    """A trace file read back (times in microseconds); raises OSError, or ValueError for a
    file that is not a trace or is too large. `progress(share)` is told how far it got
    (0 to 1) and may raise to stop."""
    path = Path(path)
    size = path.stat().st_size
    if size > MAX_TRACE_BYTES:
        raise ValueError(f"too large: {size / 2**20:.0f} MB, at most "
                         f"{MAX_TRACE_BYTES / 2**20:.0f} MB are read")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"not a JSON trace: {error}") from error
    report = progress or (lambda share: None)
    events = _parse_events(text, lambda share: report(share / 2))
    return trace_from_events(events, lambda share: report(0.5 + share / 2))


_EVENTS_START = re.compile(r'\s*(?:\[|\{.*?"traceEvents"\s*:\s*\[)', re.DOTALL)
_SPACE = re.compile(r"[\s,]*")
_PROGRESS_EVERY = 20_000  # events between two progress reports


def _parse_events(text: str, progress: ProgressCallback) -> list[Any]:
    """The list of trace events, one event decoded at a time (`progress` told the share
    of the text read); the whole text decoded at once where the list is not found, for
    its error. Raises ValueError."""
    found = _EVENTS_START.match(text)
    if not found:  # not JSON, or JSON with no list of events
        try:
            json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(f"not a JSON trace: {error}") from error
        raise ValueError("not a trace: no list of trace events")
    decoder, events = json.JSONDecoder(), []
    at = _SPACE.match(text, found.end()).end()
    try:
        while at < len(text) and text[at] != "]":
            event, at = decoder.raw_decode(text, at)
            events.append(event)
            at = _SPACE.match(text, at).end()
            if len(events) % _PROGRESS_EVERY == 0:
                if len(events) > MAX_TRACE_EVENTS:
                    raise ValueError(f"too large: more than {MAX_TRACE_EVENTS:,} events")
                progress(at / len(text))
    except json.JSONDecodeError as error:
        raise ValueError(f"not a JSON trace: {error}") from error
    if at >= len(text):
        raise ValueError("not a JSON trace: the list of trace events is not closed")
    return events


def trace_from_events(events: Iterable[Mapping[str, Any]],
                      progress: ProgressCallback | None = None) -> Trace:
    """The schedule of a list of trace events (see the module docstring), in microseconds:
    lanes ordered by the processes' and threads' sort indices, then by their ids."""
    names: dict[tuple[Any, Any], str] = {}
    resources: dict[tuple[Any, Any], str] = {}
    rows: dict[tuple[Any, Any], str] = {}
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
                if args.get("row") in ROW_KINDS:
                    rows[key] = args["row"]
            elif name in ("process_sort_index", "thread_sort_index"):
                order[key] = _number(args.get("sort_index"), "sort_index")
        elif phase == "X" and str(event.get("cat", "")).lower() not in KINETO_MARKERS:
            kind = args.get("kind")
            if not isinstance(kind, str):
                kind = event_kind(str(event.get("cat", "")), name) or ""
            boxes.append((pid, tid, event, args, kind))
    if len(boxes) > MAX_TRACE_EVENTS:
        raise ValueError(f"too large: {len(boxes):,} events, at most {MAX_TRACE_EVENTS:,}")
    kinds_on: dict[tuple[Any, Any], set[str]] = {}
    for pid, tid, _, _, kind in boxes:
        kinds_on.setdefault((pid, tid), set()).add(kind)
    lanes: dict[tuple[Any, Any], Lane] = {}
    threads = [key for key in names if key[1] is not None] + [box[:2] for box in boxes]
    for key in dict.fromkeys(threads):
        pid, tid = key
        device = names.get((pid, None), f"process {pid}")
        label = names.get(key, f"thread {tid}")
        resource = resources.get(key, f"{device}: {label}")
        row = rows.get(key) or _row_of(kinds_on.get(key, set()))
        lanes[key] = Lane(device, resource, "" if label == resource else label, row)
    task_names, taken, repeats = [], set(), {}
    for _, _, event, args, _ in boxes:
        name = str(args.get("task", event.get("name", "")))
        if name in taken:  # events of other tools repeat their names
            repeats[name] = count = repeats.get(name, 0) + 1
            name = f"{name}'" if count == 1 else f"{name}'{count}"
            while name in taken:
                name += "'"
        taken.add(name)
        task_names.append(name)
    launches = {args["correlation"]: name for name, (pid, tid, _, args, _)
                in zip(task_names, boxes, strict=True)
                if lanes[(pid, tid)].row == CPU and _hashable(args.get("correlation"))}
    tasks, starts = [], []
    report = progress or (lambda share: None)
    for n, (name, (pid, tid, event, args, kind)) in enumerate(
            zip(task_names, boxes, strict=True)):
        text = str(event.get("name", ""))
        lane = lanes[(pid, tid)]
        launch = launches.get(args.get("correlation")) if lane.row != CPU and _hashable(
            args.get("correlation")) else None
        tasks.append(Task(name, lane.resource, _number(event.get("dur"), "dur"),
                          after=(launch,) if launch else (), kind=kind,
                          label="" if text == name else text))
        starts.append(_number(event.get("ts"), "ts"))
        if n % _PROGRESS_EVERY == 0:
            report(n / len(boxes))

    def rank(key: tuple[Any, Any]) -> tuple:
        pid, tid = key
        return (order.get((pid, None), 0), _id_order(pid), order.get(key, 0), _id_order(tid))

    ordered = tuple(lanes[key] for key in sorted(lanes, key=rank))
    return Trace(schedule_at(tasks, starts), ordered, MICROSECONDS)


def _row_of(kinds: set[str]) -> str:
    """A thread's row from its events' kinds: a stream of NCCL kernels only is a
    communication stream, one with any other GPU work a compute stream."""
    rows = {PROFILE_KINDS[kind][1] for kind in kinds if kind in PROFILE_KINDS}
    if COMPUTE in rows:
        return COMPUTE
    return COMMUNICATION if COMMUNICATION in rows else CPU if rows else COMPUTE


def _hashable(value: Any) -> bool:
    return isinstance(value, int | str) and not isinstance(value, bool)


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
