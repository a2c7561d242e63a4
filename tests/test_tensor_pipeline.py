"""Lesson 9: pipeline schedules built as tasks and timed by the shared scheduler, against
the bubble and stash formulas (gpuviz.models.tensor_pipeline.schedules)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuviz.core.schedule import schedule
from gpuviz.models.tensor_pipeline import schedules as ps

F, B = 1.0, 2.0  # a backward takes twice a forward


def timed(pipeline, p, m, v=1, f=F, b=B, w=0.0):
    return schedule(ps.pipeline_tasks(pipeline, p, m, f, b, w, v))


def idle_of(result, p):
    return [result.idle(ps.stage_lane(i)) for i in range(p)]


def test_one_f_one_b_runs_the_textbook_order():
    """p = 4, m = 8: stage 0 warms up with 3 forwards, stage 3 alternates at once."""
    tasks = ps.pipeline_tasks("1f1b", 4, 8, F, B)
    order = {i: [t.name.split("c")[0] for t in tasks if t.resource == ps.stage_lane(i)]
             for i in range(4)}
    assert order[0][:8] == ["F0", "F1", "F2", "F3", "B0", "F4", "B1", "F5"]
    assert order[3][:4] == ["F0", "B0", "F1", "B1"]
    assert order[0][-3:] == ["B5", "B6", "B7"]


def test_interleaved_labels_carry_the_chunk():
    tasks = ps.pipeline_tasks("interleaved", 2, 4, F, B, chunks=2)
    assert {t.label for t in tasks} == {"1₁", "2₁", "3₁", "4₁", "1₂", "2₂", "3₂", "4₂"}
    assert {t.duration for t in tasks} == {F / 2, B / 2}
    assert {t.label for t in ps.pipeline_tasks("gpipe", 2, 3, F, B)} == {"1", "2", "3"}


@pytest.mark.parametrize("pipeline", ["gpipe", "1f1b"])
def test_gpipe_and_1f1b_bubble_and_stash_for_every_p_and_m(pipeline):
    """Every p of 1-8 and m of 1-32: each stage idles (p − 1)(f + b), the share of the
    step is (p − 1)/(m + p − 1), and the stash peaks at m (GPipe) or min(m, p − i)."""
    for p in range(1, 9):
        for m in range(1, 33):
            result = timed(pipeline, p, m)
            assert result.step_time == pytest.approx((m + p - 1) * (F + B), rel=1e-12)
            for i, idle in enumerate(idle_of(result, p)):
                assert idle == pytest.approx((p - 1) * (F + B), abs=1e-9)
                assert idle / result.step_time == pytest.approx(
                    ps.bubble_share(pipeline, p, m), rel=1e-12, abs=1e-15)
                peak = ps.stash(result, pipeline, i, m)[1].max()
                assert peak == ps.peak_stash(pipeline, p, m, i)
                assert peak == (m if pipeline == "gpipe" else min(m, p - i))


def test_interleaved_bubble_and_stash_for_every_p_m_and_v():
    """m a multiple of p: idle (p − 1)(f + b)/v, share (p − 1)/(v m + p − 1)."""
    for p in range(1, 9):
        for m in range(p, 33, p):
            for v in range(1, 5):
                result = timed("interleaved", p, m, v)
                share = ps.bubble_share("interleaved", p, m, v)
                assert share == pytest.approx((p - 1) / (v * m + p - 1))
                for i, idle in enumerate(idle_of(result, p)):
                    assert idle == pytest.approx((p - 1) * (F + B) / v, abs=1e-9)
                    assert idle / result.step_time == pytest.approx(share, abs=1e-12)
                    peak = ps.stash(result, "interleaved", i, m, v)[1].max()
                    assert peak == pytest.approx(ps.peak_stash("interleaved", p, m, i, v))


def test_zero_bubble_h1_has_a_third_of_1f1b_bubble_at_1f1b_memory():
    """f = b = w and m ≥ p: idle (p − 1) f against 1F1B's 3 (p − 1) f, the stash of 1F1B;
    with w = 0 it is 1F1B."""
    for p in range(1, 9):
        for m in range(p, 33):
            result = timed("zb_h1", p, m, f=1.0, b=1.0, w=1.0)
            one_f_one_b = timed("1f1b", p, m, f=1.0, b=2.0)
            for i, idle in enumerate(idle_of(result, p)):
                assert idle == pytest.approx(p - 1, abs=1e-9)
                assert one_f_one_b.idle(ps.stage_lane(i)) == pytest.approx(3 * (p - 1))
                assert idle / result.step_time == pytest.approx(
                    ps.bubble_share("zb_h1", p, m), abs=1e-12)
                assert ps.stash(result, "zb_h1", i, m)[1].max() == min(m, p - i)
            merged = timed("zb_h1", p, m, f=1.0, b=2.0, w=0.0)
            assert merged.step_time == pytest.approx(one_f_one_b.step_time)


@pytest.mark.parametrize("args, message", [
    (("interleaved", 4, 6, F, B, 0.0, 2), "multiple"),
    (("pipedream", 4, 8, F, B), "unknown pipeline"),
    (("gpipe", 0, 8, F, B), "at least one"),
    (("1f1b", 4, 0, F, B), "at least one"),
])
def test_bad_settings_are_refused(args, message):
    with pytest.raises(ValueError, match=message):
        ps.pipeline_tasks(*args)


times = st.floats(0.0, 10.0)


@given(st.sampled_from(ps.PIPELINES), st.integers(1, 8), st.integers(1, 32),
       st.integers(1, 4), times, times, times)
def test_any_schedule_is_consistent(pipeline, p, m, v, f, b, w):
    """Any times, zero included: it builds and times without a cycle; every stage does
    the same work and so idles the same; GPipe, 1F1B and interleaved meet their formula;
    every stage idles at least (p − 1) f / v (the last waits that long for its first
    input); stash levels stay between 0 and their peak and end at 0."""
    if pipeline == "interleaved":
        m = max(p, m // p * p)
    result = schedule(ps.pipeline_tasks(pipeline, p, m, f, b, w, v))
    chunks = v if pipeline == "interleaved" else 1
    eps = 1e-9 * max(1.0, result.step_time)
    idle = idle_of(result, p)
    assert np.ptp(idle) <= eps
    work = m * (f + b + (w if pipeline == "zb_h1" else 0.0))
    assert result.step_time == pytest.approx(work + idle[0], abs=eps)
    if pipeline != "zb_h1":
        assert idle[0] == pytest.approx((p - 1) * (f + b) / chunks, abs=eps)
    assert idle[0] >= (p - 1) * f / chunks - eps
    for i in range(p):
        times_, levels = ps.stash(result, pipeline, i, m, v)
        assert levels.min() >= 0 and levels[-1] == pytest.approx(0, abs=1e-9)
        assert levels.max() <= ps.peak_stash(pipeline, p, m, i, v) + 1e-9
        assert np.all(np.isfinite(times_))
