"""Figure 9.2: what the figure's model adds to the pipeline builders (tested in
tests/test_tensor_pipeline.py): its readouts against the formulas of the notes for every
p, m and v of its ranges, ZB-H1 beside 1F1B, the message for interleaving with m not a
multiple of p, Next's marks, the stash over time and the trace."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuviz.models.tensor_pipeline.pipeline import (
    MAX_STOPS,
    NO_SCHEDULE,
    PIPELINE_CHOICES,
    PipelineModel,
    textbook_step,
    timed_pipeline,
)

MS = 1e-3


def model_at(**values) -> PipelineModel:
    model = PipelineModel()
    with model.batch():
        for name, value in values.items():
            model.set(name, value)
    return model


def value(model: PipelineModel, key: str) -> float | None:
    return model.readouts()[key].value


TIME_UNITS = {"s": 1.0, "ms": 1e-3, "µs": 1e-6, "ns": 1e-9}


def ms(model: PipelineModel, key: str) -> float:
    """A time readout in ms, whatever unit it picked."""
    readout = model.readouts()[key]
    return readout.value * TIME_UNITS[readout.unit] / MS


def test_defaults_gpipe_against_1f1b():
    """p = 4, m = 8, f = 1 ms, b = 2 ms: the same step (11 slots of 3 ms) and bubble 3/11;
    GPipe holds 8 micro-batches on every stage, 1F1B 4, 3, 2, 1."""
    gpipe = model_at()
    assert ms(gpipe, "step_time") == pytest.approx(33.0)
    assert gpipe.readouts()["step_time"].unit == "ms"
    assert value(gpipe, "bubble") == pytest.approx(100 * 3 / 11)
    assert value(gpipe, "formula") == pytest.approx(100 * 3 / 11)
    assert gpipe.readouts()["formula"].label == "(p − 1)/(m + p − 1)"
    assert ms(gpipe, "idle") == pytest.approx(9.0)
    assert list(gpipe.out.timed.peaks) == [8, 8, 8, 8]
    assert (value(gpipe, "beside_bubble"), value(gpipe, "beside_peak")) == (
        pytest.approx(100 * 3 / 11), 4)
    one_f_one_b = model_at(pipeline="1f1b")
    assert ms(one_f_one_b, "step_time") == pytest.approx(33.0)
    assert list(one_f_one_b.out.timed.peaks) == [4, 3, 2, 1]
    assert one_f_one_b.readouts()["beside_peak"].label.startswith("GPipe")
    assert value(one_f_one_b, "beside_peak") == 8
    assert one_f_one_b.readouts()["peak_last"].text == "1 micro-batch"


@pytest.mark.parametrize("pipeline", ["gpipe", "1f1b"])
def test_gpipe_and_1f1b_readouts_for_every_p_and_m(pipeline):
    """The notes: GPipe and 1F1B share the bubble (p − 1)/(m + p − 1) and the step;
    GPipe stashes m on every stage, 1F1B min(m, p − i) on stage i."""
    for p in range(2, 9):
        for m in range(1, 33):
            model = model_at(pipeline=pipeline, stages=p, micro_batches=m)
            share = 100 * (p - 1) / (m + p - 1)
            assert value(model, "bubble") == pytest.approx(share, rel=1e-9)
            assert value(model, "formula") == pytest.approx(share, rel=1e-12)
            assert value(model, "beside_bubble") == pytest.approx(share, rel=1e-9)
            assert ms(model, "step_time") == pytest.approx((m + p - 1) * 3.0, rel=1e-12)
            peaks = model.out.timed.peaks
            want = [m] * p if pipeline == "gpipe" else [min(m, p - i) for i in range(p)]
            assert list(peaks) == want
            assert (value(model, "peak_first"), value(model, "peak_last")) == (want[0],
                                                                               want[-1])


def test_interleaved_readouts_for_every_p_m_and_v():
    """Interleaving divides the idle time by v: share (p − 1)/(v m + p − 1); m must be a
    multiple of p, or there is no schedule and every schedule readout says so."""
    for p in range(2, 9):
        for m in range(1, 33):
            for v in range(1, 5):
                model = model_at(pipeline="interleaved", stages=p, micro_batches=m, chunks=v)
                readouts = model.readouts()
                if v > 1 and m % p:
                    assert not model.out.valid
                    for key in ("step_time", "bubble", "formula", "idle", "peak_first",
                                "peak_last", "time"):
                        assert readouts[key].value is None
                        assert readouts[key].text == NO_SCHEDULE
                    assert model.horizon == 0 and len(model.step_marks()) == 0
                    assert model.trace().schedule.tasks == ()
                    continue
                share = 100 * (p - 1) / (v * m + p - 1)
                assert readouts["bubble"].value == pytest.approx(share, rel=1e-9)
                assert readouts["formula"].value == pytest.approx(share, rel=1e-12)
                assert readouts["formula"].label == "(p − 1)/(v m + p − 1)"
                assert ms(model, "idle") == pytest.approx((p - 1) * 3.0 / v, rel=1e-9)
                assert readouts["beside_bubble"].value == pytest.approx(
                    100 * (p - 1) / (m + p - 1), rel=1e-9)


def test_interleaved_with_m_not_a_multiple_of_p_has_a_message_not_a_picture():
    model = model_at(pipeline="interleaved", stages=4, micro_batches=6, chunks=2)
    assert model.out.timed is None and len(model.step_marks()) == 0
    # The comparison still stands: 1F1B of the same p and m.
    assert value(model, "beside_bubble") == pytest.approx(100 * 3 / 9)
    model.micro_batches = 8
    assert model.out.valid and value(model, "bubble") == pytest.approx(100 * 3 / 19)
    model.chunks = 1  # one chunk is plain 1F1B: any m
    model.micro_batches = 6
    assert model.out.valid


def test_zero_bubble_h1_beside_1f1b():
    """b = 2 f splits into B = W = f: the paper's case, a third of 1F1B's idle time
    ((p − 1) f against 3 (p − 1) f), share (p − 1)/(3 m + p − 1), 1F1B's memory."""
    for p in range(2, 9):
        for m in range(p, 33):
            model = model_at(pipeline="zb_h1", stages=p, micro_batches=m)
            assert ms(model, "idle") == pytest.approx(p - 1, rel=1e-9)
            assert value(model, "bubble") == pytest.approx(100 * (p - 1) / (3 * m + p - 1))
            assert value(model, "formula") == pytest.approx(value(model, "bubble"))
            assert value(model, "beside_bubble") == pytest.approx(
                100 * (p - 1) / (m + p - 1))
            assert value(model, "peak_first") == value(model, "beside_peak") == min(m, p)
    model = model_at(pipeline="zb_h1")
    assert model.readouts()["beside_bubble"].label == "1F1B bubble share"
    assert ms(model, "step_time") == pytest.approx(27.0)  # 8 × 3 ms of work + 3 ms idle
    # Other times: the greedy order has no closed form, and the formula says so.
    model.backward_ms = 3.0
    assert value(model, "formula") is None
    assert model.readouts()["formula"].text == "only if B = W = F"
    model = model_at(pipeline="zb_h1", stages=8, micro_batches=4)
    assert model.readouts()["formula"].text == "only if m ≥ p"


