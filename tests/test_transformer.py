"""The shared transformer module and the model presets (resources/models)."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuviz.data import DataError
from gpuviz.data.models import load_models, model, parse_model
from gpuviz.models import transformer as tf

PRESETS = list(load_models())


def test_all_presets_present():
    assert set(PRESETS) == {"gpt3_xl", "gpt3_6_7b", "gpt3_175b", "llama2_7b", "llama2_70b",
                            "llama3_8b", "llama3_70b", "llama3_405b"}
    for cfg in load_models().values():
        assert cfg.heads * cfg.head_dim == cfg.hidden
        assert all(cfg.source(name) for name in ("layers", "hidden", "heads", "vocab",
                                                  "published_params"))


def test_gpt3_xl_exact_count():
    """Tied embeddings, learned positions, biases and LayerNorms counted (notes 6.2)."""
    cfg = model("gpt3_xl")
    count = tf.parameter_count(cfg)
    assert count.total == 1_315_723_264
    h, L = cfg.hidden, cfg.layers
    assert count.per_layer == 12 * h * h + 13 * h
    assert count.total == 12 * L * h * h + 13 * L * h + (cfg.vocab + cfg.context) * h + 2 * h
    assert count.output == 0
    assert round(12 * L * h * h / count.total, 3) == 0.918


@pytest.mark.parametrize("key", PRESETS)
def test_parameter_count_matches_published(key):
    """Within 0.5% of the published count; GPT-3 XL and 6.7B are printed with two
    significant digits ("1.3B", "6.7B"), so for them the test allows the printed
    rounding (half of 0.1B) instead."""
    cfg = model(key)
    total = tf.parameter_count(cfg).total
    tolerance = max(0.005 * cfg.published_params, cfg.published_rounded_to / 2)
    assert abs(total - cfg.published_params) <= tolerance


@pytest.mark.parametrize("key, exact", [
    ("gpt3_6_7b", 6_658_404_352), ("gpt3_175b", 174_604_259_328),
    ("llama2_7b", 6_738_415_616), ("llama2_70b", 68_976_648_192),
    ("llama3_8b", 8_030_261_248), ("llama3_70b", 70_553_706_496),
    ("llama3_405b", 405_853_388_800),
])
def test_exact_counts(key, exact):
    assert tf.parameter_count(model(key)).total == exact


@pytest.mark.parametrize("key", ["llama2_7b", "llama3_8b", "llama3_70b", "llama3_405b"])
def test_within_half_percent_strict(key):
    cfg = model(key)
    assert abs(tf.parameter_count(cfg).total / cfg.published_params - 1) < 0.005


def test_kv_cache_per_token():
    assert tf.kv_cache_bytes_per_token(model("llama2_7b")) == 512 * 1024
    assert tf.kv_cache_bytes_per_token(model("llama3_8b")) == 128 * 1024
    assert tf.kv_cache_bytes_per_token(model("llama3_70b")) == 320 * 1024


def test_layer_matmuls_match_parameters():
    """The weight bytes of one layer's ops are its parameters (minus nothing) x 2 bytes."""
    for key in PRESETS:
        cfg = model(key)
        ops = tf.layer_ops(cfg, 1, 128, "decode")
        weights = sum(op.weight_bytes for op in ops)
        assert weights == 2 * tf.parameter_count(cfg).per_layer


def test_matmul_formulas():
    cfg = model("gpt3_6_7b")
    ops = {op.name: op for op in tf.layer_ops(cfg, 4, 100, "prefill")}
    up = ops["mlp_up"]
    T, h, f = 400, cfg.hidden, cfg.intermediate
    assert up.flops == 2 * T * h * f + T * f  # with bias
    assert up.bytes == 2 * (h * f + f + T * h + T * f)
    assert tf.matmul_cost(3, 5, 7, 2) == (2 * 3 * 5 * 7, 2 * (15 + 35 + 21))


def test_decode_attention_reads_kv_cache():
    cfg = model("llama2_7b")
    for fused in (True, False):
        ops = tf.layer_ops(cfg, 8, 1000, "decode", fused_attention=fused)
        kv = sum(op.kv_bytes for op in ops)
        assert kv == 8 * 1000 * 2 * cfg.kv_heads * cfg.head_dim * 2
    gqa = dataclasses.replace(cfg, kv_heads=8)
    att_mha = next(op for op in tf.layer_ops(cfg, 1, 4096, "decode") if op.name == "attention")
    att_gqa = next(op for op in tf.layer_ops(gqa, 1, 4096, "decode") if op.name == "attention")
    assert att_gqa.flops == att_mha.flops
    assert att_gqa.bytes < att_mha.bytes / 3.5
    assert att_gqa.intensity == pytest.approx(4 * att_mha.intensity, rel=0.01)


def test_prefill_causal_pairs():
    assert tf.scored_pairs(4, "prefill", fused=True) == 10
    assert tf.scored_pairs(4, "prefill", fused=False) == 16
    assert tf.scored_pairs(4, "decode", fused=True) == 4


