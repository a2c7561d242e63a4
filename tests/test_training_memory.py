"""Lesson 6: the memory accounting (gpuviz.models.memory) and figures 6.1 to 6.5. Every
"must show" number of the spec notes is asserted here, the 1.3B preset's bytes against a
hand calculation written out below."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuviz.data.hardware import gpu_choices
from gpuviz.data.models import load_models, model
from gpuviz.models import memory as mem
from gpuviz.models import training_memory as tm
from gpuviz.models import transformer as tf

PRESETS = list(load_models())
XL = model("gpt3_xl")


# --- the hand calculation for GPT-3 XL (1.3B), s = 2048, b = 1, bf16 activations --------

def test_gpt3_xl_by_hand():
    # Shape: d = 2048, L = 24, a = 16 heads of 128, V = 50,257 tied, 2,048 learned positions.
    d, L, a, V, s, b = 2048, 24, 16, 50257, 2048, 1
    assert (XL.hidden, XL.layers, XL.heads, XL.vocab, XL.context) == (d, L, a, V, s)
    # Parameters: per layer 12 d^2 + 13 d = 50,331,648 + 26,624 = 50,358,272;
    # 24 layers 1,208,598,528; token embedding 102,926,336; positions 4,194,304;
    # final LayerNorm 4,096: total 1,315,723,264.
    per_layer = 12 * d * d + 13 * d
    assert per_layer == 50_358_272
    total = L * per_layer + V * d + s * d + 2 * d
    assert total == 1_315_723_264 == tf.parameter_count(XL).total
    assert round(12 * L * d * d / total, 3) == 0.918
    # Model states, mixed bf16 + Adam: (2 + 2 + 12) x 1,315,723,264 = 21,051,572,224 bytes.
    states = mem.model_state_bytes(total)
    assert (states.weights, states.gradients, states.optimizer) == (
        2_631_446_528, 2_631_446_528, 15_788_679_168)
    assert states.total == 21_051_572_224
    # Activations per layer: sbh = 2048 x 1 x 2048 = 4,194,304;
    # 34 sbh = 142,606,336; a s^2 b = 16 x 2048^2 = 67,108,864, x5 = 335,544,320;
    # layer = 478,150,656 bytes; 24 layers = 11,475,615,744 bytes.
    sbh, as2b = s * b * d, a * s * s * b
    assert 34 * sbh == 142_606_336 and 5 * as2b == 335_544_320
    assert mem.layer_activation_bytes(XL, s, b) == 478_150_656
    assert mem.layer_activation_bytes(XL, s, b, flash=True) == 142_606_336
    # The turn: 24 layers + final-norm and output-layer inputs (2 x 2 sbh = 16,777,216)
    # + fp32 logits (4 x 2048 x 50,257 = 411,705,344) = 11,904,098,304 bytes stored.
    run = mem.training_memory("gpt3_xl", s, b)
    assert mem.logits_bytes(XL, s, b) == 411_705_344
    assert run.timeline.peak == pytest.approx(11_475_615_744 + 16_777_216 + 411_705_344)
    assert run.peak == pytest.approx(21_051_572_224 + 11_904_098_304)


def test_korthikanti_34_sbh_and_5_as2b():
    assert mem.layer_activation_units(XL) == (34.0, 5.0)
    # Term by term: attention 11 sbh + 5 a s^2 b, MLP 19 sbh, two LayerNorms 4 sbh.
    items = {i.name: i.units(XL) for i in mem.activation_items(XL)}
    attention = sum(items[k] for k in ("qkv_in", "qk", "v", "o_in", "attn_mask"))
    mlp = sum(items[k] for k in ("mlp_in", "act_in", "down_in", "mlp_mask"))
    assert (attention, mlp, items["norm1_in"] + items["norm2_in"]) == (11, 19, 4)
    assert items["softmax"] + items["softmax_mask"] + items["softmax_drop"] == 5
    # fp32 activations double every item but the 1-byte masks.
    assert mem.layer_activation_units(XL, activation_bytes=4) == (66.0, 9.0)


def test_tensor_parallel_matches_table_2():
    s, b, t = 2048, 1, 4
    sbh, as2b = s * b * XL.hidden, XL.heads * s * s * b
    assert mem.layer_activation_bytes(XL, s, b, tp=t) == pytest.approx(
        sbh * (10 + 24 / t) + 5 * as2b / t)
    assert mem.layer_activation_bytes(XL, s, b, tp=t, sp=True) == pytest.approx(
        (34 * sbh + 5 * as2b) / t)
    assert mem.layer_activation_bytes(XL, s, b, tp=t, selective=True) == pytest.approx(
        sbh * (10 + 24 / t))


@pytest.mark.parametrize("recipe, optimizer, per", [
    ("mixed", "adam", 16), ("mixed", "sgd", 12), ("fp32", "adam", 16), ("fp32", "sgd", 12),
    ("bf16", "adam", 8), ("bf16", "sgd", 6), ("mixed", "adam_8bit", 10),
])
def test_bytes_per_parameter(recipe, optimizer, per):
    assert mem.bytes_per_parameter(recipe, optimizer).total == per


def test_mixed_adam_is_2_2_12():
    per = mem.bytes_per_parameter("mixed", "adam")
    assert (per.weights, per.gradients, per.optimizer) == (2, 2, 12)


def test_zero_stages_match_the_paper():
    """Rajbhandari et al.: 7.5B parameters over 64 GPUs: 120, 31.4, 16.6, 1.9 GB."""
    p = 7.5e9
    got = [mem.model_state_bytes(p, zero_stage=z, gpus=64).total / 1e9 for z in range(4)]
    assert [round(g, 1) for g in got] == [120.0, 31.4, 16.6, 1.9]


def test_llama_layer_blocks_and_ffn_rule():
    assert mem.llama_ffn_width(4096) == 11008
    for key in PRESETS:
        cfg = model(key)
        assert sum(b.count for b in mem.layer_weight_blocks(cfg)) == \
            tf.parameter_count(cfg).per_layer
    blocks = {b.name: b.count for b in mem.layer_weight_blocks(model("llama3_8b"))}
    assert blocks["wk"] == blocks["wq"] // 4  # 8 KV heads of 32
    assert "gate" in blocks and blocks["small"] == 2 * 4096  # two RMSNorm gains


def test_kv_head_divisor():
    assert mem.kv_head_divisor(96, 64) == 48
    assert mem.kv_head_divisor(16, 128) == 16
    assert mem.kv_head_divisor(16, 0) == 1


# --- the step timeline ------------------------------------------------------------------

def test_peak_is_at_the_turn_without_checkpointing():
    run = mem.training_memory("gpt3_xl", 2048, 1)
    tl = run.timeline
    assert tl.peak_time == pytest.approx(tl.turn)
    assert tl.total[0] == 0 and tl.total[-1] == 0
    forward = tl.t <= tl.turn
    assert np.all(np.diff(tl.total[forward]) >= 0)  # rises through the forward pass
    assert np.all(np.diff(tl.total[~forward]) <= 1e-6)  # falls through the backward pass
    assert tl.step_time == pytest.approx(3 * tl.turn)  # backward = 2 x forward


def test_checkpointing_makes_a_sawtooth_and_costs_one_forward():
    base = mem.training_memory("gpt3_xl", 2048, 1).timeline
    run = mem.training_memory("gpt3_xl", 2048, 1, policy=mem.EVERY_K, every=1).timeline
    assert run.step_time == pytest.approx(base.step_time + XL.layers)  # 24 recomputed
    assert len(run.recompute) == XL.layers
    backward = run.t > run.turn
    rises = np.sum(np.diff(run.activations[backward]) > 0)
    assert rises >= XL.layers - 1  # one tooth per layer
    assert run.peak < base.peak / 10
    assert run.checkpoints.max() == pytest.approx(XL.layers * 2 * 2048 * 2048)


def test_best_k_is_one_not_sqrt_l():
    sweep = tm.checkpoint_sweep("gpt3_xl", 2048, 1, False, 1)
    assert sweep.best_k == 1 != round(math.sqrt(XL.layers))
    # With FlashAttention a layer keeps only 34 sbh and the fp32 logits at the turn
    # (411.7 MB) set the floor: longer segments are free until a recomputed segment
    # outgrows it. k = 3: turn 8 x 8.4 MB + 16.8 MB + 411.7 MB = 495.6 MB, recompute
    # 8 x 8.4 MB + 3 x 142.6 MB = 494.9 MB; k = 4 recomputes 570 MB.
    flash = tm.checkpoint_sweep("gpt3_xl", 2048, 1, True, 1)
    assert flash.best_k == 3 != round(math.sqrt(XL.layers))
    assert flash.peaks[2] == pytest.approx(8 * 2 * 2048**2 + 4 * 2048**2 + 411_705_344)
    for run in (sweep, flash):  # any k: every layer recomputed once, one extra forward
        assert np.all(run.step_times == pytest.approx(run.step_times[0]))
        assert run.step_times[0] == pytest.approx(
            mem.training_memory("gpt3_xl", 2048, 1, policy=mem.EVERY_K,
                                every=7).timeline.step_time)
    sweep = tm.checkpoint_sweep("gpt3_xl", 2048, 1, False, 24)
    assert sweep.peaks[-1] < sweep.baseline.timeline.peak


@pytest.mark.parametrize("key, seq, b, flash", [
    ("gpt3_xl", 2048, 1, False), ("gpt3_xl", 2048, 1, True), ("gpt3_xl", 512, 7, True),
    ("llama3_8b", 8192, 2, True), ("gpt3_175b", 2048, 1, False), ("llama2_7b", 128, 3, False),
])
def test_closed_form_peaks_equal_the_timelines(key, seq, b, flash):
    cfg = model(key)
    ks = np.arange(1, cfg.layers + 1)
    runs = [mem.training_memory(key, seq, b, flash=flash, policy=mem.EVERY_K, every=int(k))
            for k in ks]
    closed = mem.checkpoint_peaks(cfg.layers, runs[0].layer_bytes, runs[0].checkpoint_bytes,
                                  mem.head_activation_bytes(cfg, seq, b),
                                  mem.logits_bytes(cfg, seq, b), ks)
    assert closed == pytest.approx([run.timeline.peak for run in runs], rel=1e-12)


def test_selective_recompute_drops_the_score_matrices():
    run = mem.training_memory("gpt3_xl", 2048, 1, policy=mem.SELECTIVE)
    assert run.layer_bytes == 34 * 2048 * 2048
    assert 0 < run.timeline.recompute[:, 1].sum() - run.timeline.recompute[:, 0].sum() < 24


@settings(max_examples=60, deadline=None)
@given(key=st.sampled_from(PRESETS), seq=st.sampled_from([128, 1024, 4096, 32768]),
       b=st.integers(1, 64), recipe=st.sampled_from(list(mem.RECIPES)),
       opt=st.sampled_from(list(mem.OPTIMIZERS)), flash=st.booleans(),
       policy=st.sampled_from(mem.POLICIES), every=st.integers(1, 200),
       zero=st.sampled_from(mem.ZERO_STAGES), gpus=st.integers(1, 512))
def test_memory_sweep(key, seq, b, recipe, opt, flash, policy, every, zero, gpus):
    run = mem.training_memory(key, seq, b, recipe, opt, flash=flash, policy=policy,
                              every=every, zero_stage=zero, gpus=gpus)
    tl = run.timeline
    for array in (tl.t, tl.checkpoints, tl.activations, tl.logits):
        assert np.all(np.isfinite(array))
        assert np.all(array >= 0)
    assert np.all(np.diff(tl.t) >= 0)
    assert tl.total[-1] == 0
    assert run.peak >= run.states.total > 0
    assert tl.peak == pytest.approx(tl.total.max())
    no_ckpt = mem.training_memory(key, seq, b, recipe, opt, flash=flash)
    assert tl.peak <= no_ckpt.timeline.peak * (1 + 1e-12)


# --- figure models ----------------------------------------------------------------------

def test_6_1_model_states_flat_and_peak_at_turn():
    m = tm.StepMemoryModel()
    m.rewind()
    seen = []
    while not m.finished:
        m.advance_by(0.05)
        seen.append((m.out.t, m.out.states, m.out.now))
    states = {s for _, s, _ in seen}
    assert len(states) == 1  # the grey band does not move
    t_peak = max(seen, key=lambda row: row[2])[0]
    assert abs(t_peak - m.out.memory.timeline.turn) <= 0.6
    m.advance_by(1e9)
    assert m.finished and m.out.phase == "done"


def test_6_1_step_and_reveal():
    m = tm.StepMemoryModel()
    m.rewind()
    m.step_once()
    assert m.out.t == pytest.approx(1.0)
    assert m.out.activations == pytest.approx(478_150_656)
    m.guess_peak = 33
    m.revealed = True
    assert "33.0 GB" in m.readouts()["peak"].text or m.readouts()["peak"].value > 0
    assert "close" in m.answer_text()
    m.checkpointing = True
    assert not m.revealed


def test_6_2_presets_and_12ld2():
    m = tm.LayerParametersModel()
    assert m.out.count.total == 1_315_723_264
    assert round(m.readouts()["share"].value, 1) == 91.8
    assert m.readouts()["layer_d2"].value == pytest.approx(12 + 13 / 2048)
    for key in PRESETS:
        m.preset = key
        assert m.out.count.total == tf.parameter_count(model(key)).total
    m.preset = "gpt3_xl"
    m.style = "llama"
    assert not m.out.cfg.bias and m.out.cfg.mlp == "swiglu" and m.out.cfg.kv_heads == 4
    m.style = "gpt"
    assert m.out.count.total == 1_315_723_264


def test_6_3_walk_reaches_34_and_5_and_flash_removes_magenta():
    m = tm.LayerActivationsModel()
    m.finish()
    out = m.out
    assert (out.sbh_so_far, out.as2b_so_far) == (34, 5)
    m.flash_attention = True
    out = m.out
    assert out.done == m.total_steps  # toggling keeps the place
    assert (out.sbh_so_far, out.as2b_so_far) == (34, 0)
    assert out.layer_bytes == 34 * 2048 * 2048
    m.go_to(2)
    assert m.out.done == 3 and m.out.sbh_so_far == 2 + 2 + 4


def test_6_4_reveal_and_readouts():
    m = tm.CheckpointEveryKModel()
    m.guess_k = 1
    m.revealed = True
    assert m.readouts()["best"].value == 1
    assert "right" in m.answer_text()


def test_6_5_fixes_say_what_they_shrink():
    m = tm.FitModel()
    out = m.out
    assert not out.fits and out.usable == pytest.approx(0.85 * 80e9)
    effects = {key: (delta, parts) for key, _, _, delta, parts in out.effects}
    act, logits = 3, 4
    for key in ("fix_flash", "fix_checkpoint"):
        delta, parts = effects[key]
        assert delta < 0 and parts[act] < 0 and parts[0] == parts[1] == parts[2] == 0
    assert effects["fix_8bit"][1][2] < 0 and effects["fix_8bit"][1][act] == 0
    assert effects["fix_bf16"][0] == 0  # already bf16: changes nothing
    text = tm.effect_text("bf16 weights", *effects["fix_bf16"], on=False)
    assert "changes nothing" in text
    m.fix_flash = True
    assert m.out.fits
    m.precision = "fp32"
    delta, parts = {k: (d, p) for k, _, _, d, p in m.out.effects}["fix_bf16"]
    # fp32 -> bf16 with an fp32 master: 16 bytes a parameter either way; activations halve.
    assert parts[0] < 0 and parts[1] < 0 and parts[2] > 0
    assert parts[0] + parts[1] + parts[2] == pytest.approx(0)
    assert parts[act] < 0 and parts[logits] == 0


@settings(max_examples=40, deadline=None)
@given(preset=st.sampled_from(PRESETS), gpu=st.sampled_from([k for k, _ in gpu_choices()]),
       seq=st.sampled_from([c for c, _ in tm.SEQ_CHOICES]), b=st.integers(1, 64),
       precision=st.sampled_from([c for c, _ in tm.PRECISION_CHOICES]),
       optimizer=st.sampled_from([c for c, _ in tm.OPTIMIZER_CHOICES]),
       fixes=st.lists(st.booleans(), min_size=5, max_size=5),
       zero=st.sampled_from([c for c, _ in tm.ZERO_CHOICES]), gpus=st.integers(2, 64))
def test_6_5_sweep(preset, gpu, seq, b, precision, optimizer, fixes, zero, gpus):
    m = tm.FitModel()
    with m.batch():
        m.preset, m.gpu, m.seq_len, m.micro_batch = preset, gpu, seq, b
        m.precision, m.optimizer, m.zero_stage, m.gpus = precision, optimizer, zero, gpus
        for name, on in zip(("fix_flash", "fix_checkpoint", "fix_half_batch", "fix_8bit",
                             "fix_bf16"), fixes, strict=True):
            m.set(name, on)
    out = m.out
    assert all(math.isfinite(p) and p >= 0 for p in out.after.parts + out.before.parts)
    assert out.after.total <= out.before.total * (1 + 1e-12)  # fixes never add memory
    for key, label, _, delta, parts in out.effects:
        assert math.isfinite(delta)
        assert tm.effect_text(label, delta, parts, m.fix_is_on(key))


@settings(max_examples=30, deadline=None)
@given(k=st.integers(1, 24), flash=st.booleans(), b=st.integers(1, 16),
       progress=st.floats(0, 100), ckpt=st.booleans(), preset=st.sampled_from(PRESETS),
       style=st.sampled_from(["gpt", "llama"]), ratio=st.floats(1, 8),
       kv=st.integers(1, 128), seq=st.integers(256, 16384), steps=st.integers(0, 40))
def test_figure_models_sweep(k, flash, b, progress, ckpt, preset, style, ratio, kv, seq,
                             steps):
    m1 = tm.StepMemoryModel()
    with m1.batch():
        m1.checkpointing, m1.flash_attention, m1.micro_batch = ckpt, flash, b
        m1.progress = progress
    assert math.isfinite(m1.out.now) and m1.out.now >= m1.out.states
    m2 = tm.LayerParametersModel()
    with m2.batch():
        m2.preset, m2.style, m2.mlp_ratio, m2.kv_heads = preset, style, ratio, kv
    assert m2.out.count.total > 0 and m2.out.cfg.heads % m2.out.cfg.kv_heads == 0
    m3 = tm.LayerActivationsModel()
    with m3.batch():
        m3.flash_attention, m3.seq_len, m3.micro_batch = flash, seq, b
    for _ in range(steps):
        m3.step_once()
    assert m3.out.bytes_so_far <= m3.out.layer_bytes + 1e-6
    m4 = tm.CheckpointEveryKModel()
    with m4.batch():
        m4.every, m4.flash_attention, m4.micro_batch = k, flash, b
    assert m4.out.best_k in range(1, 25)
    assert m4.out.memory.timeline.peak >= m4.out.peaks.min()
    for model_ in (m1, m2, m3, m4):
        for key, readout in model_.readouts().items():
            if isinstance(readout.value, float):
                assert math.isfinite(readout.value), key