def test_next_stops_whenever_a_pass_ends():
    """At most MAX_STOPS stops, each the end of a pass: all of them for a small step,
    one every 1/48 of the step or more for thousands of short passes."""
    model = model_at(pipeline="1f1b")
    result = model.out.timed.schedule
    marks = model.step_marks()
    assert np.all(np.diff(marks) > 0) and marks[-1] == pytest.approx(result.step_time)
    assert set(np.round(marks / MS, 6)) == set(np.round(result.end / MS, 6))
    big = model_at(pipeline="interleaved", stages=8, micro_batches=32, chunks=4)
    stops, ends = big.step_marks(), np.round(big.out.timed.schedule.end / MS, 6)
    assert len(stops) <= MAX_STOPS + 1 and set(np.round(stops / MS, 6)) <= set(ends)
    assert np.all(np.diff(stops)[:-1] >= big.horizon / MAX_STOPS - 1e-12)
    model.rewind()
    assert model.t == 0
    for mark in marks:
        model.step()
        assert model.t == pytest.approx(mark)
    assert model.finished


def test_stash_over_time():
    """The held count at each mark is within the peak, 0 at the start and the end, and
    reaches every stage's peak."""
    timed = timed_pipeline("1f1b", 4, 8, 1 * MS, 2 * MS)
    reached = np.zeros(4)
    for t in np.r_[0.0, np.unique(timed.schedule.start)]:
        held = timed.held_at(t)
        assert np.all(held <= timed.peaks)
        reached = np.maximum(reached, held)
    assert list(reached) == [4, 3, 2, 1]
    assert list(timed.held_at(timed.step_time)) == [0, 0, 0, 0]
    model = model_at(pipeline="1f1b")
    model.rewind()
    model.step()  # 1 ms in: stage 0 has started its second forward
    assert list(model.out.timed.held_at(model.t)) == [2, 1, 0, 0]


