"""Lesson 10: sequence, context and expert parallelism."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuviz.models.sequence_expert import KvOverlapModel
from gpuviz.models.sequence_expert.kv_overlap import (
    ATTENTION,
    BLOCK_MAX,
    BLOCK_MIN,
    GQA_GROUP,
    LINKS,
)


def overlap(**values) -> KvOverlapModel:
    model = KvOverlapModel()
    with model.batch():
        for name, value in values.items():
            model.set(name, value)
    return model


# --- 10.3 when the K/V transfer hides -------------------------------------------------

@pytest.mark.parametrize("link, crossing", [("nvlink", 2_200), ("network", 19_800)])
def test_crossing_is_flops_over_bandwidth(link, crossing):
    out = overlap(link=link).out
    assert out.crossing == pytest.approx(out.flops / out.bandwidth)
    assert round(out.crossing, -2) == crossing


@pytest.mark.parametrize("link", [name for name, _ in LINKS])
def test_crossing_does_not_depend_on_the_heads(link):
    outs = [overlap(link=link, heads=h).out for h in (8, 32, 128)]
    assert {round(out.crossing, 6) for out in outs} == {round(outs[0].crossing, 6)}
    # ...while both times grow with them.
    assert outs[0].compute < outs[1].compute < outs[2].compute
    assert outs[0].transfer < outs[1].transfer < outs[2].transfer


def test_gqa_divides_and_the_causal_mask_doubles_the_crossing():
    base = overlap().out.crossing
    assert overlap(attention="gqa").out.crossing == pytest.approx(base / GQA_GROUP)
    assert overlap(causal=True).out.crossing == pytest.approx(2 * base)
    assert overlap(attention="gqa", heads=64).out.kv_heads == 8


def test_compute_grows_as_c_squared_transfer_as_c():
    small, large = overlap(block=1024).out, overlap(block=2048).out
    assert large.compute == pytest.approx(4 * small.compute)
    assert large.transfer == pytest.approx(2 * small.transfer)
    # The K/V block is the alpha-beta model's message: 2 c n_kv d_head 16-bit numbers.
    assert small.kv_bytes == 2 * 1024 * 32 * 128 * 2


def test_transfer_hidden_right_of_the_crossing_only():
    left = overlap(block=1024).out
    right = overlap(block=4096).out
    assert not left.hidden and left.exposed == pytest.approx(left.transfer - left.compute)
    assert right.hidden and right.exposed == 0.0


@settings(max_examples=60, deadline=None)
@given(st.floats(BLOCK_MIN, BLOCK_MAX), st.sampled_from([n for n, _ in LINKS]),
       st.integers(1, 16).map(lambda k: 8 * k), st.sampled_from([n for n, _ in ATTENTION]),
       st.booleans())
def test_overlap_sweep(block, link, heads, attention, causal):
    model = overlap(block=block, link=link, heads=heads, attention=attention, causal=causal)
    out = model.out
    for array in (out.compute_curve, out.transfer_curve):
        assert np.all(np.isfinite(array)) and np.all(array > 0)
    assert math.isfinite(out.crossing) and out.crossing > 0
    if not math.isclose(model.block, out.crossing, rel_tol=1e-9):
        assert out.hidden == (model.block > out.crossing)
    assert out.exposed >= 0.0
    model.readouts()
    model.set("revealed", True)
    assert model.answer_text()
