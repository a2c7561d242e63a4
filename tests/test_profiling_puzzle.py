"""Figure 13.1: the puzzle's steps (timed by the scheduler, worked out by hand here), the
analysis of a trace (the shipped sample, worked out by hand), traces of 8.2, 9.2 and 13.1
read back unchanged, files that cannot be read, and --open-trace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuviz import catalog
from gpuviz.app import main
from gpuviz.core import trace as trace_module
from gpuviz.core.schedule import Task, schedule_at
from gpuviz.core.trace import COMMUNICATION, COMPUTE, CPU, Lane, Trace, read_trace, write_trace
from gpuviz.models.profiling import (
    CASES,
    PROBLEMS,
    PuzzleModel,
    analyse,
    case_traces,
    profile_readouts,
)
from gpuviz.paths import resource
from gpuviz.trace_reading import TraceError, read_profile

SAMPLE = resource("profiling", "sample_trace.json")
US = 1e-6


def us(seconds: float) -> float:
    return round(seconds / US, 6)


# ---------------------------------------------------------------------------------------
# The puzzle: each case's step and its fix
# ---------------------------------------------------------------------------------------

# Launches take 3.6 µs. The healthy large step: the copy 3.6-23.6, F1-F4 (50 each) to
# 223.6, B1-B4 (100 each) to 623.6, each bucket's all-reduce (80) after its B, AR4 to
# 703.6, Adam (40) to 743.6.
HEALTHY = 743.6
STEPS = {
    # The CPU waits for F4 (223.6), runs 150 of Python, launches B1 (3.6): B1 starts at
    # 377.2, B4 ends 777.2, AR4 857.2, Adam 897.2.
    "A": ("sync", 897.2, HEALTHY),
    # 45 launches of 3.6 end at 162.0; the last optimizer kernel (1) ends 163.0. Fused: F1
    # starts when launched (7.2) and F4 ends 39.2; B1-B4 (12 each) to 87.2, AR4 (5) to
    # 92.2, the fused Adam (8) to 100.2.
    "B": ("launch", 163.0, 100.2),
    # One all-reduce of 320 after B4 (623.6), then Adam: 983.6.
    "C": ("comm", 983.6, HEALTHY),
    # The slowest rank (1.3x: copy 26, F 65, B 130, from 3.6) ends B4 at 809.6; AR4 889.6,
    # Adam 929.6.
    "D": ("straggler", 929.6, HEALTHY),
    # The batch comes at 250: everything 250 later.
    "E": ("loader", 993.6, HEALTHY),
}


@pytest.mark.parametrize("case", list(STEPS))
def test_each_case_and_its_fix(case):
    problem, before, after = STEPS[case]
    assert CASES[case][0] == problem
    with_problem, fixed = (analyse(trace) for trace in case_traces(case))
    assert us(with_problem.step_time) == pytest.approx(before, abs=1e-6)
    assert us(fixed.step_time) == pytest.approx(after, abs=1e-6)
    # Every number of the breakdown adds up to the step.
    for p in (with_problem, fixed):
        assert p.compute + p.communication + p.memcpy + p.idle == pytest.approx(p.step_time)
        assert p.host_wait + p.kernel_wait == pytest.approx(p.idle)


def test_what_each_case_shows_in_its_numbers():
    profiles = {case: analyse(case_traces(case)[0]) for case in CASES}
    # The sync: the GPU idles from F4's end to B1's launch, 150 + 3.6, and 3.6 before the
    # copy: all waiting for the host.
    assert us(profiles["A"].host_wait) == pytest.approx(157.2)
    # Launch-bound: the GPU waits for every launch; 40 compute kernels, not 9.
    assert profiles["B"].kernels == 40 and profiles["B"].launch_gaps == 41
    # Exposed communication: nothing of the one all-reduce overlaps compute.
    assert profiles["C"].overlap == 0 and us(profiles["C"].communication) == 320
    # The straggler: the GPU idles with every kernel launched, waiting for the other rank
    # (AR2 ends at 629.6, AR3 starts at 679.6; AR3 ends at 759.6, AR4 starts at 809.6).
    assert us(profiles["D"].kernel_wait) == pytest.approx(50 + 50)
    # The loader: 250 of waiting for the host before the copy is even launched.
    assert us(profiles["E"].host_wait) == pytest.approx(253.6)


def test_naming_the_problem_and_applying_the_fix():
    model = PuzzleModel()
    readouts = model.readouts()
    assert readouts["answer"].text == "none yet" and readouts["speedup"].value is None
    model.set("diagnosis", "launch")
    assert model.readouts()["answer"].text == "not quite"
    assert PROBLEMS["sync"].hint in model.comment()
    model.set("diagnosis", "sync")
    assert model.readouts()["answer"].text == "right"
    model.set("fixed", True)
    speedup = model.readouts()["speedup"]
    assert speedup.value == pytest.approx(897.2 / 743.6) and speedup.text == "1.21×"
    assert us(model.readouts()["step_time"].value * 1e-6) == pytest.approx(743.6)
    assert PROBLEMS["sync"].fix in model.comment()
    assert us(model.trace().schedule.step_time * model.trace().seconds) == pytest.approx(743.6)
    model.set("case", "B")  # a new case starts unnamed and unfixed
    assert (model.diagnosis, model.fixed) == ("none", False)


# ---------------------------------------------------------------------------------------
# A trace: the shipped sample, worked out by hand
# ---------------------------------------------------------------------------------------

def test_the_sample_trace():
    """tools/regenerate/sample_trace.py's step (times in µs from its start). GPU busy:
    the copy 58-78; compute 78-228 and 268-508 and 608-638 (420); NCCL 348-448 (inside
    compute) and 528-608 (80 exposed). Idle: 0-58 (the copy's launch returns at 58),
    228-268 (B1's launch returns at 268), 508-528 (AR2 was launched at 302: a kernel
    wait) and 638-640 (the step's annotation ends at 640, no kernel follows)."""
    profile = read_profile(SAMPLE)
    assert us(profile.step_time) == pytest.approx(640)
    assert [us(t) for t in (profile.compute, profile.communication, profile.memcpy,
                            profile.idle)] == pytest.approx([420, 80, 20, 120])
    assert us(profile.host_wait) == pytest.approx(58 + 40 + 2)
    assert us(profile.kernel_wait) == pytest.approx(20)
    assert profile.overlap == pytest.approx(100 / 180)
    assert (profile.kernels, profile.nccl_kernels, profile.memcpys,
            profile.launch_gaps) == (7, 2, 1, 3)
    rows = profile.rows
    assert set(rows.resources) == {CPU, COMPUTE, COMMUNICATION}
    waits = [t.text for t in rows.tasks if t.kind == "wait"]
    assert waits == ["enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
                     "cudaStreamSynchronize"]


def test_the_sample_is_what_its_script_writes():
    import runpy

    script = runpy.run_path(str(Path(__file__).parents[1] / "tools" / "regenerate"
                                / "sample_trace.py"))
    assert script["trace_text"]() == SAMPLE.read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------
# Traces of the app read back: the same rows and the same numbers
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("number, values", [
    ("8.2", {}), ("8.2", {"bucket_mb": 2400.0}), ("9.2", {}), ("13.1", {"case": "D"}),
    ("13.1", {"case": "B", "fixed": True})])
def test_an_exported_trace_opens_back_unchanged(number, values, tmp_path):
    model = catalog.figure(number).make_model()
    for name, value in values.items():
        model.set(name, value)
    path = tmp_path / "trace.json"
    write_trace(model.trace(), path)
    want, got = analyse(model.trace()), read_profile(path)
    for field in ("step_time", "compute", "communication", "memcpy", "idle", "host_wait",
                  "kernel_wait"):
        assert getattr(got, field) == pytest.approx(getattr(want, field), abs=1e-12), field
    assert (got.kernels, got.nccl_kernels, got.memcpys, got.launch_gaps) == (
        want.kernels, want.nccl_kernels, want.memcpys, want.launch_gaps)
    assert boxes(got.rows) == boxes(want.rows)
    if number == "8.2":  # the all-reduce lane is the NCCL row; what it leaves exposed
        result = model.trace().schedule
        assert us(got.communication) == pytest.approx(us(model.out.exposed), abs=1e-6)
        assert us(got.compute) == pytest.approx(us(result.busy("backward")), abs=1e-6)
    opened = PuzzleModel()
    opened.open_trace(path.name, got)
    assert opened.readouts()["step_time"].text == profile_readouts(want)["step_time"].text


def boxes(rows) -> list[tuple]:
    """The rows' boxes (row, kind, start and end in µs), in one order."""
    return sorted((t.resource, t.kind, round(us(a), 6), round(us(b), 6))
                  for t, a, b in zip(rows.tasks, rows.start, rows.end, strict=True))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([CPU, COMPUTE, COMMUNICATION]),
                          st.sampled_from(["launch", "wait", "compute", "memcpy", "nccl"]),
                          st.floats(0, 100), st.floats(0, 50)), min_size=1, max_size=12))
