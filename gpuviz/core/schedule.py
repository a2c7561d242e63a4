"""Tasks on resources: start and end times, busy and idle time per resource, the step time.

A small list scheduler for the timelines of Lessons 6, 8, 9, 10, 12 and 13. A resource is
anything that runs one task at a time: a GPU's compute stream, its communication stream,
a link, a CPU thread. Each resource runs its tasks in the order they are given, as a CUDA
stream does; a task starts when its resource is free, every task it depends on has
ended, and its release time (a request's arrival) has come:

    start(t) = max(release(t), end of the previous task on resource(t),
                   max end(d) for d in after(t))
    end(t)   = start(t) + duration(t)

`schedule_at` takes the start times as given instead (a trace read back, a closed form).

The step time is the latest end. Busy time is the union of a resource's tasks (or of
several resources': one device's streams), so overlapping or nested tasks count once;
the rest of the step is idle. `idle_intervals` lists those gaps (a figure shades them
violet) and `waiting` counts the part of them spent waiting for another resource (the
exposed time: e.g. a compute stream that stops while the last all-reduce runs). `level`
counts what is held from one task's start to another's end (micro-batches stashed, KV
blocks, gathered weights). Durations are in any one unit (the figures use seconds); the
scheduler never rounds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np


@dataclass(frozen=True)
class Task:
    """One piece of work. `name` must be unique; `after` names tasks that must end first."""

    name: str
    resource: str
    duration: float
    after: tuple[str, ...] = ()
    kind: str = ""  # what the figure colours it by (e.g. "compute", "network")
    label: str = ""  # the text drawn in its box; the name if empty
    release: float = 0.0  # the earliest start (a request's arrival)

    @property
    def text(self) -> str:
        return self.label or self.name


@dataclass(frozen=True)
class Schedule:
    """The tasks as given, with their start and end times (arrays in task order)."""

    tasks: tuple[Task, ...]
    start: np.ndarray
    end: np.ndarray
    resources: tuple[str, ...]  # in order of first appearance
    _index: dict[str, int] = field(repr=False, compare=False, default_factory=dict)

    @property
    def step_time(self) -> float:
        return float(self.end.max()) if len(self.end) else 0.0

    def index(self, name: str) -> int:
        return self._index[name]

    @cached_property
    def _times(self) -> tuple[list[float], list[float]]:
        """Start and end times as Python floats, for the loops below."""
        return self.start.tolist(), self.end.tolist()

    @cached_property
    def _by_resource(self) -> dict[str, list[int]]:
        """Each resource's task indices in the order they start (ties as given)."""
        lanes: dict[str, list[int]] = {name: [] for name in self.resources}
        for i in np.argsort(self.start, kind="stable").tolist():
            lanes[self.tasks[i].resource].append(i)
        return lanes

    def on(self, resources: str | Iterable[str]) -> list[int]:
        """Indices of the tasks of a resource (or of several), in the order they start
        (ties in the order given)."""
        if isinstance(resources, str):
            return list(self._by_resource.get(resources, ()))
        starts = self._times[0]
        picked = [i for name in dict.fromkeys(resources)
                  for i in self._by_resource.get(name, ())]
        return sorted(picked, key=lambda i: (starts[i], i))

    def busy(self, resources: str | Iterable[str]) -> float:
        """Time at least one task of the resource(s) runs: the union of their intervals,
        so overlapping or nested tasks count once (a task that starts after the ones
        before it have ended adds its duration as given, not end - start)."""
        starts, ends = self._times
        total, covered = 0.0, -np.inf
        for i in self.on(resources):
            start, end = starts[i], ends[i]
            if start >= covered:
                total += self.tasks[i].duration
            elif end > covered:
                total += end - covered
            covered = max(covered, end)
        return total

    def idle(self, resources: str | Iterable[str]) -> float:
        """Time within the step the resource(s) do nothing: step time - busy."""
        return self.step_time - self.busy(resources)

    def idle_intervals(self, resources: str | Iterable[str], until: float | None = None
                       ) -> list[tuple[float, float]]:
        """The gaps between 0 and `until` (default: the step time) in which no task of the
        resource(s) runs."""
        until = self.step_time if until is None else until
        starts, ends = self._times
        gaps, free_from = [], 0.0
        for i in self.on(resources):
            if starts[i] > free_from:
                gaps.append((free_from, starts[i]))
            free_from = max(free_from, ends[i])
        if until > free_from:
            gaps.append((free_from, until))
        return gaps

    def waiting(self, resource: str) -> float:
        """Time the resource's tasks wait for a dependency after the resource is free: the
        exposed time of the work it waits for (a gap before its first task included)."""
        starts, ends = self._times
        total, free_from = 0.0, 0.0
        for i in self.on(resource):
            total += max(0.0, starts[i] - free_from)
            free_from = ends[i]
        return total

    def exposed_after(self, resource: str) -> float:
        """Time from the resource's last end to the step's end (e.g. communication that
        outlasts the last backward kernel)."""
        ends = [self._times[1][i] for i in self.on(resource)]
        return self.step_time - max(ends) if ends else self.step_time

    def level(self, spans: Iterable[tuple[str, str]],
              amounts: float | Sequence[float] = 1) -> tuple[np.ndarray, np.ndarray]:
        """Step curve (times, levels) of what is held from the start of one task to the
        end of another: span (first, last) holds its amount over
        [start(first), end(last)). Changes at one instant count together (a unit freed
        as the next is taken is no dip); the curve starts at time 0 and ends at 0.
        Integer amounts give integer levels. Raises ValueError for an unknown task, a
        negative amount, or a span that ends before it starts."""
        spans = list(spans)
        given = np.asarray(amounts)
        held = np.broadcast_to(given, (len(spans),)).astype(float)
        if len(held) and not (np.all(np.isfinite(held)) and held.min() >= 0):
            raise ValueError(f"amounts must be finite and not negative, got {amounts}")
        unknown = {name for span in spans for name in span} - self._index.keys()
        if unknown:
            raise ValueError(f"unknown tasks {sorted(unknown)}")
        index = self._index
        rise = self.start[np.fromiter((index[first] for first, _ in spans), int, len(spans))]
        fall = self.end[np.fromiter((index[last] for _, last in spans), int, len(spans))]
        if np.any(fall < rise):
            bad = int(np.flatnonzero(fall < rise)[0])
            raise ValueError(f"span {spans[bad]} ends before it starts")
        times, where = np.unique(np.r_[0.0, rise, fall], return_inverse=True)
        levels = np.cumsum(np.bincount(where, weights=np.r_[0.0, held, -held],
                                       minlength=len(times)))
        if np.issubdtype(given.dtype, np.integer):
            return times, np.rint(levels).astype(int)
        # Sums of fractions leave rounding dust where everything is released: that is 0.
        dust = 1e-12 * held.sum()
        return times, np.where(levels <= dust, 0.0, levels)


