"""Lesson 8: ZeRO stages, gradient bucketing, FSDP units, when the all-reduce hides."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuviz.core.schedule import Task, schedule
from gpuviz.models import data_parallel as dp

PSI = 7.5e9  # the ZeRO paper's example: 7.5 B parameters on 64 GPUs


# ---------------------------------------------------------------- 8.1 ZeRO stages

@pytest.mark.parametrize("stage, gigabytes", [
    ("ddp", 120.0), ("zero1", 31.4), ("zero2", 16.6), ("zero3", 1.9)])
def test_zero_paper_table(stage, gigabytes):
    assert dp.zero_model_states(PSI, 64, stage).total / 1e9 == pytest.approx(gigabytes,
                                                                             abs=0.05)


def test_model_states_formulas():
    n = 8
    s = {stage: dp.zero_model_states(1.0, n, stage) for stage in dp.STAGES}
    assert (s["ddp"].weights, s["ddp"].gradients, s["ddp"].optimizer) == (2, 2, 12)
    assert s["zero1"].total == pytest.approx(4 + 12 / n)
    assert s["zero2"].total == pytest.approx(2 + 14 / n)
    assert s["zero3"].total == pytest.approx(16 / n)


@pytest.mark.parametrize("n", [2, 8, 64, 1024])
def test_sent_bytes_equal_for_ddp_zero1_zero2_and_one_and_a_half_for_zero3(n):
    sent = [dp.zero_sent_bytes(PSI, n, stage) for stage in dp.STAGES]
    assert sent[0] == sent[1] == sent[2] == pytest.approx(4 * (n - 1) / n * PSI)
    assert sent[3] == pytest.approx(6 * (n - 1) / n * PSI)
    assert sent[3] / sent[0] == pytest.approx(1.5)


def test_zero_figure_reads_out_the_ratio():
    model = dp.ZeroStagesModel()
    readouts = model.readouts()
    assert readouts["ddp_sent"].value == readouts["zero1_sent"].value == \
        readouts["zero2_sent"].value
    assert readouts["ratio"].value == pytest.approx(1.5)
    model.gpus = 1
    assert model.out.sent == (0.0, 0.0, 0.0, 0.0)
    assert model.readouts()["ratio"].value is None
    assert model.readouts()["ratio"].text == "—"


def test_unknown_stage_is_refused():
    with pytest.raises(ValueError):
        dp.zero_model_states(1.0, 2, "zero4")


# ---------------------------------------------------------------- 8.2 bucketing

def _bucketing(bucket_mb, tokens=16384, gbs=50.0, alpha_us=10.0):
    return dp.bucketed_backward(dp.LAYERS, dp.PARAMS_PER_LAYER, tokens, 400e12,
                                bucket_mb * 1e6, 8, gbs * 1e9, alpha_us * 1e-6)


def test_spec_defaults_only_the_last_bucket_is_exposed():
    out = _bucketing(25)
    assert out.layer_end[0] == pytest.approx(8.192e-3)
    assert out.ready[0] == pytest.approx(2.048e-3)  # each bucket computes in 2.05 ms
    assert out.end[0] - out.start[0] == pytest.approx(1.015e-3)
    assert out.exposed == pytest.approx(1.015e-3)
    assert out.buckets == 96
    model = dp.BucketingModel()
    assert model.out.exposed == pytest.approx(1.015e-3)


def test_tiny_buckets_pay_latency_and_one_bucket_overlaps_nothing():
    assert _bucketing(1).exposed == pytest.approx(223e-3, abs=1e-3)
    assert _bucketing(dp.TOTAL_GRAD_MB).exposed == pytest.approx(84e-3, abs=0.5e-3)
    assert _bucketing(dp.TOTAL_GRAD_MB).buckets == 1


def test_whole_layer_buckets_expose_a_layer_sized_all_reduce():
    """The spec's note: buckets of whole layers would expose 3.64 ms."""
    assert _bucketing(100).exposed == pytest.approx(3.64e-3)


def test_closed_form_equals_the_general_scheduler():
    out = _bucketing(7, tokens=4096, gbs=20.0)
    # Compute as gradient slices ending at each bucket's ready time, all-reduces after.
    tasks, previous = [], 0.0
    for k, ready in enumerate(out.ready):
        tasks.append(Task(f"g{k}", "compute", ready - previous))
        previous = ready
    tasks += [Task(f"ar{k}", "network", out.end[k] - out.start[k], after=(f"g{k}",))
              for k in range(out.buckets)]
    result = schedule(tasks)
    ars = [result.index(f"ar{k}") for k in range(out.buckets)]
    assert np.allclose(result.start[ars], out.start)
    assert result.step_time == pytest.approx(out.step_time)


@given(st.floats(1.0, dp.TOTAL_GRAD_MB), st.integers(512, 131072), st.floats(5.0, 450.0),
       st.floats(0.0, 100.0))