def test_the_breakdown_always_adds_up(boxes):
    tasks = [Task(f"t{i}", row, duration, kind=kind)
             for i, (row, kind, _, duration) in enumerate(boxes)]
    lanes = tuple(Lane("GPU 0", row, row=row) for row in (CPU, COMPUTE, COMMUNICATION))
    p = analyse(Trace(schedule_at(tasks, [start for _, _, start, _ in boxes]), lanes))
    assert p.compute + p.communication + p.memcpy + p.idle == pytest.approx(p.step_time)
    assert p.host_wait + p.kernel_wait == pytest.approx(p.idle)
    assert min(p.compute, p.communication, p.memcpy, p.idle + 1e-9) >= 0


# ---------------------------------------------------------------------------------------
# Files that cannot be read, and the command line
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, needle", [
    ("{not json", "not a JSON trace"),
    ('{"traceEvents": [{"ph": "X", "name": "a"', "not a JSON trace"),
    ('{"traceEvents": []}', "no complete"),
    ('{"other": 1}', "no list of trace events"),
    ('{"traceEvents": [{"ph": "X", "pid": 1, "tid": 1, "name": "k", "ts": "0", "dur": 1}]}',
     "ts is '0', not a number"),
    ('{"traceEvents": [3]}', "not a trace event"),
])
def test_a_bad_file_gets_one_line(tmp_path, text, needle):
    path = tmp_path / "bad.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(TraceError) as error:
        read_profile(path)
    line = str(error.value)
    assert needle in line and line.startswith("bad.json: ") and "\n" not in line
    assert "torch.profiler" in line  # what is expected


