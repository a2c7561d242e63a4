"""Figure 9.3: the all-reduce / matmul ratio of tensor parallelism (tensor_pipeline.tp_comm)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuviz.data.models import load_models, model
from gpuviz.models.tensor_pipeline import tp_comm as tc


def test_ratio_is_the_closed_form_and_needs_no_tokens():
    m = tc.TpCommModel()
    out = m.out
    cfg = model(tc.DEFAULT_MODEL)
    w = tc.layer_matmul_weights(cfg)
    x, b = m.tflops * 1e12, tc.link_of("nvlink").bandwidth
    assert out.ratio == pytest.approx(8 / 3 * 7 * cfg.hidden * x / (w * b))
    assert out.ratio == pytest.approx(0.1589, abs=5e-5)  # Llama 2 70B, t = 8, 400 TFLOP/s
    assert out.matmul == pytest.approx(6.57e-3, rel=1e-3) and out.allreduce == pytest.approx(
        1.044e-3, rel=1e-3)
    for tokens in (256, 1000, 4096, 131072):
        m.tokens = tokens
        assert m.out.ratio == pytest.approx(out.ratio, rel=1e-12)
        assert m.out.matmul == pytest.approx(out.matmul * tokens / 4096)


def test_gpt_layer_gives_two_ninths_t_minus_1_x_over_h_b():
    cfg = model("gpt3_175b")
    w = tc.layer_matmul_weights(cfg)
    assert w == 12 * cfg.hidden ** 2
    assert tc.tp_ratio(8, cfg.hidden, w, 4e14, 4.5e11) == pytest.approx(
        2 / 9 * 7 * 4e14 / (cfg.hidden * 4.5e11))


def test_infiniband_line_is_nine_times_the_nvlink_line_at_every_t():
    m = tc.TpCommModel()
    out = m.out
    assert out.link_factor == 9.0  # 450 against 50 GB/s on an H100
    np.testing.assert_allclose(out.ratios["network"] / out.ratios["nvlink"], 9.0)
    assert m.readouts()["link_factor"].hidden
    m.revealed = True
    assert m.readouts()["link_factor"].value == 9.0 and m.readouts()["link_factor"].text == "9.00×"


def test_above_eight_gpus_the_ring_crosses_the_network():
    m = tc.TpCommModel()
    assert not m.out.crosses_nodes and m.out.link_used == "nvlink"
    m.tp = 16
    assert m.out.crosses_nodes and m.out.link_used == "network"
    assert m.readouts()["crosses_nodes"].value is True
    assert m.out.ratio == pytest.approx(float(m.out.ratios["network"][14]))
    assert m.out.ratio > 1  # 3.06×: the all-reduces outlast the matmuls
    m.tp = 1
    assert m.out.allreduce == 0 and m.out.ratio == 0


@given(tp=st.integers(1, tc.TP_MAX), link=st.sampled_from([k for k, _ in tc.LINKS]),
       preset=st.sampled_from(list(load_models())), tokens=st.floats(256, 131072),
       tflops=st.floats(50, 2000), guess=st.floats(1, 100), revealed=st.booleans())
@settings(max_examples=80, deadline=None)
def test_sweep(tp, link, preset, tokens, tflops, guess, revealed):
    m = tc.TpCommModel()
    with m.batch():
        m.tp, m.link, m.preset, m.tokens, m.tflops = tp, link, preset, tokens, tflops
        m.guess_factor, m.revealed = guess, revealed
    out = m.out
    for ratios in out.ratios.values():
        assert np.isfinite(ratios).all() and (np.diff(ratios) > 0).all()
    assert math.isfinite(out.ratio) and out.ratio >= 0
    assert out.ratio == pytest.approx(out.allreduce / out.matmul)
    if m.tp > 1:
        line = out.ratios[out.link_used][m.tp - 2]
        assert out.ratio == pytest.approx(float(line))
    assert out.crosses_nodes == (m.tp > tc.GPUS_PER_NODE)
    assert all(r.text for r in m.readouts().values())
    assert m.answer_text()
