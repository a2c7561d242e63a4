"""Figure 10.5 (mixture of experts): routing, capacity, dropped copies and the wait."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuviz.models.sequence_expert.moe_routing import (
    CAPACITIES,
    D_MODEL,
    ELEMENT_BYTES,
    EXPERTS,
    GPUS,
    TOKENS,
    MoeRoutingModel,
    capacity,
    kept_copies,
    moe_step,
)

FACTORS = [float(v) for v, _ in CAPACITIES if v != "none"]


def test_capacity_is_the_switch_transformer_formula():
    assert capacity(1.25, 2) == math.ceil(1.25 * 2 * TOKENS / EXPERTS) == 40
    assert capacity(1.0, 1) == TOKENS // EXPERTS
    assert capacity(None, 2) is None


def test_first_come_first_served():
    experts = np.array([[0], [0], [1], [0]])
    assert kept_copies(experts, 2).ravel().tolist() == [True, True, True, False]


@pytest.mark.parametrize("k", (1, 2))
@pytest.mark.parametrize("seed", range(5))
def test_no_skew_and_no_capacity_drops_nothing(k, seed):
    out = moe_step(0.0, k, None, seed)
    assert out.dropped_share == 0.0 and out.gpu_load.sum() == TOKENS * k


@pytest.mark.parametrize("skew", (0.0, 1.0, 2.0, 3.0))
@pytest.mark.parametrize("k", (1, 2))
def test_the_dropped_share_falls_as_the_capacity_factor_grows(skew, k):
    shares = [moe_step(skew, k, f, 1).dropped_share for f in FACTORS]
    shares.append(moe_step(skew, k, None, 1).dropped_share)
    assert shares == sorted(shares, reverse=True) and shares[-1] == 0.0


def test_skew_overloads_the_first_experts_and_gpus():
    even, skewed = moe_step(0.0, 2, None, 1), moe_step(3.0, 2, None, 1)
    assert skewed.per_expert[0] > 2 * even.per_expert[0]
    assert skewed.imbalance > 2 > even.imbalance


def test_all_to_all_carries_the_kept_copies_leaving_their_gpu():
    out = moe_step(1.0, 2, 1.25, 1)
    source = np.repeat(np.arange(TOKENS) * GPUS // TOKENS, 2).reshape(out.experts.shape)
    leaving = out.kept & (source != out.experts * GPUS // EXPERTS)
    assert out.traffic.sent.sum() == leaving.sum() * D_MODEL * ELEMENT_BYTES
    assert out.traffic.sent.sum() == out.traffic.received.sum()


@settings(max_examples=60, deadline=None)
@given(st.floats(0.0, 3.0), st.sampled_from([v for v, _ in CAPACITIES]),
       st.sampled_from(["1", "2"]), st.integers(0, 9999))
def test_sweep(skew, factor, k, seed):
    model = MoeRoutingModel()
    for name, value in (("skew", skew), ("capacity_factor", factor), ("top_k", k),
                        ("seed", seed)):
        model.set(name, value)
    out = model.out
    assert out.per_expert.sum() == TOKENS * int(k)
    assert out.computed.sum() == out.gpu_load.sum() == out.kept.sum()
    if out.capacity is not None:
        assert out.computed.max() <= out.capacity
    assert 0.0 <= out.dropped_share < 1.0 and out.imbalance >= 1.0
    for readout in model.readouts().values():
        assert readout.text


def test_the_lesson_example():
    model = MoeRoutingModel()
    r = model.readouts()
    assert (r["capacity"].value, r["dropped"].revealed_text, r["imbalance"].text) == \
        (40, "2.0%", "1.08×")
    model.set("skew", 1.5)
    assert model.out.per_expert[:2].tolist() == [69, 53]
    shares = {}
    for factor in ("1.25", "2.0", "none"):
        model.set("capacity_factor", factor)
        shares[factor] = model.readouts()["dropped"].revealed_text
    assert shares == {"1.25": "17.2%", "2.0": "2.0%", "none": "0.0%"}
    assert model.out.gpu_load[0] == 122 and model.readouts()["imbalance"].text == "1.91×"


def test_the_dropped_share_is_predicted_first():
    model = MoeRoutingModel()
    model.set("skew", 1.5)
    assert model.readouts()["dropped"].hidden
    model.set("guess_dropped", 20.0)
    model.set("revealed", True)
    assert not model.readouts()["dropped"].hidden
    assert model.answer_text() == ("17.2%: 44 of 256 copies arrive at an expert already "
                                   "holding 40. Your guess of 20% is spot on.")
    model.set("capacity_factor", "none")  # a new setting hides the answer again
    assert not model.revealed
    assert model.answer_text().startswith("0.0%: with no capacity every expert takes")