def test_a_huge_file_is_refused_before_it_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr(trace_module, "MAX_TRACE_BYTES", 1000)
    with pytest.raises(TraceError, match="too large"):
        read_profile(SAMPLE)
    monkeypatch.setattr(trace_module, "MAX_TRACE_BYTES", 10**9)
    monkeypatch.setattr(trace_module, "MAX_TRACE_EVENTS", 10)
    with pytest.raises(TraceError, match="too large"):
        read_profile(SAMPLE)


def test_command_line_reads_out_a_trace(capsys):
    assert main(["--figure", "13.1", "--open-trace", str(SAMPLE), "--readout"]) == 0
    readouts = json.loads(capsys.readouterr().out)["readouts"]
    assert readouts["source"]["text"] == "sample_trace.json"
    assert readouts["step_time"]["text"] == "640 µs"
    assert readouts["kernel_wait"]["text"] == "20 µs"
    assert readouts["overlap"]["text"] == "55.6%"


def test_command_line_opens_the_window_at_13_1_with_the_trace(monkeypatch):
    seen = {}

    def fake_run_window(spec, values, theme_name, warnings, **options):
        seen.update(options, figure=spec.number)
        return 0

    monkeypatch.setattr("gpuviz.app.run_window", fake_run_window)
    assert main(["--open-trace", str(SAMPLE)]) == 0
    assert seen["figure"] == "13.1" and seen["trace_file"] == SAMPLE


