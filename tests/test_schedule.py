"""The task scheduler shared by the timeline figures (gpuviz.core.schedule)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuviz.core.schedule import Task, chain, schedule, schedule_at


def test_one_stream_runs_its_tasks_back_to_back():
    result = schedule(chain("gpu", [1.0, 2.0, 3.0], "k"))
    assert result.start.tolist() == [0.0, 1.0, 3.0]
    assert result.end.tolist() == [1.0, 3.0, 6.0]
    assert result.step_time == 6.0
    assert result.idle("gpu") == 0.0 and result.idle_intervals("gpu") == []


def test_communication_overlaps_compute_and_the_last_one_is_exposed():
    """Backward of three layers (2 each); each gradient's all-reduce (1.5) starts when its
    layer ends and the previous all-reduce is done: only the last one sticks out."""
    tasks = chain("compute", [2.0, 2.0, 2.0], "b", kind="compute")
    tasks += [Task(f"ar{i}", "network", 1.5, after=(f"b{i}",), kind="network")
              for i in range(3)]
    result = schedule(tasks)
    assert [result.start[result.index(f"ar{i}")] for i in range(3)] == [2.0, 4.0, 6.0]
    assert result.step_time == 7.5
    assert result.exposed_after("compute") == 1.5
    assert result.idle_intervals("compute") == [(6.0, 7.5)]
    assert result.idle_intervals("network") == [(0.0, 2.0), (3.5, 4.0), (5.5, 6.0)]
    assert result.waiting("network") == pytest.approx(3.0)
    assert result.busy("network") == 4.5 and result.idle("network") == 3.0


def test_slow_communication_queues_up():
    tasks = chain("compute", [1.0, 1.0], "b")
    tasks += [Task(f"ar{i}", "network", 3.0, after=(f"b{i}",)) for i in range(2)]
    result = schedule(tasks)
    assert result.start[result.index("ar1")] == 4.0  # waits for ar0, not for b1
    assert result.step_time == 7.0
    assert result.waiting("network") == 1.0


def test_a_dependency_on_another_resource_delays_the_stream():
    """FSDP-like: compute of unit i needs its all-gather."""
    tasks = [Task("ag0", "net", 2.0), Task("ag1", "net", 2.0),
             Task("f0", "gpu", 1.0, after=("ag0",)), Task("f1", "gpu", 1.0, after=("ag1",))]
    result = schedule(tasks)
    assert result.start[result.index("f1")] == 4.0
    assert result.waiting("gpu") == 2.0 + 1.0
    assert result.idle_intervals("gpu") == [(0.0, 2.0), (3.0, 4.0)]


@pytest.mark.parametrize("tasks, message", [
    ([Task("a", "r", 1.0), Task("a", "r", 1.0)], "two tasks"),
    ([Task("a", "r", 1.0, after=("x",))], "unknown"),
    ([Task("a", "r", -1.0)], "duration"),
    ([Task("a", "r", math.nan)], "duration"),
    ([Task("a", "r", 1.0, after=("b",)), Task("b", "s", 1.0, after=("a",))], "cycle"),
    # b waits for c, which runs after b's stream-mate a... and a waits for b: a cycle
    # through the order of one stream.
    ([Task("a", "r", 1.0, after=("b",)), Task("c", "r", 1.0), Task("b", "s", 1.0,
                                                                    after=("c",))], "cycle"),
])
def test_bad_input_is_refused(tasks, message):
    with pytest.raises(ValueError, match=message):
        schedule(tasks)


def test_empty():
    result = schedule([])
    assert result.step_time == 0.0 and result.resources == ()


@st.composite
def task_sets(draw):
    count = draw(st.integers(1, 25))
    resources = ["compute", "comm", "link", "cpu"]
    tasks = []
    for i in range(count):
        deps = draw(st.lists(st.integers(0, max(i - 1, 0)), max_size=3)) if i else []
        tasks.append(Task(f"t{i}", draw(st.sampled_from(resources)),
                          draw(st.floats(0, 1e3, allow_nan=False)),
                          after=tuple(sorted({f"t{d}" for d in deps})),
                          release=draw(st.sampled_from([0.0, 0.0, 5.0, 250.0]))))
    return tasks


@given(task_sets())
def test_invariants(tasks):
    result = schedule(tasks)
    eps = 1e-9 * max(1.0, result.step_time)
    for i, task in enumerate(tasks):
        assert result.end[i] == pytest.approx(result.start[i] + task.duration)
        assert result.start[i] >= task.release  # never before it arrives
        for name in task.after:  # no task starts before its dependencies end
            assert result.start[i] >= result.end[result.index(name)] - eps
    for resource in result.resources:  # one task at a time, in the given order
        runs = result.on(resource)
        for a, b in zip(runs, runs[1:], strict=False):
            assert result.start[b] >= result.end[a] - eps
        busy = result.busy(resource)
        assert result.step_time >= busy - eps
        gaps = result.idle_intervals(resource)
        assert sum(b - a for a, b in gaps) == pytest.approx(result.idle(resource), abs=eps)
        assert 0 <= result.waiting(resource) <= result.idle(resource) + eps
    assert result.step_time == pytest.approx(max(result.end))


def test_a_task_waits_for_its_release_time():
    """Requests arriving at 0, 5 and 6 on one server of 2 per request: the second waits
    for its arrival, the third for the second."""
    tasks = [Task(f"r{i}", "server", 2.0, release=at) for i, at in enumerate((0.0, 5.0, 6.0))]
    result = schedule(tasks)
    assert result.start.tolist() == [0.0, 5.0, 7.0]
    assert result.idle_intervals("server") == [(2.0, 5.0)]
    assert result.waiting("server") == 3.0


def test_a_schedule_from_given_times_keeps_them_and_counts_overlap_once():
    """A kernel nested in another and an overlapping copy: busy is the union."""
    tasks = [Task("outer", "gpu", 4.0), Task("inner", "gpu", 1.0), Task("copy", "dma", 3.0),
             Task("late", "gpu", 1.0)]
    result = schedule_at(tasks, [1.0, 2.0, 3.0, 8.0])
    assert result.end.tolist() == [5.0, 3.0, 6.0, 9.0]
    assert result.busy("gpu") == 5.0 and result.idle("gpu") == 4.0
    assert result.idle_intervals("gpu") == [(0.0, 1.0), (5.0, 8.0)]
    # One device's two streams together: busy from 1 to 6 and from 8 to 9.
    assert result.busy(("gpu", "dma")) == 6.0
    assert result.idle_intervals(["gpu", "dma"]) == [(0.0, 1.0), (6.0, 8.0)]
    assert result.on("gpu") == [0, 1, 3]


def test_given_times_are_checked():
    with pytest.raises(ValueError, match="start times"):
        schedule_at([Task("a", "r", 1.0)], [1.0, 2.0])
    with pytest.raises(ValueError, match="start times"):
        schedule_at([Task("a", "r", 1.0)], [math.inf])
    with pytest.raises(ValueError, match="release"):
        schedule([Task("a", "r", 1.0, release=-1.0)])


def test_level_holds_from_a_start_to_an_end():
    """Two micro-batches: each held from its forward's start to its backward's end."""
    tasks = chain("stage", [1.0, 1.0, 2.0, 2.0], "t")  # F0 F1 B0 B1 as t0..t3
    result = schedule(tasks)
    times, levels = result.level([("t0", "t2"), ("t1", "t3")])
    assert times.tolist() == [0.0, 1.0, 4.0, 6.0]
    assert levels.tolist() == [1, 2, 1, 0] and levels.dtype.kind == "i"
    # Freed and taken at one instant: no dip. Amounts weight the spans.
    times, levels = result.level([("t0", "t0"), ("t1", "t1")], amounts=[2.5, 1.0])
    assert times.tolist() == [0.0, 1.0, 2.0] and levels.tolist() == [2.5, 1.0, 0.0]
    assert [a.tolist() for a in result.level([])] == [[0.0], [0]]
    # Thirds taken and released together end at 0 exactly, not at rounding dust.
    thirds = result.level([("t0", "t1")] * 3 + [("t1", "t2")] * 3, 1 / 3)[1]
    assert thirds.min() == 0.0 and thirds[-1] == 0.0


@pytest.mark.parametrize("spans, amounts, message", [
    ([("t2", "t0")], 1, "ends before"),
    ([("t0", "nope")], 1, "unknown"),
    ([("t0", "t1")], -1, "negative"),
])
def test_bad_levels_are_refused(spans, amounts, message):
    result = schedule(chain("r", [1.0, 1.0, 1.0], "t"))
    with pytest.raises(ValueError, match=message):
        result.level(spans, amounts)


@given(task_sets(), st.data())
def test_union_and_level_invariants(tasks, data):
    """Given times (anything, overlaps included) and scheduled times alike: busy is at
    most the step and at least the longest task, gaps and busy add up, and a level never
    goes below 0 and ends at 0."""
    starts = data.draw(st.lists(st.floats(0, 1e3), min_size=len(tasks),
                                max_size=len(tasks)))
    for result in (schedule(tasks), schedule_at(tasks, starts)):
        eps = 1e-9 * max(1.0, result.step_time)
        groups = [(r,) for r in result.resources] + [result.resources]
        for group in groups:
            busy = result.busy(group)
            longest = max(t.duration for t in tasks if t.resource in group)
            assert longest - eps <= busy <= result.step_time + eps
            gaps = result.idle_intervals(group)
            assert sum(b - a for a, b in gaps) == pytest.approx(result.idle(group), abs=eps)
        spans = [(a.name, b.name) for a, b in zip(tasks, tasks[1:], strict=False)
                 if result.end[result.index(b.name)] >= result.start[result.index(a.name)]]
        times, levels = result.level(spans)
        assert np.all(np.diff(times) > 0) and times[0] == 0.0
        assert levels.min() >= 0 and levels[-1] == 0
