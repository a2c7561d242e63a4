"""Lesson 2 (roofline and arithmetic intensity): figures 2.1 to 2.4, spec numbers from
notes.md and facts.md, and sweeps over every parameter."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuviz.data.hardware import gpu, load_gpus
from gpuviz.data.models import load_models
from gpuviz.models.roofline import (
    CUSTOM,
    LAYER_OPS,
    MEMORY,
    CalculatorModel,
    LayerModel,
    MatmulBatchModel,
    RooflineModel,
    compute_bound_batch,
    gpu_roof,
    intensity_ceiling,
    matmul_intensity,
    named_ops,
    next_gpu,
    roofline_time,
    square_matmul,
    what_ifs,
)

GPUS = list(load_gpus())


# --- 2.1 ---------------------------------------------------------------------------------

@pytest.mark.parametrize("key, precision, ridge", [
    ("h100_sxm", "bf16", 295), ("a100_sxm", "bf16", 153), ("h200_sxm", "bf16", 206),
    ("b200", "bf16", 281), ("h100_sxm", "fp8", 591),
])
def test_ridge_points(key, precision, ridge):
    assert round(gpu_roof(key, precision).ridge) == ridge


def test_fp8_on_a100_falls_back():
    roof = gpu_roof("a100_sxm", "fp8")
    assert roof.fell_back and roof.precision == "bf16"
    m = RooflineModel()
    m.set("gpu", "a100_sxm")
    m.set("precision", "fp8")
    text, warn = m.message()
    assert warn and "FP8" in text
    assert m.out.roof.peak == gpu("a100_sxm").peak_flops("bf16")


def test_switching_gpu_moves_memory_bound_points_by_bandwidth_ratio():
    m = RooflineModel()
    h100 = m.out
    m.set("gpu", "h200_sxm")
    h200 = m.out
    ratio = gpu("h200_sxm").hbm_bandwidth / gpu("h100_sxm").hbm_bandwidth
    moved = False
    for i, bound in enumerate(h100.bounds):
        if bound == MEMORY and h200.bounds[i] == MEMORY:
            assert h200.attained[i] / h100.attained[i] == pytest.approx(ratio)
            moved = True
        else:  # compute-bound on both: same peak, does not move
            assert h200.attained[i] == pytest.approx(h100.attained[i])
    assert moved
    np.testing.assert_allclose(h200.intensity, h100.intensity)


def test_named_ops_span_both_sides_of_the_ridge():
    ridge = gpu_roof("h100_sxm").ridge
    intensity = {op.key: op.intensity for op in named_ops()}
    assert intensity["add"] == pytest.approx(1 / 6)
    assert intensity["softmax"] == pytest.approx(5 / 4)
    assert intensity["decode_matmul"] == pytest.approx(1.0, rel=0.01)
    assert intensity["decode_attention"] == pytest.approx(1.0, rel=0.02)
    assert intensity["decode_matmul_64"] == pytest.approx(62.8, rel=0.01)
    assert intensity["prefill_matmul"] > ridge and intensity["prefill_attention"] > ridge
    assert intensity["layernorm"] < ridge


def test_intensity_scale_is_per_op_and_reset_clears_it():
    m = RooflineModel()
    base = m.out.intensity.copy()
    m.set("selected_op", "softmax")
    m.set("intensity_scale", 4.0)
    i = m.out.keys.index("softmax")
    assert m.out.intensity[i] == pytest.approx(4 * base[i])
    m.set("selected_op", "add")
    assert m.intensity_scale == 1.0
    m.set("selected_op", "softmax")
    assert m.intensity_scale == 4.0
    m.reset()
    np.testing.assert_allclose(m.out.intensity, base)
    assert m.readouts()["ridge"].text == "295 FLOP/B"


def test_roofline_time():
    t = roofline_time(2e12, 1e9, 1e12, 1e12)
    assert t.bound == "compute" and t.time == 2.0
    t = roofline_time(1.0, 3e12, 1e12, 1e12)
    assert t.bound == "memory" and t.time == 3.0


# --- 2.2 ---------------------------------------------------------------------------------

def test_matmul_formulas():
    d = 4096
    flops, nbytes = square_matmul(8, d)
    assert flops == 2 * 8 * d * d and nbytes == 2 * (d * d + 2 * 8 * d)
    assert matmul_intensity(8, d) == pytest.approx(flops / nbytes)
    assert intensity_ceiling(d) == d / 2
    for b, expected in ((1, 1.0), (64, 62), (256, 228), (1024, 683), (4096, 1365)):
        assert round(matmul_intensity(b, d)) == round(expected)


def test_batch_1_to_64_costs_three_percent():
    m = MatmulBatchModel()
    out = m.out
    assert out.table[2].flops / out.table[0].flops == 64
    assert round(out.time_1 * 1e6, 1) == 10.0
    assert round(out.time_64 * 1e6, 1) == 10.3
    assert out.time_64 / out.time_1 == pytest.approx(1.03, abs=0.005)


def test_compute_bound_batch():
    ridge = gpu_roof("h100_sxm").ridge
    b_star = compute_bound_batch(ridge, 4096)
    assert round(b_star) == 345
    assert matmul_intensity(b_star, 4096) == pytest.approx(ridge)
    m = MatmulBatchModel()
    assert m.readouts()["b_star"].text == "press Reveal"
    m.set("revealed", True)
    assert round(m.readouts()["b_star"].value) == 345
    assert "345" in m.answer_text()


def test_narrow_layer_never_compute_bound():
    m = MatmulBatchModel()
    m.set("width", 512)
    assert m.out.ceiling == 256 < m.out.roof.ridge
    assert math.isinf(m.out.b_star)
    m.set("batch_size", 16384)
    assert m.out.row.time.bound == MEMORY
    assert "No batch is large enough" in m.answer_text()


def test_new_guess_hides_answer():
    m = MatmulBatchModel()
    m.set("revealed", True)
    m.set("guess_batch", 300)
    assert m.revealed is False


# --- 2.3 ---------------------------------------------------------------------------------

def _times(m):
    return {op.name: t.time for op, t in zip(m.out.ops, m.out.times, strict=True)}


def test_decode_weight_matmuls_flat_attention_grows():
    m = LayerModel()  # Llama 2 7B, decode, 2,048 tokens of context, H100
    one = _times(m)
    weight_names = [op.name for op in m.out.ops if op.weight_matmul]
    assert len(weight_names) == 7
    for batch in (16, 64, 128, 256, 300):
        m.set("batch_size", batch)
        now = _times(m)
        for name in weight_names:
            assert now[name] / one[name] < 1.2, (batch, name)
        assert now["attention"] / one["attention"] == pytest.approx(batch, rel=0.01)
    assert all(t.bound == MEMORY for t in m.out.times)
    m.set("batch_size", 512)  # past B* the matmuls turn compute-bound
    bounds = {op.name: t.bound for op, t in zip(m.out.ops, m.out.times, strict=True)}
    assert all(bounds[name] == "compute" for name in weight_names)
    assert bounds["attention"] == MEMORY


def test_decode_is_memory_bound_and_weights_dominate():
    m = LayerModel()
    assert all(t.bound == MEMORY for t in m.out.times)
    assert m.share(lambda op: op.weight_matmul) > 0.9


def test_gqa_shrinks_attention_and_kv_projections():
    m = LayerModel()
    m.set("batch_size", 64)
    mha = _times(m)
    m.set("attention", "gqa")
    assert m.out.config.kv_heads == 8
    gqa = _times(m)
    assert gqa["attention"] == pytest.approx(mha["attention"] / 4, rel=0.02)
    assert gqa["k_proj"] < mha["k_proj"] / 3


def test_prefill_matmuls_compute_bound():
    m = LayerModel()
    m.set("phase", "prefill")
    for op, t in zip(m.out.ops, m.out.times, strict=True):
        if op.weight_matmul:
            assert t.bound == "compute"


def test_preset_sets_native_attention_and_selection_falls_back():
    m = LayerModel()
    m.set("preset", "llama3_8b")
    assert m.attention == "gqa"
    m.set("selected_op", "mlp_gate")
    m.set("preset", "gpt3_xl")
    assert m.attention == "mha" and m.selected_op == "mlp_up"
    m.set("selected_op", "attention")
    m.set("fused_attention", False)
    assert m.selected_op == "scores"
    assert m.message()[0]


# --- 2.4 ---------------------------------------------------------------------------------

def test_calculator_steps_and_what_ifs():
    m = CalculatorModel()
    out = m.out
    roof = gpu_roof("h100_sxm")
    assert out.time.compute == pytest.approx(out.flops / roof.peak)
    assert out.time.memory == pytest.approx(out.bytes / roof.bandwidth)
    assert out.time.bound == MEMORY
    faster, half, double = out.what_ifs
    assert out.other_gpu == "h200_sxm"
    assert faster.speedup == pytest.approx(4.8 / 3.35, rel=1e-3)
    assert half.speedup == pytest.approx(2.0, rel=1e-3)
    assert double.speedup == pytest.approx(1.0)


def test_calculator_compute_bound_op():
    m = CalculatorModel()
    m.set("op", "prefill_matmul")
    faster, half, double = m.out.what_ifs
    assert m.out.time.bound == "compute"
    assert half.speedup == pytest.approx(1.0)
    assert double.speedup == pytest.approx(2.0, rel=1e-3)


def test_calculator_custom_numbers_and_reset():
    m = CalculatorModel()
    m.set("flops", 1e12)
    assert m.op == CUSTOM
    m.set("op", "add")
    assert m.flops == next(op.flops for op in named_ops() if op.key == "add")
    assert m.op == "add"
    m.reset()
    assert m.op == "decode_matmul"


def test_last_gpu_has_no_next():
    assert next_gpu(GPUS[-1]) is None
    m = CalculatorModel()
    m.set("gpu", GPUS[-1])
    assert m.out.other_gpu is None
    assert m.out.what_ifs[0].speedup == 1.0
    m.set("faster_gpu", "a100_sxm")
    assert m.out.what_ifs[0].speedup < 1


def test_what_ifs_never_nan():
    roof = gpu_roof("h100_sxm")
    for flops, nbytes in ((1.0, 1.0), (1e18, 1.0), (1.0, 1e15)):
        for w in what_ifs(flops, nbytes, roof, None):
            assert math.isfinite(w.speedup) and w.speedup >= 1 - 1e-12


# --- sweeps over every parameter ----------------------------------------------------------

def _finite_readouts(m):
    for key, r in m.readouts().items():
        if isinstance(r.value, float):
            assert math.isfinite(r.value), key
        assert "nan" not in r.text.lower(), key


@settings(max_examples=50, deadline=None)
@given(g=st.sampled_from(GPUS), precision=st.sampled_from(["bf16", "fp8"]),
       op=st.sampled_from([op.key for op in named_ops()]),
       scale=st.floats(1 / 64, 64))
def test_roofline_sweep(g, precision, op, scale):
    m = RooflineModel()
    with m.batch():
        m.set("gpu", g)
        m.set("precision", precision)
        m.set("selected_op", op)
        m.set("intensity_scale", scale)
    out = m.out
    assert np.all(out.attained <= out.roof.peak * (1 + 1e-12))
    assert np.all(np.isfinite(out.times)) and np.all(out.times > 0)
    _finite_readouts(m)
    assert m.message()[0]


@settings(max_examples=50, deadline=None)
@given(g=st.sampled_from(GPUS), width=st.integers(256, 16384), batch=st.integers(1, 16384),
       guess=st.integers(1, 16384), revealed=st.booleans())
def test_matmul_sweep(g, width, batch, guess, revealed):
    m = MatmulBatchModel()
    for name, value in (("gpu", g), ("width", width), ("batch_size", batch),
                        ("guess_batch", guess), ("revealed", revealed)):
        m.set(name, value)
    out = m.out
    assert out.row.intensity < out.ceiling
    assert np.all(np.diff(out.curve_intensity) > 0)
    _finite_readouts(m)
    assert m.answer_text()


@settings(max_examples=50, deadline=None)
@given(preset=st.sampled_from(list(load_models())),
       g=st.sampled_from(GPUS), phase=st.sampled_from(["decode", "prefill"]),
       batch=st.integers(1, 1024), context=st.integers(128, 131072),
       attention=st.sampled_from(["mha", "gqa"]), fused=st.booleans(),
       selected=st.sampled_from([key for key, _ in LAYER_OPS]))
def test_layer_sweep(preset, g, phase, batch, context, attention, fused, selected):
    m = LayerModel()
    for name, value in (("preset", preset), ("gpu", g), ("phase", phase), ("batch_size", batch),
                        ("context", context), ("attention", attention),
                        ("fused_attention", fused), ("selected_op", selected)):
        m.set(name, value)
    out = m.out
    assert m.selected_op in {op.name for op in out.ops}
    assert math.isfinite(out.total_time) and out.total_time > 0
    _finite_readouts(m)


@settings(max_examples=50, deadline=None)
@given(op=st.sampled_from([op.key for op in named_ops()] + [CUSTOM]),
       flops=st.floats(1, 1e18), nbytes=st.floats(1, 1e15), g=st.sampled_from(GPUS),
       faster=st.sampled_from(["next", *GPUS]))
def test_calculator_sweep(op, flops, nbytes, g, faster):
    m = CalculatorModel()
    for name, value in (("op", op), ("flops", flops), ("bytes_moved", nbytes), ("gpu", g),
                        ("faster_gpu", faster)):
        m.set(name, value)
    out = m.out
    assert math.isfinite(out.time.time) and out.time.time > 0
    for w in out.what_ifs:
        assert math.isfinite(w.speedup) and w.speedup > 0
    _finite_readouts(m)