@pytest.mark.parametrize("args, needle", [
    (["--figure", "13.1", "--open-trace", "{dir}/bad.json", "--readout"], "not a JSON"),
    (["--figure", "13.1", "--open-trace", "{dir}/missing.json", "--readout"],
     "cannot read"),
    (["--figure", "2.1", "--open-trace", "{dir}/bad.json"], "in figure 13.1, not 2.1"),
])
def test_command_line_refuses_a_bad_trace_with_one_line(tmp_path, capsys, args, needle):
    (tmp_path / "bad.json").write_text("[{", encoding="utf-8")
    code = main([a.format(dir=tmp_path) for a in args])
    err = capsys.readouterr().err
    assert code == 2 and needle in err and err.count("\n") == 1


# ---------------------------------------------------------------------------------------
# The window: File > Open trace, off the UI thread
# ---------------------------------------------------------------------------------------

@pytest.fixture
def window(themed, qtbot):
    from gpuviz import state
    from gpuviz.main_window import MainWindow

    state.reset_all()
    window = MainWindow("dark")
    qtbot.addWidget(window)
    window.show()
    yield window
    window.clock.stop()
    state.reset_all()


def test_open_trace_in_the_window(window, qtbot, tmp_path):
    assert window.open_trace(SAMPLE)
    model = window.models["13.1"]
    qtbot.waitUntil(lambda: model.opened is not None, timeout=5000)
    assert window.current == "13.1" and model.readouts()["step_time"].text == "640 µs"
    page = window.pages["13.1"]
    qtbot.waitUntil(lambda: page.view.back.isVisible(), timeout=2000)
    view = page.view  # no timeline picked, nothing to name or fix in a trace
    assert not any(button.isChecked() for button in view.cases.buttons.values())
    assert not view.names.isEnabled() and not view.fix.isEnabled()
    view.cases.buttons["A"].click()  # the timeline shown last returns to the puzzle too
    assert model.opened is None
    qtbot.waitUntil(lambda: view.names.isEnabled() and view.fix.isEnabled(), timeout=2000)
    assert view.cases.buttons["A"].isChecked()
    assert window.open_trace(SAMPLE)
    qtbot.waitUntil(lambda: page.view.back.isVisible(), timeout=5000)
    page.view.back.click()  # back to the puzzle
    assert model.opened is None and model.readouts()["source"].text == "timeline A"
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": 5}', encoding="utf-8")
    count = len(window.messages)
    assert window.open_trace(bad)
    qtbot.waitUntil(lambda: len(window.messages) > count, timeout=5000)
    assert window.messages[-1].startswith("bad.json: ") and model.opened is None


def test_reading_reports_progress_and_stops_when_cancelled(qtbot, monkeypatch):
    from PySide6.QtCore import Qt

    from gpuviz.trace_reading import TraceJob

    monkeypatch.setattr(trace_module, "_PROGRESS_EVERY", 5)
    shares = []
    read_trace(SAMPLE, shares.append)
    assert len(shares) > 2 and shares == sorted(shares) and shares[0] >= 0 >= shares[-1] - 1
    job = TraceJob(SAMPLE)
    told = []
    job.finished_reading.connect(told.append)
    job.failed.connect(told.append)
    # Cancel at the first report (as the dialog's button does meanwhile): the job stops
    # at the next one, saying nothing.
    job.progressed.connect(lambda _: job.cancel(), Qt.DirectConnection)
    with qtbot.waitSignal(job.finished, timeout=5000):
        job.start()
    assert told == []
