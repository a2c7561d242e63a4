"""Lesson 12: speculative sampling and decoding, a long prompt among decoding sequences
(figures 12.4, 12.5 and 12.6)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gpuviz.data.hardware import load_gpus
from gpuviz.data.models import load_models, model
from gpuviz.models import transformer as tf
from gpuviz.models.alpha_beta import nvlink
from gpuviz.models.serving.costs import decode_steps
from gpuviz.models.serving.long_prompt import (
    LANES,
    MAX_CHUNKS,
    MAX_DECODE_BOXES,
    LongPromptModel,
    prefill_flops,
)
from gpuviz.models.serving.speculative_decoding import (
    ACCEPTED,
    BONUS,
    DISCARDED,
    GAMMA_MAX,
    REPLACED,
    ROUNDS,
    SpeculativeDecodingModel,
    expected_tokens,
    round_tokens,
    simulate_rounds,
    speedup,
)
from gpuviz.models.serving.speculative_sampling import (
    CHI_SQUARE_99,
    DRAWS,
    VOCABULARIES,
    SpeculativeSamplingModel,
    chi_square,
    sample,
    speculation,
)

# --- 12.4 --------------------------------------------------------------------------------


def test_emitted_distribution_is_the_target_exactly():
    for k in VOCABULARIES:
        for quality in np.linspace(0, 1, 11):
            spec = speculation(k, quality)
            assert spec.emitted == pytest.approx(spec.p, abs=1e-15)
            assert spec.acceptance == pytest.approx(np.minimum(spec.p, spec.q).sum())


def test_worked_example_two_tokens():
    """p = (0.7, 0.3), q = (0.45, 0.55): 75% accepted; cat keeps 0.45 and gets 0.25 back
    from the residual, dog keeps its 0.3 (its draft mass is above p)."""
    spec = speculation(2, 0.5)
    assert spec.q == pytest.approx([0.45, 0.55])
    assert spec.acceptance == pytest.approx(0.75)
    assert spec.kept == pytest.approx([0.45, 0.3])
    assert spec.residual == pytest.approx([1.0, 0.0])
    assert spec.resampled == pytest.approx([0.25, 0.0])
    assert spec.accept_probability == pytest.approx([1.0, 0.3 / 0.55])


def test_perfect_draft_accepts_everything():
    spec = speculation(4, 1.0)
    assert spec.acceptance == pytest.approx(1.0)
    assert spec.resampled == pytest.approx(np.zeros(4))
    counts = sample(spec, 3)
    assert counts.sum() == DRAWS


def test_chi_square_critical_values_and_statistic():
    """The table values are the 99th percentiles: closed-form chi-square CDFs for 1 and 3
    degrees of freedom."""
    x1, x3 = CHI_SQUARE_99[1], CHI_SQUARE_99[3]
    assert math.erf(math.sqrt(x1 / 2)) == pytest.approx(0.99, abs=1e-5)
    assert (math.erf(math.sqrt(x3 / 2)) - math.sqrt(2 * x3 / math.pi) * math.exp(-x3 / 2)
            == pytest.approx(0.99, abs=1e-5))
    assert chi_square(np.array([700, 300]), np.array([0.7, 0.3])) == 0.0
    assert chi_square(np.array([750, 250]), np.array([0.7, 0.3])) == pytest.approx(
        50**2 / 700 + 50**2 / 300)


def test_draws_follow_the_target():
    """2,000 draws pass the 1% test for almost every seed (a correct rule fails 1 in 100)."""
    for k in VOCABULARIES:
        passed = [chi_square(sample(speculation(k, 0.3), seed), speculation(k, 0.3).p)
                  < CHI_SQUARE_99[k - 1] for seed in range(1, 101)]
        assert sum(passed) >= 95
    m = SpeculativeSamplingModel()
    m.set("draws", 1)
    assert m.out.counts.sum() == DRAWS and m.out.matches is True
    assert m.readouts()["matches"].value is True


def test_readouts_before_sampling():
    r = SpeculativeSamplingModel().readouts()
    assert r["acceptance"].value == pytest.approx(75.0)
    assert r["chi_square"].value is None and r["chi_square"].text == "press Sample"
    assert r["critical"].text == "6.63"


@settings(max_examples=60, deadline=None)
@given(vocabulary=st.sampled_from(["2", "4"]), quality=st.floats(0, 1),
       draws=st.integers(0, 9999))
def test_sweep_speculative_sampling(vocabulary, quality, draws):
    m = SpeculativeSamplingModel()
    m.set("vocabulary", vocabulary)
    m.set("quality", quality)
    m.set("draws", draws)
    spec = m.out.spec
    assert np.all(np.isfinite(spec.q)) and spec.q.sum() == pytest.approx(1.0)
    assert spec.emitted == pytest.approx(spec.p, abs=1e-12)
    assert 0 <= spec.acceptance <= 1 + 1e-12
    if draws:
        assert m.out.counts.sum() == DRAWS and np.isfinite(m.out.chi_square)
    m.readouts()
    m.message()


# --- 12.5 --------------------------------------------------------------------------------

def decoding_model(**values) -> SpeculativeDecodingModel:
    m = SpeculativeDecodingModel()  # a = 0.8, gamma = 4, c = 0.05
    for name, value in values.items():
        m.set(name, value)
    return m


def test_worked_example_rounds():
    """a = 0.8, gamma = 4: 3.3616 tokens per round; 2.80x at c = 0.05; best gamma 8."""
    out = decoding_model().out
    assert out.expected == pytest.approx(3.3616, abs=1e-12)
    assert out.positions == pytest.approx([1, 0.8, 0.64, 0.512, 0.4096])
    assert out.positions.sum() == pytest.approx(out.expected)
    assert out.speedup == pytest.approx(3.3616 / 1.2)
    assert f"{out.speedup:.2f}" == "2.80"
    assert out.best_gamma == 8 and out.best_speedup == pytest.approx(3.0920795, abs=1e-6)
    r = decoding_model().readouts()
    assert r["expected"].hidden and r["expected"].revealed_text == "3.3616"
    assert r["speedup"].text == "2.80×"


def test_paper_second_example_and_full_acceptance():
    """Leviathan et al.: a = 0.9, gamma = 7 gives 5.70 tokens and 4.22x at c = 0.05."""
    assert float(expected_tokens(0.9, 7)) == pytest.approx(5.6953, abs=1e-4)
    assert float(speedup(0.9, 7, 0.05)) == pytest.approx(4.219, abs=1e-3)
    assert float(expected_tokens(1.0, 4)) == 5.0


def test_draft_never_pays_when_a_is_at_most_c():
    out = decoding_model(acceptance=0.3, draft_cost=0.3).out
    assert out.best_speedup <= 1.0 + 1e-12
    assert decoding_model(acceptance=0.3, draft_cost=0.3).message()[1]


def test_simulated_rounds():
    assert decoding_model().out.accepted is None
    rows = simulate_rounds(0.8, 4, 20_000, 7)
    assert rows.min() >= 0 and rows.max() <= 4
    assert rows.mean() + 1 == pytest.approx(3.3616, abs=0.03)
    assert round_tokens(4, 4) == [ACCEPTED] * 4 + [BONUS]
    assert round_tokens(1, 4) == [ACCEPTED, REPLACED, DISCARDED, DISCARDED]
    m = decoding_model(simulation=1)
    assert len(m.out.accepted) == ROUNDS
    assert m.readouts()["simulated"].value == pytest.approx(m.out.accepted.mean() + 1)


@settings(max_examples=80, deadline=None)
@given(a=st.floats(0, 1), gamma=st.integers(1, GAMMA_MAX), c=st.floats(0, 1),
       simulation=st.integers(0, 9999))
def test_sweep_speculative_decoding(a, gamma, c, simulation):
    m = decoding_model(acceptance=a, gamma=gamma, draft_cost=c, simulation=simulation)
    out = m.out
    assert 1.0 <= out.expected <= gamma + 1 + 1e-9
    assert out.positions.sum() == pytest.approx(out.expected)
    assert np.all(np.isfinite(out.speedups)) and out.speedup <= out.best_speedup + 1e-12
    if simulation:
        for k in out.accepted:  # γ draft positions, and the bonus one when all pass
            assert len(round_tokens(int(k), gamma)) == gamma + (k == gamma)
    m.readouts()
    m.message()


# --- 12.6 --------------------------------------------------------------------------------

def prompt_model(**values) -> LongPromptModel:
    m = LongPromptModel()  # 32,768 tokens, 64 sequences of 2,048, 50 ms, 50%, H100
    for name, value in values.items():
        m.set(name, value)
    return m


def test_prefill_polynomial_is_the_transformer_count():
    cfg = model("llama3_8b")
    for s in (1, 100, 4096, 32768):
        assert prefill_flops("llama3_8b", s) == pytest.approx(
            tf.forward_parts(cfg, 1, s, "prefill").flops, rel=1e-12)


def test_one_piece_prefill_takes_over_a_second():
    """At 50% of the H100's peak the 32,768-token prefill takes 1.49 s (the notes'
    number); the step that carries it stalls all 64 sequences as long."""
    m = prompt_model()
    out = m.out
    assert out.prefill_time == pytest.approx(1.4936, abs=1e-4)
    assert m.readouts()["prefill"].text == "1.49 s"
    assert out.decode_step == pytest.approx(9.92e-3, abs=1e-5)  # the 12.1 step at 64
    assert out.worst_tpot > 1.0 and out.ttft == pytest.approx(out.worst_tpot)
    assert not out.target_met


def test_chunked_prefill_keeps_the_target():
    """About 34 steps and a TTFT of about 1.8 s, the notes say. A step leaves 43.8 ms of
    its 50 for prompt arithmetic, so the prompt is 34.1 steps' worth: 34 full steps and
    a short 35th; TTFT 1.71 s, within the 35 x 50 ms = 1.75 s that every step at the
    target would take."""
    out = prompt_model(mode="chunked").out
    step = decode_steps("llama3_8b", "h100_sxm", 2048, "bf16", 64)
    budget = out.target - step.compute_time[0] - step.kv_cache[0] / step.bandwidth
    assert round(step.compute_time[0] * 1e3, 2) == 1.04
    assert round(step.kv_cache[0] / step.bandwidth * 1e3, 2) == 5.13
    assert round(budget * 1e3, 1) == 43.8
    assert out.prefill_time / budget == pytest.approx(34.08, abs=0.01)
    assert out.chunks == 35 and out.target_met
    assert out.worst_tpot == pytest.approx(0.05, rel=0.01)
    assert out.ttft == pytest.approx(1.71, abs=0.005)
    assert out.ttft <= out.chunks * out.target
    assert out.ttft > prompt_model().out.ttft  # a little later than one piece


def test_disaggregated_leaves_the_decode_gpu_alone():
    out = prompt_model(mode="disaggregated").out
    assert out.worst_tpot == pytest.approx(out.decode_step)
    # 2 L S n_kv d_h x 2 bytes = 4.29 GB over NVLink (450 GB/s a direction)
    cfg = model("llama3_8b")
    nbytes = 2 * cfg.layers * 32768 * cfg.kv_heads * cfg.head_dim * 2
    assert nbytes == 4_294_967_296
    assert out.transfer_time == pytest.approx(nvlink().alpha + nbytes / nvlink().bandwidth)
    slower = prompt_model(mode="disaggregated", link="network").out.transfer_time
    assert slower > out.transfer_time
    trace = prompt_model(mode="disaggregated").trace()
    assert [lane.resource for lane in trace.lanes] == list(LANES)


@settings(max_examples=40, deadline=None)
@example(mode="chunked", prompt=22785, sequences=2, target=10.0, efficiency=0.21875,
         preset="gpt3_xl", gpu_key="a100_sxm", context=128, cache="bf16")
@given(mode=st.sampled_from(["one_piece", "chunked", "disaggregated"]),
       prompt=st.integers(1024, 65536), sequences=st.integers(1, 256),
       target=st.floats(10, 500), efficiency=st.floats(0.2, 1.0),
       preset=st.sampled_from(list(load_models())), gpu_key=st.sampled_from(list(load_gpus())),
       context=st.integers(128, 32768), cache=st.sampled_from(["bf16", "fp8"]))
def test_sweep_long_prompt(mode, prompt, sequences, target, efficiency, preset, gpu_key,
                           context, cache):
    m = prompt_model(mode=mode, prompt=prompt, sequences=sequences, target_ms=target,
                     efficiency=efficiency, preset=preset, gpu=gpu_key, context=context,
                     cache=cache)
    out = m.out
    assert np.isfinite(out.worst_tpot) and out.worst_tpot >= out.decode_step * (1 - 1e-9)
    assert out.ttft > 0 and out.horizon > out.arrival
    assert len(out.schedule.tasks) <= MAX_CHUNKS + MAX_DECODE_BOXES + 3
    assert np.all(np.diff(out.schedule.start[~np.isnan(out.tpot)]) > 0)
    if mode == "chunked" and out.decode_step < out.target * 0.5:
        # Only a chunk held at the least size may miss the target.
        assert out.target_met == (out.chunks_at_least == 0)
    m.readouts()
    m.message()


def test_rounds_go_in_columns_where_the_canvas_is_wide(qapp):
    """12.5's rounds take two columns (1-6 | 7-12) where that draws a token larger (1280x800:
    the one column left most of the canvas empty), one on a small projector and for a long
    round; every token stays inside the canvas, beside the legend, none on another."""
    from gpuviz import catalog
    from tests import figure_driver as drive

    spec = next(spec for spec in catalog.all_figures() if spec.number == "12.5")
    page = drive.build_page(spec)
    try:
        view, model = page.view, page.model
        model.set("simulation", 1)
        for size, gamma, groups in (((1280, 800), 4, 2), ((1280, 800), 16, 1),
                                    ((900, 800), 4, 1)):
            page.resize(*size)
            model.set("gamma", gamma)
            drive.settle()
            drive.settle()
            assert view._groups == groups
            cells = view.rounds._array
            tokens = sum(len(round_tokens(int(a), gamma)) for a in model.out.accepted)
            assert len(cells) == tokens + ROUNDS  # each round's tokens and its count
            (left, right), (top, bottom) = view.rounds_box.viewRange()
            assert cells[:, 0].min() >= left and (cells[:, 0] + cells[:, 2]).max() <= right
            assert cells[:, 1].min() >= top and (cells[:, 1] + cells[:, 3]).max() <= bottom
            corners = {(round(x, 6), round(y, 6)) for x, y in cells[:, :2]}
            assert len(corners) == len(cells)
            legend_left = view.rounds_box.mapSceneToView(
                view.rounds_legend.sceneBoundingRect().topLeft()).x()
            assert (cells[:, 0] + cells[:, 2]).max() <= legend_left
    finally:
        page.close()
