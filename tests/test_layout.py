"""Figure 9.4: plan a TP × PP × DP layout (tensor_pipeline.layout), with the worked
examples of Lesson 9's text."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuviz.data.models import load_models, model
from gpuviz.models import transformer as tf
from gpuviz.models.tensor_pipeline import layout as lo

GB = 1e9


def test_worked_example_70b_on_8_servers_tp8_pp8():
    m = lo.LayoutModel()
    out = m.out
    assert (out.layout.gpus, out.layout.dp, out.layout.used) == (64, 1, 64)
    layer_params = model("llama2_70b").layers * tf.parameter_count(model("llama2_70b")).per_layer
    assert layer_params / 1e9 == pytest.approx(68.45, abs=0.005)
    mem = out.memory
    assert mem.parameters == pytest.approx(layer_params / 64)  # 1.07 B per GPU
    assert mem.states.total == pytest.approx(16 * layer_params / 64)  # 16 bytes each
    assert mem.states.total / GB == pytest.approx(17.1, abs=0.05)
    assert mem.in_flight == 8 and mem.micro_batch_bytes / GB == pytest.approx(3.75, abs=0.005)
    assert mem.total / GB == pytest.approx(47.1, abs=0.05)
    assert out.warnings == () and m.readouts()["fits"].value is True


def test_pp4_with_and_without_zero1():
    m = lo.LayoutModel()
    m.pp = 4
    assert m.out.layout.dp == 2 and m.out.memory.in_flight == 4
    assert m.out.memory.total / GB == pytest.approx(64.3, abs=0.05)  # 16 bytes per param
    assert m.out.memory.activations / GB == pytest.approx(30.0, abs=0.05)  # as with PP 8
    m.zero1 = True
    assert m.out.memory.states.optimizer / GB == pytest.approx(12.8, abs=0.05)  # 12 / DP
    assert m.out.memory.total / GB == pytest.approx(51.4, abs=0.05)


def test_tp16_crosses_servers():
    m = lo.LayoutModel()
    with m.batch():
        m.pp, m.zero1, m.tp = 4, True, 16
    out = m.out
    assert out.layout.dp == 1 and out.memory.total / GB == pytest.approx(42.9, abs=0.05)
    assert any("crosses servers" in w for w in out.warnings)


def test_the_7b_model_needs_only_data_parallelism_and_zero1():
    m = lo.LayoutModel()
    with m.batch():
        m.preset, m.tp, m.pp = "llama2_7b", 1, 1
    assert m.out.layout.dp == 64
    assert m.out.memory.total / GB == pytest.approx(120.9, abs=0.05)  # 16 × 6.48 B + 17.2
    assert any("Does not fit" in w for w in m.out.warnings)
    m.zero1 = True
    assert m.out.memory.total / GB == pytest.approx(44.4, abs=0.05)
    assert m.out.warnings == ()


def test_ranks_follow_megatron_order():
    lay = lo.layout(2, 2, 4)  # 16 GPUs: TP 2, PP 4, DP 2
    assert lay.dp == 2
    assert lay.groups("tp").tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7]
    assert lay.groups("dp").tolist() == [0, 0, 1, 1] * 4
    assert lay.groups("pp").tolist() == [0] * 4 + [1] * 4 + [2] * 4 + [3] * 4
    idle = lo.layout(1, 3, 2)  # 6 of 8 GPUs used
    assert idle.groups("tp").tolist()[-2:] == [-1, -1]


def test_warnings_for_a_bad_plan():
    m = lo.LayoutModel()
    with m.batch():
        m.nodes, m.tp, m.pp = 1, 8, 8
    assert any("more than the 8 GPUs" in w for w in m.out.warnings)
    with m.batch():
        m.nodes, m.tp, m.pp, m.global_batch = 8, 8, 8, 1000
    m.pp = 3
    text = " ".join(m.out.warnings)
    assert "does not divide" in text and "not split evenly" in text
    with m.batch():
        m.tp, m.pp, m.global_batch = 1, 8, 16
    assert any("Too few micro-batches" in w for w in m.out.warnings)


@given(preset=st.sampled_from(list(load_models())), nodes=st.integers(1, 32),
       tp=st.integers(1, 16), pp=st.integers(1, 32), zero1=st.booleans(),
       ckpt=st.booleans(), seq=st.floats(512, 32768), b=st.integers(1, 16),
       batch=st.floats(16, 8192), colour=st.sampled_from([c for c, _ in lo.COLOURINGS]))
@settings(max_examples=80, deadline=None)
def test_sweep(preset, nodes, tp, pp, zero1, ckpt, seq, b, batch, colour):
    m = lo.LayoutModel()
    with m.batch():
        m.preset, m.nodes, m.tp, m.pp, m.zero1, m.checkpointing = preset, nodes, tp, pp, \
            zero1, ckpt
        m.seq, m.micro_batch, m.global_batch, m.colour_by = seq, b, batch, colour
    out = m.out
    lay = out.layout
    assert lay.used <= lay.gpus == 8 * nodes
    assert (lay.dp >= 1) == (tp * pp <= lay.gpus)
    groups = lay.groups(colour)
    assert len(groups) == lay.gpus and (groups[:lay.used] >= 0).all()
    assert math.isfinite(out.memory.total) and out.memory.total > 0
    assert 1 <= out.memory.in_flight <= pp and 0 <= out.bubble < 1
    assert np.isfinite(out.free)
    assert all(r.text for r in m.readouts().values())
