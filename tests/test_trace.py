"""Timelines as Chrome traces (gpuviz.core.trace): written from a figure's model, read back,
saved from the command line (File > Export trace: tests/test_export.py)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuviz import catalog
from gpuviz.app import main
from gpuviz.core.schedule import Task, schedule, schedule_at
from gpuviz.core.trace import (
    MICROSECONDS,
    Lane,
    Trace,
    has_trace,
    read_trace,
    trace_events,
    trace_from_events,
    write_trace,
)

TIMELINE_FIGURES = ("1.2", "7.4", "8.2", "8.3", "9.2")
SETTINGS = {  # defaults, and settings that change the shape of the timeline
    "1.2": [{}, {"warps": 16, "issue_cycles": 1}],
    "7.4": [{}, {"scheme": "flat"}, {"scheme": "flat", "nodes": 1}, {"nodes": 32}],
    "8.2": [{}, {"bucket_mb": 1.0}, {"bucket_mb": 2400.0, "tokens": 512}],
    "8.3": [{}, {"prefetch": False}, {"reshard": False, "units": 12},
            {"prefetch": False, "reshard": False, "units": 2}],
    "9.2": [{}, {"pipeline": "1f1b", "stages": 8}, {"pipeline": "zb_h1", "micro_batches": 3},
            {"pipeline": "interleaved", "stages": 2, "micro_batches": 4, "chunks": 4}],
}


def model_of(number, values):
    model = catalog.figure(number).make_model()
    with model.batch():
        for name, value in values.items():
            model.set(name, value)
    return model


def cases():
    return [(number, values) for number in TIMELINE_FIGURES for values in SETTINGS[number]]


@pytest.mark.parametrize("number, values", cases())
def test_every_box_is_one_event_at_its_time_in_lane_order(number, values, tmp_path):
    model = model_of(number, values)
    trace = model.trace()
    result = trace.schedule
    path = tmp_path / "trace.json"
    write_trace(trace, path)
    events = json.loads(path.read_text(encoding="utf-8"))["traceEvents"]

    meta = [e for e in events if e["ph"] == "M"]
    names = {e["args"]["name"] for e in meta if e["name"] == "process_name"}
    assert names == set(trace.devices) and len(names) == 1
    threads = sorted((e for e in meta if e["name"] == "thread_sort_index"),
                     key=lambda e: e["args"]["sort_index"])
    thread_names = {e["tid"]: e["args"]["name"] for e in meta if e["name"] == "thread_name"}
    view_lanes = [lane.text for lane in trace.lanes]
    assert [thread_names[e["tid"]] for e in threads] == view_lanes
    assert view_lanes == {
        "1.2": [f"Warp {i + 1}" for i in range(values.get("warps", 1))] + ["Scheduler"],
        "7.4": ["NVLink", "network"], "8.2": ["Backward", "All-reduce"],
        "8.3": ["Compute", "Communication"],
        "9.2": [f"Stage {i}" for i in range(values.get("stages", 4))]}[number]

    boxes = [e for e in events if e["ph"] == "X"]
    assert len(boxes) == len(result.tasks)  # every box once, nothing for idle time
    tid_of = {e["args"]["name"]: e["tid"] for e in meta if e["name"] == "thread_name"}
    for event in boxes:
        i = result.index(event["args"]["task"])
        task = result.tasks[i]
        assert event["name"] == task.text and event["args"]["kind"] == task.kind
        to_us = trace.seconds * 1e6
        assert event["ts"] == pytest.approx(result.start[i] * to_us, rel=1e-12, abs=1e-9)
        assert event["dur"] == pytest.approx(task.duration * to_us, rel=1e-12)
        lane = next(lane for lane in trace.lanes if lane.resource == task.resource)
        assert event["tid"] == tid_of[lane.text] and event["pid"] == 1
    # Per lane the events tile the busy time: the idle gaps are exactly what is left.
    for lane in trace.lanes:
        on_lane = [e for e in boxes if e["tid"] == tid_of[lane.text]]
        assert sum(e["dur"] for e in on_lane) == pytest.approx(
            result.busy(lane.resource) * trace.seconds * 1e6, rel=1e-9)

    back = read_trace(path)
    assert back.lanes == trace.lanes and back.seconds == MICROSECONDS
    assert_same_schedule(back, trace)


def assert_same_schedule(back: Trace, trace: Trace) -> None:
    """Same tasks (names, lanes, kinds, texts) at the same times, in seconds."""
    got, want = back.schedule, trace.schedule
    assert sorted(t.name for t in got.tasks) == sorted(t.name for t in want.tasks)
    for task in want.tasks:
        i, j = want.index(task.name), got.index(task.name)
        other = got.tasks[j]
        assert (other.resource, other.kind, other.text) == (task.resource, task.kind,
                                                            task.text)
        assert got.start[j] * back.seconds == pytest.approx(
            want.start[i] * trace.seconds, rel=1e-12, abs=1e-15)
        assert got.end[j] * back.seconds == pytest.approx(
            want.end[i] * trace.seconds, rel=1e-12, abs=1e-15)
    scale = back.seconds / trace.seconds
    assert got.step_time * scale == pytest.approx(want.step_time, rel=1e-12)


def test_only_timeline_figures_declare_a_trace():
    with_trace = [spec.number for spec in catalog.all_figures()
                  if has_trace(spec.make_model())]
    assert set(TIMELINE_FIGURES) <= set(with_trace)
    assert "2.1" not in with_trace and catalog.figure("2.1").make_model().trace() is None


def test_events_of_other_tools_are_read_in_their_order():
    """The array form, string ids, sort indices, no args of ours, repeated names, and
    events we do not draw (counters, instants) skipped."""
    events = [
        {"name": "process_name", "ph": "M", "pid": "gpu1", "args": {"name": "GPU 1"}},
        {"name": "process_name", "ph": "M", "pid": "gpu0", "args": {"name": "GPU 0"}},
        {"name": "process_sort_index", "ph": "M", "pid": "gpu1", "args": {"sort_index": 1}},
        {"name": "process_sort_index", "ph": "M", "pid": "gpu0", "args": {"sort_index": 0}},
        {"name": "thread_name", "ph": "M", "pid": "gpu0", "tid": 7, "args": {"name": "nccl"}},
        {"name": "gemm", "ph": "X", "pid": "gpu1", "tid": 3, "ts": 5, "dur": 10},
        {"name": "gemm", "ph": "X", "pid": "gpu0", "tid": 3, "ts": 0, "dur": 10,
         "cat": "kernel"},
        {"name": "allreduce", "ph": "X", "pid": "gpu0", "tid": 7, "ts": 4, "dur": 8},
        {"name": "mem", "ph": "C", "pid": "gpu0", "ts": 1, "args": {"bytes": 3}},
        {"name": "sync", "ph": "i", "pid": "gpu0", "tid": 3, "ts": 2},
        {"name": None, "ph": "M", "pid": ["odd"], "args": {}},
    ]
    trace = trace_from_events(events)
    assert [(lane.device, lane.text) for lane in trace.lanes] == [
        ("GPU 0", "thread 3"), ("GPU 0", "nccl"), ("GPU 1", "thread 3")]
    result = trace.schedule
    assert [t.name for t in result.tasks] == ["gemm", "gemm'", "allreduce"]
    assert result.step_time == 15.0
    gpu0 = [lane.resource for lane in trace.lanes if lane.device == "GPU 0"]
    assert result.busy(gpu0) == 12.0  # the overlap of gemm and allreduce counts once
    assert trace_from_events(json.loads(json.dumps(events))).lanes == trace.lanes


@pytest.mark.parametrize("text, message", [
    ("not json", "not a JSON trace"),
    ('{"events": []}', "no list"),
    ('[1]', "not a trace event"),
    ('[{"ph": "X", "pid": 1, "tid": 1, "name": "a", "ts": 0}]', "dur"),
    ('[{"ph": "X", "pid": 1, "tid": 1, "name": "a", "ts": "0", "dur": 1}]', "ts"),
    ('[{"ph": "X", "pid": 1, "tid": 1, "name": "a", "ts": -5, "dur": 1}]', "start times"),
])
def test_a_file_that_is_not_a_trace_is_refused(tmp_path, text, message):
    path = tmp_path / "bad.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        read_trace(path)


@st.composite
def traces(draw):
    count = draw(st.integers(0, 12))
    resources = ["compute", "comm", "copy"]
    tasks = [Task(f"t{i}", draw(st.sampled_from(resources)),
                  draw(st.floats(0, 1e3)), kind=draw(st.sampled_from(["", "f", "b"])),
                  label=draw(st.sampled_from(["", "x", "F1"])))
             for i in range(count)]
    if draw(st.booleans()):
        result = schedule(tasks)
    else:
        result = schedule_at(tasks, draw(st.lists(st.floats(0, 1e3), min_size=count,
                                                  max_size=count)))
    lanes = tuple(Lane(f"GPU {k % 2}", r, r.title()) for k, r in enumerate(resources))
    return Trace(result, lanes, draw(st.sampled_from([1.0, 1e-3, 1e-6])))


@given(traces())
def test_events_read_back_give_the_schedule(trace):
    events = json.loads(json.dumps(trace_events(trace)))
    assert all(e["ts"] >= 0 and e["dur"] >= 0 for e in events if e["ph"] == "X")
    back = trace_from_events(events)
    assert_same_schedule(back, trace)
    # Every lane comes back, tasks or not, grouped by device in the figure's order.
    assert back.lanes == tuple(sorted(trace.lanes, key=lambda lane: (
        trace.devices.index(lane.device), trace.lanes.index(lane))))


# ---------------------------------------------------------------------------------------
# The command line and the window
# ---------------------------------------------------------------------------------------

def test_command_line_writes_the_trace(tmp_path, capsys):
    path = tmp_path / "fsdp.json"
    assert main(["--figure", "8.3", "--set", "units=4", "--trace", str(path)]) == 0
    back = read_trace(path)
    assert_same_schedule(back, model_of("8.3", {"units": 4}).trace())


@pytest.mark.parametrize("args, needle", [
    (["--figure", "2.1", "--trace", "{dir}/x.json"], "has no timeline"),
    (["--figure", "8.3", "--trace", "{dir}/missing/x.json"], "cannot write"),
    (["--trace", "{dir}/x.json"], "need --figure"),
])
def test_command_line_refuses_with_one_line(tmp_path, capsys, args, needle):
    code = main([a.format(dir=tmp_path) for a in args])
    err = capsys.readouterr().err
    assert code == 2 and needle in err and err.count("\n") == 1
    if "no timeline" in needle:
        assert "1.2, 7.4, 8.2, 8.3" in err
