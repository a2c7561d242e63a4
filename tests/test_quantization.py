"""Lesson 11 (quantization): figures 11.1 to 11.5, the spec numbers of notes.md, sweeps
over every parameter, and the views' mouse input (click-to-set in 11.2 and 11.5)."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest

from gpuviz import catalog
from gpuviz.data.hardware import gpu
from gpuviz.models.quantization import (
    ACTIVATIONS,
    GAUSSIAN,
    GRANULARITIES,
    LAPLACE,
    OUTLIER,
    PER_COLUMN,
    PER_ROW,
    PER_TENSOR,
    SQ_OUTLIERS,
    TOKENS_MAX,
    W4,
    W16,
    WEIGHTS,
    GranularityModel,
    GridModel,
    MseModel,
    SmoothQuantModel,
    W4A16Model,
    bits_per_weight,
    factors_out,
    grid_values,
    levels,
    mse_split,
    mse_trade_off,
    quant_step,
    quantize,
    quantize_codes,
    smooth_tensors,
    smoothing_scales,
    unit_samples,
    w8a8_matmul,
    weight_choices,
    weight_matmul_cost,
)
from gpuviz.models.roofline import gpu_roof, roofline_time
from tests import figure_driver as drive

# --- the shared arithmetic ---------------------------------------------------------------


def test_levels_and_step():
    assert [levels(b) for b in (2, 4, 8)] == [1, 7, 127]
    assert quant_step(10.0, 4) == pytest.approx(10 / 7)


@settings(max_examples=100, deadline=None)
@given(bits=st.integers(2, 8), alpha=st.floats(0.01, 100),
       seed=st.integers(0, 2**31))
def test_rounding_error_bounded_by_half_step_and_codes_in_range(bits, alpha, seed):
    x = np.random.default_rng(seed).uniform(-2 * alpha, 2 * alpha, 200)
    codes = quantize_codes(x, alpha, bits)
    assert np.all(np.abs(codes) <= levels(bits)) and np.all(codes == np.rint(codes))
    q = quantize(x, alpha, bits)
    inside = np.abs(x) <= alpha
    step = quant_step(alpha, bits)
    assert np.all(np.abs(x - q)[inside] <= step / 2 * (1 + 1e-9))
    # Clipped values land on the end of the grid: error |x| - alpha.
    np.testing.assert_allclose(np.abs(x - q)[~inside], np.abs(x[~inside]) - alpha,
                               rtol=1e-9, atol=1e-12)
    r, c = mse_split(x, alpha, bits)
    assert r >= 0 and c >= 0
    assert r + c == pytest.approx(np.mean((x - q) ** 2))


def test_zero_is_a_grid_point_and_zero_range_is_safe():
    assert quantize(np.zeros(3), 1.0, 4).tolist() == [0, 0, 0]
    assert quantize(np.zeros((2, 2)), np.zeros((1, 2)), 8).tolist() == [[0, 0], [0, 0]]


# --- 11.1 --------------------------------------------------------------------------------

def test_grid_defaults():
    m = GridModel()
    x = grid_values()
    assert len(x) == 16 and np.abs(x).max() == pytest.approx(1.0)
    out = m.out
    assert out.step == pytest.approx(1 / 7)
    assert out.max_error <= out.bound and out.clipped == 0


def test_outlier_stretches_step_to_1_43_and_crowds_small_values_onto_3_points():
    m = GridModel()
    m.set("outlier", True)
    out = m.out
    assert m.alpha == OUTLIER and len(out.values) == 17
    assert round(out.step, 2) == 1.43
    assert out.used_small == 3
    assert out.max_error <= out.bound


def test_lowering_the_range_clips_the_outlier():
    m = GridModel()
    m.set("outlier", True)
    m.set("alpha", 1.0)
    out = m.out
    assert not m.min_max
    assert out.clipped == 1 and out.max_error == pytest.approx(OUTLIER - 1.0)
    assert out.max_error_inside <= out.bound
    assert out.used_small > 3
    m.set("min_max", True)
    assert m.alpha == OUTLIER


def test_more_bits_shrink_the_error():
    m = GridModel()
    errors = []
    for b in range(2, 9):
        m.set("bits", b)
        errors.append(m.out.max_error)
    assert errors == sorted(errors, reverse=True)


@settings(max_examples=60, deadline=None)
@given(bits=st.integers(2, 8), alpha=st.floats(0.1, 12.0), outlier=st.booleans(),
       min_max=st.booleans())
def test_grid_sweep(bits, alpha, outlier, min_max):
    m = GridModel()
    with m.batch():
        m.set("outlier", outlier)
        m.set("bits", bits)
        m.set("alpha", alpha)
        m.set("min_max", min_max)
    out = m.out
    assert np.all(np.isfinite(out.quantized))
    assert out.max_error_inside <= out.bound * (1 + 1e-9)
    assert 1 <= out.used_small <= 2 * levels(bits) + 1
    assert out.clipped == int((np.abs(out.values) > out.alpha).sum())
    for r in m.readouts().values():
        assert r.text
    m.message()


# --- 11.2 --------------------------------------------------------------------------------

def test_samples_have_unit_variance_and_are_reproducible():
    for d in (GAUSSIAN, LAPLACE):
        x = unit_samples(d)
        assert len(x) == 8192 and x.std() == pytest.approx(1.0)
    x = np.random.default_rng(0).standard_normal(8192)
    np.testing.assert_allclose(unit_samples(GAUSSIAN), x / x.std())


def test_gaussian_4_bit_best_range_and_min_max_error():
    c = mse_trade_off(GAUSSIAN, 4)
    assert 2.4 <= c.best_alpha <= 2.5
    assert 1.8 <= c.min_max_mse / c.best_mse <= 2.3  # about twice the error


def test_laplace_and_8_bits_move_the_best_range_out():
    gauss4 = mse_trade_off(GAUSSIAN, 4).best_alpha
    laplace4 = mse_trade_off(LAPLACE, 4).best_alpha
    gauss8 = mse_trade_off(GAUSSIAN, 8).best_alpha
    assert laplace4 == pytest.approx(3.4, abs=0.1)
    assert gauss8 == pytest.approx(3.8, abs=0.1)
    assert laplace4 > gauss4 and gauss8 > gauss4
    assert mse_trade_off(LAPLACE, 8).best_alpha > laplace4


def test_rounding_follows_step_squared_over_12_and_clipping_falls():
    for d in (GAUSSIAN, LAPLACE):
        for b in (4, 8):
            c = mse_trade_off(d, b)
            clipped_away = c.alphas >= c.max_abs
            # With nothing clipped the rounding error of 8,192 values is step^2/12 within
            # a few percent (the values are spread over many steps).
            if b == 8:
                ratio = c.rounding[clipped_away] / c.uniform[clipped_away]
                assert np.all(np.abs(ratio - 1) < 0.05)
            assert np.all(np.diff(c.clipping) <= 1e-15)
            assert np.all(c.clipping[clipped_away] == 0)
            assert np.all(c.total >= c.best_mse)


def test_mse_predict_and_reveal():
    m = MseModel()
    assert "Reveal" in m.readouts()["best_alpha"].text
    m.set("revealed", True)
    assert m.readouts()["best_alpha"].value == pytest.approx(2.41, abs=0.05)
    assert "spot on" not in m.answer_text()
    m.set("guess_alpha", 2.4)
    assert not m.revealed
    m.set("revealed", True)
    assert "spot on" in m.answer_text()


@settings(max_examples=60, deadline=None)
@given(d=st.sampled_from([GAUSSIAN, LAPLACE]), bits=st.sampled_from(["4", "8"]),
       alpha=st.floats(0.25, 10.0), guess=st.floats(0.25, 10.0), revealed=st.booleans())
def test_mse_sweep(d, bits, alpha, guess, revealed):
    m = MseModel()
    with m.batch():
        m.set("distribution", d)
        m.set("bits_choice", bits)
        m.set("alpha", alpha)
        m.set("guess_alpha", guess)
        m.set("revealed", revealed)
    out = m.out
    assert math.isfinite(out.rounding) and math.isfinite(out.clipping)
    assert out.rounding + out.clipping >= out.curves.best_mse * (1 - 1e-9) or \
        abs(m.alpha - out.curves.best_alpha) < 0.01
    for r in m.readouts().values():
        assert r.text
    m.answer_text()


# --- 11.3 --------------------------------------------------------------------------------

def test_granularity_errors():
    m = GranularityModel()
    out = m.out
    # Activations: per row helps little (the outlier column is in every row), per column
    # removes the problem.
    assert out.rms[PER_ROW] > 0.7 * out.rms[PER_TENSOR]
    assert out.rms[PER_COLUMN] < 0.3 * out.rms[PER_TENSOR]
    m.set("granularity", PER_COLUMN)
    assert m.out.rms_normal[PER_COLUMN] < 0.1 * m.out.rms_normal[PER_TENSOR]
    # Weights: rows of different sizes; per row (per output channel) is the best.
    m.set("tensor", WEIGHTS)
    w = m.out
    assert w.rms[PER_ROW] < 0.5 * w.rms[PER_TENSOR]
    assert w.rms[PER_ROW] <= w.rms[PER_COLUMN]


def test_per_column_activation_scales_cannot_be_factored_out():
    assert factors_out(ACTIVATIONS, PER_TENSOR) and factors_out(ACTIVATIONS, PER_ROW)
    assert not factors_out(ACTIVATIONS, PER_COLUMN)
    m = GranularityModel()
    m.set("granularity", PER_COLUMN)
    text, warn = m.verdict()
    assert warn and "sum" in text and m.readouts()["factorable"].text == "no"
    # The algebra behind it: a per-row scale of X and a per-row (output) scale of W
    # multiply the finished integer sum.
    x, w = np.random.default_rng(1).standard_normal((2, 4, 6))
    sx = np.abs(x).max(axis=1, keepdims=True) / 127
    sw = np.abs(w).max(axis=1, keepdims=True) / 127
    xq, wq = np.rint(x / sx), np.rint(w / sw)
    np.testing.assert_allclose((xq @ wq.T) * sx * sw.T, (xq * sx) @ (wq * sw).T)


def test_error_colour_scale_is_fixed_across_granularities():
    m = GranularityModel()
    scales = set()
    for g, _ in GRANULARITIES:
        m.set("granularity", g)
        scales.add(m.out.error_scale)
        assert m.out.error.max() <= m.out.error_scale * (1 + 1e-9)
    assert len(scales) == 1


@settings(max_examples=40, deadline=None)
@given(t=st.sampled_from([ACTIVATIONS, WEIGHTS]),
       g=st.sampled_from([g for g, _ in GRANULARITIES]), bits=st.integers(2, 8))
def test_granularity_sweep(t, g, bits):
    m = GranularityModel()
    with m.batch():
        m.set("tensor", t)
        m.set("granularity", g)
        m.set("bits", bits)
    out = m.out
    assert np.all(np.isfinite(out.error)) and out.error.max() <= out.error_scale * (1 + 1e-9)
    for r in m.readouts().values():
        assert r.text
    m.verdict()


# --- 11.4 --------------------------------------------------------------------------------

def test_smoothquant_identity_is_exact_to_float_rounding():
    m = SmoothQuantModel()
    for a in (0.0, 0.25, 0.5, 0.75, 1.0):
        m.set("alpha", a)
        assert m.out.identity_error < 1e-14


def test_alpha_one_gives_every_activation_channel_max_one():
    m = SmoothQuantModel()
    m.set("alpha", 1.0)
    np.testing.assert_allclose(m.out.x_max_after, 1.0)
    m.set("alpha", 0.0)
    np.testing.assert_allclose(m.out.w_max_after, 1.0)


def test_outlier_channels_and_smoothing_helps_w8a8():
    x, w = smooth_tensors()
    x_max = np.abs(x).max(axis=0)
    normal = [j for j in range(len(x_max)) if j not in SQ_OUTLIERS]
    for j in SQ_OUTLIERS:
        assert x_max[j] > 10 * x_max[normal].max()
    m = SmoothQuantModel()
    errors = m.out.errors
    assert 0.0 < m.out.best_alpha < 1.0
    assert errors.min() < 0.6 * errors[0]  # the migration helps
    assert errors.min() < 0.5 * m.out.unsmoothed_error  # so does smoothing at all
    assert errors.min() < errors[-1]  # all the way to alpha = 1 overshoots


def test_w8a8_matmul_is_exact_on_grid_values_and_close_otherwise():
    rng = np.random.default_rng(3)
    codes_x = rng.integers(-127, 128, (5, 6)).astype(float)
    codes_x[0, 0] = 127  # the range is the largest value
    codes_w = rng.integers(-127, 128, (6, 4)).astype(float)
    codes_w[0, :] = 127
    x, w = codes_x * 0.01, codes_w * np.array([0.1, 0.2, 0.3, 0.4])
    np.testing.assert_allclose(w8a8_matmul(x, w), x @ w, rtol=1e-12)
    x, w = rng.standard_normal((32, 8)), rng.standard_normal((8, 4))
    y = w8a8_matmul(x, w)
    assert np.linalg.norm(y - x @ w) / np.linalg.norm(x @ w) < 0.01


def test_smoothing_scales_formula():
    s = smoothing_scales(np.array([4.0, 9.0]), np.array([1.0, 4.0]), 0.5)
    np.testing.assert_allclose(s, [2.0, 1.5])


@settings(max_examples=30, deadline=None)
@given(alpha=st.floats(0.0, 1.0))
def test_smooth_sweep(alpha):
    m = SmoothQuantModel()
    m.set("alpha", alpha)
    out = m.out
    assert out.identity_error < 1e-14 and math.isfinite(out.error) and out.error > 0
    assert np.all(out.scales > 0)
    for r in m.readouts().values():
        assert r.text


# --- 11.5 --------------------------------------------------------------------------------

def test_group_scale_bits():
    assert bits_per_weight(4, 128) == 4.125
    assert bits_per_weight(4, 32) == 4.5


def test_w4a16_speedup_at_batch_1_and_at_prefill():
    m = W4A16Model()
    for key, _ in weight_choices():
        m.set("weight", key)
        m.set("tokens", 1)
        assert 3.85 <= m.out.speedup <= 3.88
        assert m.out.speedup < 16 / 4.125
        m.set("tokens", 4096)
        assert m.out.speedup == 1.0
        assert m.readouts()["speedup"].text == "1.000×"


def test_w4a16_uses_the_lesson_2_roofline():
    m = W4A16Model()
    roof = gpu_roof("h100_sxm", "bf16")
    h100 = gpu("h100_sxm")
    assert roof.peak == h100.peak_flops("bf16") and roof.bandwidth == h100.hbm_bandwidth
    out = m.out
    for key, bits in ((W16, 16), (W4, 4.125)):
        flops, nbytes = weight_matmul_cost(1, out.k, out.m, bits)
        assert out.points[key].time == roofline_time(flops, nbytes, roof.peak,
                                                      roof.bandwidth)
    assert out.points[W16].time.bound == "memory"


def test_w4a16_click_selects_a_point():
    m = W4A16Model()
    m.set("selected", W16)
    assert "W16" in m.readouts()["time"].label


@settings(max_examples=60, deadline=None)
@given(tokens=st.integers(1, TOKENS_MAX), weight=st.sampled_from([k for k, _ in
                                                                   weight_choices()]),
       group=st.sampled_from(["32", "64", "128", "256"]), sel=st.sampled_from([W16, W4]))
def test_w4a16_sweep(tokens, weight, group, sel):
    m = W4A16Model()
    with m.batch():
        m.set("tokens", tokens)
        m.set("weight", weight)
        m.set("group", group)
        m.set("selected", sel)
    out = m.out
    assert 1.0 <= out.speedup <= 16 / bits_per_weight(4, int(group)) + 1e-12
    assert np.all(out.curve_w4 <= out.curve_w16)
    for r in m.readouts().values():
        assert r.text
    m.message()


# --- the views' mouse input ----------------------------------------------------------------

def _click(plot, x, y):  # noqa: ANN001
    """A left click at data point (x, y) of a plot widget."""
    box = plot.getPlotItem().getViewBox()
    where = plot.mapFromScene(box.mapViewToScene(pg.Point(x, y)))
    QTest.mouseClick(plot.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier(0),
                     QPoint(int(where.x()), int(where.y())))


def test_clicking_the_mse_plot_moves_alpha(themed, qtbot):
    page = drive.build_page(catalog.figure("11.2"))
    qtbot.addWidget(page)
    _click(page.view.plot, 2.5, -2.0)
    drive.settle()
    assert page.model.alpha == pytest.approx(2.5, abs=0.05)


def test_clicking_a_point_selects_it(themed, qtbot):
    page = drive.build_page(catalog.figure("11.5"))
    qtbot.addWidget(page)
    p = page.model.out.points[W16]
    assert page.model.selected == W4
    _click(page.view.roof_plot, math.log10(p.intensity), math.log10(p.attained))
    drive.settle()
    assert page.model.selected == W16
    assert "W16" in page.model.readouts()["time"].label