def _indexed(tasks: tuple[Task, ...]) -> dict[str, int]:
    """Each task's position by name; raises ValueError for a duplicate name, a negative or
    non-finite duration or release time."""
    index: dict[str, int] = {}
    for i, task in enumerate(tasks):
        if task.name in index:
            raise ValueError(f"two tasks are named {task.name!r}")
        if not math.isfinite(task.duration) or task.duration < 0:
            raise ValueError(f"task {task.name!r} has duration {task.duration}")
        if not math.isfinite(task.release) or task.release < 0:
            raise ValueError(f"task {task.name!r} has release time {task.release}")
        index[task.name] = i
    return index


def schedule(tasks: Iterable[Task]) -> Schedule:
    """Start and end times of `tasks` (see the module docstring). Raises ValueError for a
    duplicate or unknown name, a negative or non-finite duration or release time, or a
    dependency cycle (through `after` or through the order of a resource's tasks)."""
    tasks = tuple(tasks)
    index = _indexed(tasks)
    # Edges: every dependency, and each task's predecessor on its resource.
    preds: list[list[int]] = [[] for _ in tasks]
    last_on: dict[str, int] = {}
    for i, task in enumerate(tasks):
        for name in task.after:
            if name not in index:
                raise ValueError(f"task {task.name!r} waits for unknown task {name!r}")
            preds[i].append(index[name])
        if task.resource in last_on:
            preds[i].append(last_on[task.resource])
        last_on[task.resource] = i
    # Python floats in the loop: indexing numpy arrays one element at a time costs more
    # than the arithmetic (half of 9.2's timing of a 512-task pipeline).
    start = [0.0] * len(tasks)
    end = [0.0] * len(tasks)
    for i in _topological_order(preds):
        start[i] = max([tasks[i].release, *(end[p] for p in preds[i])])
        end[i] = start[i] + tasks[i].duration
    resources = tuple(dict.fromkeys(task.resource for task in tasks))
    return Schedule(tasks, np.array(start, dtype=float), np.array(end, dtype=float),
                    resources, index)


def schedule_at(tasks: Iterable[Task], start: Sequence[float]) -> Schedule:
    """A schedule with the start times given (a trace read back, times from a closed
    form): end = start + duration; `after`, `release` and the order on a resource are not
    enforced, and tasks may overlap. Raises ValueError as `schedule` does, and for a start
    time that is negative or not finite or a count that does not match."""
    tasks = tuple(tasks)
    index = _indexed(tasks)
    start = np.array(start, dtype=float).reshape(-1)
    if len(start) != len(tasks):
        raise ValueError(f"{len(tasks)} tasks but {len(start)} start times")
    if len(start) and not (np.all(np.isfinite(start)) and start.min() >= 0):
        raise ValueError("start times must be finite and not negative")
    end = start + np.array([task.duration for task in tasks], dtype=float)
    resources = tuple(dict.fromkeys(task.resource for task in tasks))
    return Schedule(tasks, start, end, resources, index)


def _topological_order(preds: Sequence[Sequence[int]]) -> list[int]:
    remaining = [len(set(p)) for p in preds]
    succs: list[list[int]] = [[] for _ in preds]
    for i, p in enumerate(preds):
        for j in set(p):
            succs[j].append(i)
    ready = [i for i, count in enumerate(remaining) if count == 0]
    order = []
    while ready:
        i = ready.pop()
        order.append(i)
        for k in succs[i]:
            remaining[k] -= 1
            if remaining[k] == 0:
                ready.append(k)
    if len(order) != len(preds):
        raise ValueError("the tasks' dependencies form a cycle")
    return order


def chain(resource: str, durations: Sequence[float], prefix: str, *, kind: str = "",
          labels: Sequence[str] | None = None) -> list[Task]:
    """Tasks `prefix0`, `prefix1`, ... one after another on one resource."""
    return [Task(f"{prefix}{i}", resource, float(d), kind=kind,
                 label=labels[i] if labels is not None else "")
            for i, d in enumerate(durations)]