def test_bucketing_sweep(bucket_mb, tokens, gbs, alpha_us):
    out = _bucketing(bucket_mb, tokens, gbs, alpha_us)
    assert out.bucket_bytes.sum() == pytest.approx(dp.TOTAL_GRAD_MB * 1e6)
    assert np.all(out.start >= out.ready - 1e-12)
    assert np.all(out.start[1:] >= out.end[:-1] - 1e-12)
    assert out.exposed >= 0 and math.isfinite(out.step_time)
    # At least the last bucket's all-reduce is exposed.
    assert out.exposed >= out.end[-1] - out.start[-1] - 1e-12


# ---------------------------------------------------------------- 8.3 FSDP

def _fsdp(units=6, prefetch=True, reshard=True, forward=2.0, gather=1.0):
    result = schedule(dp.fsdp_tasks(units, forward, gather, gather, prefetch=prefetch,
                                    reshard=reshard))
    return result, dp.units_in_full(result, units, reshard)


def test_prefetch_hides_the_gathers_when_compute_is_longer():
    result, (_, counts) = _fsdp()
    # Only the very first all-gather is waited for: 1 of idle before F0.
    assert result.idle_intervals("compute")[0] == (0.0, 1.0)
    assert result.waiting("compute") == pytest.approx(1.0)
    assert counts.max() == 2


def test_without_prefetch_compute_waits_for_every_gather():
    result, _ = _fsdp(prefetch=False)
    units = 6
    # Every forward and every backward unit waits for its gather (the backward ones also
    # wait behind the previous unit's reduce-scatter).
    assert result.waiting("compute") >= 2 * units * 1.0 - 1e-9


def test_without_resharding_the_backward_gathers_disappear_and_all_units_stay():
    result, (_, counts) = _fsdp(reshard=False)
    assert not [t for t in result.tasks if t.name.endswith("b")]
    assert counts.max() == 6
    resharded, (_, counts_r) = _fsdp(reshard=True)
    assert counts_r.max() < counts.max()
    assert len(resharded.tasks) > len(result.tasks)


def test_fsdp_figure_defaults():
    model = dp.FsdpModel()
    out = model.out
    assert model.progress == 1.0 and model.t == pytest.approx(out.schedule.step_time)
    assert out.peak_units == 2
    model.rewind()
    assert model.t == 0.0 and model.readouts()["now"].value == 1  # unit 1 being gathered
    model.step()
    assert 0 < model.t < out.schedule.step_time
    model.set_playing(True)
    model.advance(1e9)
    assert model.finished and not model.playing


def test_no_dip_when_a_unit_is_freed_as_the_next_is_gathered():
    """Equal forward and gather times: a release and a gather often fall on one instant."""
    result, (times, counts) = _fsdp(forward=1.0, gather=1.0)
    assert len(np.unique(times)) == len(times)
    # Until the last backward ends (then only the last reduce-scatter runs) the count
    # never drops to zero.
    inside = times < result.end[result.index("B0")]
    assert counts[inside].min() >= 1


@given(st.integers(2, 12), st.booleans(), st.booleans(), st.floats(1e-6, 10.0),
       st.floats(0.0, 10.0))
def test_fsdp_sweep(units, prefetch, reshard, forward, gather):
    result, (times, counts) = _fsdp(units, prefetch, reshard, forward, gather)
    assert counts.min() >= 0 and counts[-1] == 0
    assert counts.max() <= units
    if reshard and prefetch:
        assert counts.max() <= 2
    assert result.step_time >= result.busy("compute") - 1e-9
    assert np.all(np.diff(times) >= 0)


# ---------------------------------------------------------------- 8.4 overlap threshold

def test_threshold_at_the_defaults():
    assert dp.overlap_threshold(8, 50e9, 400e12) == pytest.approx(7000)
    model = dp.OverlapModel()
    assert model.out.threshold == pytest.approx(7000)
    assert dp.overlap_ratio(7000, 8, 50e9, 400e12) == pytest.approx(1.0)


def test_model_size_moves_the_bars_but_not_the_curve_nor_the_threshold():
    model = dp.OverlapModel()
    before = model.out
    model.params_b = 70.0
    after = model.out
    assert after.backward == pytest.approx(10 * before.backward)
    assert after.allreduce == pytest.approx(10 * before.allreduce)
    assert np.array_equal(after.ratio, before.ratio)
    assert after.threshold == before.threshold
    assert after.current_ratio == pytest.approx(before.current_ratio)


def test_ratio_formula_matches_the_times():
    model = dp.OverlapModel()
    out = model.out
    assert out.allreduce / out.backward == pytest.approx(
        float(dp.overlap_ratio(model.tokens, model.gpus, model.bandwidth_gbs * 1e9,
                               model.tflops * 1e12)))


def test_reveal_flow():
    model = dp.OverlapModel()
    assert model.readouts()["threshold"].text == "press Reveal"
    model.revealed = True
    assert model.readouts()["threshold"].value == pytest.approx(7000)
    model.guess_tokens = 7000
    assert not model.revealed
    assert "spot on" in model.answer_text()