def test_trace_has_a_thread_per_stage():
    trace = model_at(stages=6).trace()
    assert [lane.text for lane in trace.lanes] == [f"Stage {i}" for i in range(6)]
    assert len(trace.devices) == 1
    assert len(trace.schedule.tasks) == 2 * 6 * 8


@given(pipeline=st.sampled_from([key for key, _ in PIPELINE_CHOICES]),
       p=st.integers(2, 8), m=st.integers(1, 32), v=st.integers(1, 4),
       f=st.sampled_from(np.arange(0.25, 4.01, 0.25).tolist()),
       b=st.sampled_from(np.arange(0.25, 8.01, 0.25).tolist()), steps=st.integers(0, 40))
@settings(max_examples=60, deadline=None)
def test_sweep(pipeline, p, m, v, f, b, steps):
    model = model_at(pipeline=pipeline, stages=p, micro_batches=m, chunks=v, forward_ms=f,
                     backward_ms=b)
    out = model.out
    assert out.valid == (pipeline != "interleaved" or v == 1 or m % p == 0)
    model.rewind()
    for _ in range(steps):
        model.step()
    for readout in model.readouts().values():
        assert readout.text
        assert readout.value is None or math.isfinite(readout.value)
    if not out.valid:
        return
    timed = out.timed
    work = m * (f + b) * MS
    assert timed.step_time == pytest.approx(work + timed.idle, rel=1e-9)
    assert 0 <= timed.bubble < 1
    assert np.all(timed.peaks <= m) and np.all(timed.peaks > 0)
    assert np.all(timed.held_at(model.t) <= timed.peaks)
    assert 0 <= model.t <= timed.step_time * (1 + 1e-12)
    assert len(timed.lanes) == len(timed.schedule.tasks) and timed.lanes.max() == p - 1


@given(pipeline=st.sampled_from(["gpipe", "1f1b"]), p=st.integers(2, 8),
       m=st.integers(1, 32), f=st.sampled_from([0.25, 1.0, 2.5, 4.0]),
       b=st.sampled_from([0.25, 2.0, 5.0, 8.0]))
@settings(max_examples=60, deadline=None)
def test_the_comparison_from_the_closed_forms_is_the_timed_step(pipeline, p, m, f, b):
    """9.2's comparison (GPipe beside 1F1B, 1F1B beside the rest) is not timed on every
    change: its closed forms must be what the scheduler gives, at any f and b."""
    timed = timed_pipeline(pipeline, p, m, f * MS, b * MS)
    textbook = textbook_step(pipeline, p, m, f * MS, b * MS)
    assert textbook.step_time == pytest.approx(timed.step_time, rel=1e-12)
    assert textbook.bubble == pytest.approx(timed.bubble, rel=1e-9)
    assert textbook.peaks.tolist() == timed.peaks.tolist()


def test_a_drag_over_every_m_and_back_finds_the_steps_it_timed():
    from gpuviz.models.tensor_pipeline import pipeline

    first = {m: timed_pipeline("1f1b", 8, m, 1 * MS, 2 * MS) for m in range(1, 33)}
    assert all(timed_pipeline("1f1b", 8, m, 1 * MS, 2 * MS) is first[m]
               for m in range(32, 0, -1))
    # The largest steps push the oldest out: what is kept stays within its bound.
    for m in (8, 16, 24, 32):
        for p in (2, 4, 8):
            timed_pipeline("interleaved", p, m, 1 * MS, 2 * MS, 4)
    kept = sum(len(timed.schedule.tasks) for timed in pipeline._timed.values())
    assert kept == pipeline._kept_tasks <= pipeline.KEPT_TASKS