def test_mlp_kinds_and_rope():
    names = [op.name for op in tf.layer_ops(model("llama2_7b"), 1, 16)]
    assert "mlp_gate" in names and "rope" in names
    names = [op.name for op in tf.layer_ops(model("gpt3_xl"), 1, 16)]
    assert "mlp_gate" not in names and "rope" not in names
    unfused = [op.name for op in tf.layer_ops(model("gpt3_xl"), 1, 16, fused_attention=False)]
    assert {"scores", "softmax", "pv"} <= set(unfused)


def test_pass_flops_close_to_2n_per_token():
    """A decode step costs about 2 FLOPs per parameter per token plus attention."""
    cfg = model("llama2_7b")
    flops = tf.forward_parts(cfg, 1, 1, "decode").flops
    assert flops == pytest.approx(2 * tf.parameter_count(cfg).total, rel=0.03)


@pytest.mark.parametrize("key", ["gpt3_xl", "llama3_8b"])
def test_a_pass_is_every_weight_and_cached_byte_and_the_matmuls(key):
    """A pass reads every parameter once and, in decode, every cached K and V; its FLOPs
    are 2 per weight-matrix entry per token (logits for the last prompt token only) plus
    4 n_q d_h per scored pair and layer."""
    cfg = model(key)
    count = tf.parameter_count(cfg)
    h, q, kv = cfg.hidden, cfg.heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim
    mlp = 3 if cfg.mlp == "swiglu" else 2
    matrices = cfg.layers * (2 * h * q + 2 * h * kv + mlp * h * cfg.intermediate)
    attention = 4 * cfg.heads * cfg.head_dim * cfg.layers
    output = 2 * cfg.vocab * cfg.hidden
    b, s = 3, 100
    decode = tf.forward_parts(cfg, b, s, "decode", kv_bytes_per_element=1)
    assert decode.weights == 2 * count.total
    assert decode.kv_cache == b * s * tf.kv_cache_bytes_per_token(cfg, 1)
    assert decode.bytes == decode.weights + decode.kv_cache
    assert decode.flops == pytest.approx(b * (2 * matrices + attention * s + output),
                                         rel=1e-12)
    prefill = tf.forward_parts(cfg, 1, s, "prefill")
    assert prefill.kv_cache == 0
    assert prefill.flops == pytest.approx(2 * matrices * s + attention * s * (s + 1) / 2
                                          + output, rel=1e-12)


def test_bad_phase_and_sizes():
    with pytest.raises(ValueError):
        tf.layer_ops(model("llama2_7b"), 1, 16, "train")
    with pytest.raises(ValueError):
        tf.layer_ops(model("llama2_7b"), 0, 16)


@settings(max_examples=50, deadline=None)
@given(key=st.sampled_from(PRESETS), batch=st.integers(1, 4096),
       context=st.integers(1, 131072), phase=st.sampled_from(tf.PHASES),
       fused=st.booleans(), b=st.sampled_from([1, 2, 4]))
def test_ops_sweep(key, batch, context, phase, fused, b):
    ops = tf.layer_ops(model(key), batch, context, phase, b, fused_attention=fused)
    for op in ops:
        assert math.isfinite(op.flops) and op.flops >= 0
        assert math.isfinite(op.bytes) and op.bytes > 0
        assert op.activation_bytes >= -1e-6 * op.bytes
    cost = tf.forward_parts(model(key), batch, context, phase, b)
    assert math.isfinite(cost.flops) and math.isfinite(cost.bytes)


# --- data validation --------------------------------------------------------------------

GOOD = (Path(__file__).resolve().parent.parent / "resources" / "models" /
        "llama2_7b.toml").read_text()


def _write(tmp_path, text, name="bad.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_loader_reads_a_good_file(tmp_path):
    cfg = parse_model(_write(tmp_path, GOOD, "copy.toml"))
    assert cfg.key == "copy" and cfg.layers == 32


@pytest.mark.parametrize("old, new, field", [
    ("layers = { value = 32,", "layers = { value = -1,", "architecture.layers"),
    ("norm = { value = \"rmsnorm\"", "norm = { value = \"batchnorm\"", "architecture.norm"),
    ("bias = { value = false,", "bias = { value = 0,", "architecture.bias"),
    ("kv_heads = { value = 32,", "kv_heads = { value = 5,", "architecture.kv_heads"),
    ("parameters = { value = 6738417664,", "parameters = { value = \"7B\",",
     "published.parameters"),
])
def test_loader_names_file_and_field(tmp_path, old, new, field):
    assert old in GOOD
    path = _write(tmp_path, GOOD.replace(old, new))
    with pytest.raises(DataError) as error:
        parse_model(path)
    assert error.value.field == field
    assert str(path) in str(error.value)


def test_loader_needs_sources(tmp_path):
    text = GOOD.replace('vocab = { value = 32000, source = ', 'vocab = { value = 32000, x = ')
    with pytest.raises(DataError) as error:
        parse_model(_write(tmp_path, text))
    assert error.value.field == "architecture.vocab"


def test_loader_rejects_bad_toml(tmp_path):
    with pytest.raises(DataError):
        parse_model(_write(tmp_path, "name = "))
    with pytest.raises(DataError):
        load_models(tmp_path / "empty")
