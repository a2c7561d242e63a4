"""Lesson 10: sequence, context and expert parallelism."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuviz.models.sequence_expert import (
    KvOverlapModel,
    RingAttentionModel,
    chunk_owners,
    round_work,
)
from gpuviz.models.sequence_expert.kv_overlap import (
    ATTENTION,
    BLOCK_MAX,
    BLOCK_MIN,
    GQA_GROUP,
    LINKS,
)
from gpuviz.models.sequence_expert.ring_attention import CHUNK_TOKENS
from gpuviz.models.sequence_expert.sequence_parallel import (
    MODES,
    OPS,
    TP_DEGREES,
    SequenceParallelModel,
)


def overlap(**values) -> KvOverlapModel:
    model = KvOverlapModel()
    with model.batch():
        for name, value in values.items():
            model.set(name, value)
    return model


# --- 10.1 ring attention rounds ---------------------------------------------------------

@pytest.mark.parametrize("ranks", range(2, 9))
def test_zigzag_gives_every_rank_the_same_work_in_every_round(ranks):
    work = round_work(ranks, "zigzag", causal=True)
    assert np.all(work == work[:, :1])
    model = RingAttentionModel()
    with model.batch():
        model.set("ranks", ranks)
        model.set("assignment", "zigzag")
    assert model.out.idle_share() == 0.0
    assert model.out.pass_time == pytest.approx(model.out.ideal_time)


@pytest.mark.parametrize("ranks", range(2, 9))
def test_contiguous_leaves_the_first_rank_idle_most_of_the_pass(ranks):
    model = RingAttentionModel()
    model.set("ranks", ranks)
    out = model.out
    # Rank 0 computes in round 0 only: its diagonal block, c (c + 1) / 2 of c² scores.
    c = 2 * CHUNK_TOKENS  # tokens per rank: two chunks
    assert out.work[1:, 0].sum() == 0 and out.work[0, 0] == c * (c + 1) // 2
    assert out.idle_share(0) == pytest.approx(1 - out.work[0, 0] / out.pass_time)
    assert out.idle_share(0) > 0.5
    assert out.pass_time > out.ideal_time


def test_the_default_pass_numbers():
    model = RingAttentionModel()  # 4 ranks, causal, contiguous
    readouts = model.readouts()
    assert readouts["first_idle"].hidden  # predicted first
    assert readouts["first_idle"].revealed_text == "80.0%"  # 12 of 15 score-times
    model.set("guess_idle", 78)
    model.set("revealed", True)
    assert "80.0%" in model.answer_text() and "spot on" in model.answer_text()
    model.step_once()
    model.set("assignment", "zigzag")  # hides the answer and starts the pass again
    assert not model.revealed and model.out.rounds_done == 1
    model.set("assignment", "contiguous")
    model.step_once()
    model.set("revealed", True)  # Reveal keeps the round
    assert model.out.rounds_done == 2
    readouts = model.readouts()
    assert readouts["first_idle"].text == "80.0%"
    assert readouts["all_idle"].text == "40.0%"  # 24 of 4 × 15
    assert readouts["pass_time"].text == "3.750 full blocks"  # 15 scores of 4
    model.set("assignment", "zigzag")
    assert model.readouts()["pass_time"].text == "2.250 full blocks"


@pytest.mark.parametrize("assignment", ["contiguous", "zigzag"])
def test_without_a_mask_nobody_waits(assignment):
    work = round_work(5, assignment, causal=False)
    assert np.all(work == work.max())


@given(st.integers(2, 8), st.sampled_from(["contiguous", "zigzag"]), st.booleans())
def test_ring_attention_sweep(ranks, assignment, causal):
    owners = chunk_owners(ranks, assignment)
    assert sorted(np.bincount(owners).tolist()) == [2] * ranks  # two chunks each
    model = RingAttentionModel()
    with model.batch():
        model.set("ranks", ranks)
        model.set("assignment", assignment)
        model.set("causal", causal)
    tokens = 2 * CHUNK_TOKENS * ranks
    live = tokens * (tokens + 1) // 2 if causal else tokens * tokens
    assert model.out.work.sum() == live  # every live score once, in some round
    for _ in range(ranks + 1):
        out = model.out
        assert 1 <= out.rounds_done <= ranks
        assert 0.0 <= out.idle_share() < 1.0
        assert 0.0 <= out.idle_share(0) < 1.0
        model.readouts()
        model.step_once()
    assert model.finished


# --- 10.2 TP against TP + SP ------------------------------------------------------------

def parallel(**values) -> SequenceParallelModel:
    model = SequenceParallelModel()
    with model.batch():
        for name, value in values.items():
            model.set(name, value)
    return model


@pytest.mark.parametrize("tp", ["2", "4", "8"])
def test_sp_divides_the_replicated_parts_by_t_and_sends_the_same_bytes(tp):
    tp_only, sp = parallel(tp=tp, mode="tp").out, parallel(tp=tp, mode="sp").out
    t = int(tp)
    assert sp.replicated_parts == pytest.approx(tp_only.replicated_parts / t)
    assert sp.activation == pytest.approx(sp.activation_unsplit / t)
    assert sp.sent == pytest.approx(tp_only.sent)  # all-reduce = reduce-scatter + all-gather
    assert len(sp.collectives) == 2 * len(tp_only.collectives)
    # SP turns every full copy into a token split and leaves the rest alone.
    assert [k for k in tp_only.kinds if k == "full"] and "full" not in sp.kinds
    assert all((a == "full") == (b == "tokens") for a, b in zip(tp_only.kinds, sp.kinds,
                                                                strict=True))


def test_korthikanti_totals():
    # Llama 2 70B (h 8192, a 64), s 4096, b 1, t 8: 34sbh + 5as²b on one GPU, then
    # sbh(10 + 24/t) + 5as²b/t with TP and (34sbh + 5as²b)/t with TP + SP.
    s, h, a, t = 4096, 8192, 64, 8
    sbh, as2b = s * h, a * s * s
    out = parallel().out
    assert out.activation_unsplit == 34 * sbh + 5 * as2b
    assert out.activation == pytest.approx(sbh * (10 + 24 / t) + 5 * as2b / t)
    assert out.replicated_parts == 10 * sbh
    assert out.sent == 2 * 2 * (t - 1) / t * 2 * sbh  # two ring all-reduces of 2sbh bytes
    assert parallel(mode="sp").out.activation == pytest.approx((34 * sbh + 5 * as2b) / t)


@given(st.sampled_from([m for m, _ in MODES]), st.sampled_from([t for t, _ in TP_DEGREES]),
       st.integers(512, 32768), st.integers(1, 16))
def test_sequence_parallel_sweep(mode, tp, seq, micro_batch):
    model = parallel(mode=mode, tp=tp, seq=seq, micro_batch=micro_batch)
    out = model.out
    assert len(out.stored) == len(OPS) and all(b > 0 for b in out.stored)
    assert out.activation <= out.activation_tp <= out.activation_unsplit
    assert out.sent > 0
    model.readouts()


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


def test_what_sp_sends_is_predicted_first():
    model = parallel(mode="sp")
    assert model.readouts()["sent_vs_tp"].hidden and model.readouts()["sent"].hidden
    model.set("revealed", True)
    r = model.readouts()
    assert r["sent_vs_tp"].value == pytest.approx(1.0) and r["sent_vs_tp"].text == "1.00×"
    assert model.answer_text() == (
        "1.00×: a reduce-scatter and an all-gather together move the bytes of the all-reduce "
        "they replace, 235 MB per layer either way. Your guess of 2× is 2.0× too high.")
