"""Tasks on resources: start and end times, busy and idle time per resource, the step time.

A small list scheduler for the timelines of Lessons 6, 8, 9, 10, 12 and 13. A resource is
anything that runs one task at a time: a GPU's compute stream, its communication stream,
a link, a CPU thread. Each resource runs its tasks in the order they are given, as a CUDA
stream does; a task starts when its resource is free and every task it depends on has
ended:

    start(t) = max(end of the previous task on resource(t), max end(d) for d in after(t))
    end(t)   = start(t) + duration(t)

The step time is the latest end. Everything a resource does not spend busy within the step
is idle; `idle_intervals` lists those gaps (a figure shades them violet) and `waiting`
counts the part of them spent waiting for another resource (the exposed time: e.g. a
compute stream that stops while the last all-reduce runs). Durations are in any one unit
(the figures use seconds); the scheduler never rounds.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

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

    def on(self, resource: str) -> list[int]:
        """Indices of the resource's tasks, in the order they run."""
        return [i for i, task in enumerate(self.tasks) if task.resource == resource]

    def busy(self, resource: str) -> float:
        return float(sum(self.tasks[i].duration for i in self.on(resource)))

    def idle(self, resource: str) -> float:
        """Time within the step the resource does nothing: step time - busy."""
        return self.step_time - self.busy(resource)

    def idle_intervals(self, resource: str, until: float | None = None
                       ) -> list[tuple[float, float]]:
        """The gaps of the resource between 0 and `until` (default: the step time)."""
        until = self.step_time if until is None else until
        gaps, free_from = [], 0.0
        for i in self.on(resource):
            if self.start[i] > free_from:
                gaps.append((free_from, float(self.start[i])))
            free_from = max(free_from, float(self.end[i]))
        if until > free_from:
            gaps.append((free_from, until))
        return gaps

    def waiting(self, resource: str) -> float:
        """Time the resource's tasks wait for a dependency after the resource is free: the
        exposed time of the work it waits for (a gap before its first task included)."""
        total, free_from = 0.0, 0.0
        for i in self.on(resource):
            total += max(0.0, float(self.start[i]) - free_from)
            free_from = float(self.end[i])
        return total

    def exposed_after(self, resource: str) -> float:
        """Time from the resource's last end to the step's end (e.g. communication that
        outlasts the last backward kernel)."""
        ends = [float(self.end[i]) for i in self.on(resource)]
        return self.step_time - max(ends) if ends else self.step_time


def schedule(tasks: Iterable[Task]) -> Schedule:
    """Start and end times of `tasks` (see the module docstring). Raises ValueError for a
    duplicate or unknown name, a negative or non-finite duration, or a dependency cycle
    (through `after` or through the order of a resource's tasks)."""
    tasks = tuple(tasks)
    index: dict[str, int] = {}
    for i, task in enumerate(tasks):
        if task.name in index:
            raise ValueError(f"two tasks are named {task.name!r}")
        if not np.isfinite(task.duration) or task.duration < 0:
            raise ValueError(f"task {task.name!r} has duration {task.duration}")
        index[task.name] = i
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
    start = np.zeros(len(tasks))
    end = np.zeros(len(tasks))
    for i in _topological_order(preds):
        start[i] = max((end[p] for p in preds[i]), default=0.0)
        end[i] = start[i] + tasks[i].duration
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
