"""Lesson 13: the numbers the spec asks each figure to show, and sweeps over every input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuviz.data.models import model
from gpuviz.models.profiling import MfuModel, flops_per_token, matmul_parameters
from gpuviz.models.profiling.mfu import PALM, TPU, palm_run, preset, preset_choices
from gpuviz.models.profiling.regime import RegimeModel, step_times


def log_line(m: MfuModel, **values: object) -> MfuModel:
    with m.batch():
        for name, value in values.items():
            m.set(name, value)
    return m


def palm(m: MfuModel, attention: str = "heads") -> MfuModel:
    run = palm_run()
    return log_line(m, preset=PALM, accelerator=TPU, chips=run["chips"],
                    sequences=run["sequences"], seq_len=run["sequence"], attention=attention,
                    step_time=run["sequences"] * run["sequence"] / run["tokens_per_second"])


def test_matmul_parameters_leave_out_an_untied_input_embedding_only():
    assert matmul_parameters(model("llama2_7b")) == 6_607_343_616  # 6.607B
    assert matmul_parameters(preset(PALM)) / 1e9 == pytest.approx(540.35, abs=0.02)


def test_the_7b_log_line():
    out = MfuModel().out  # the defaults are the log line: 32 H100s, 256 x 4096 per 3.60 s
    assert round(out.tokens_per_second) == 291_271
    assert round(100 * out.mfu, 1) == 42.4
    assert round(100 * out.hfu, 1) == 56.5  # full recomputation
    assert MfuModel().readouts()["hfu"].hidden  # HFU would give the MFU away
    assert out.hfu / out.mfu == pytest.approx(4 / 3, rel=0.01)
    readouts = MfuModel().readouts()
    assert readouts["mfu"].revealed_text == "42.4%"
    assert readouts["mfu"].hidden  # predict first
    assert readouts["tokens_per_second"].value == 291_271


def test_palm_needs_its_attention_width():
    assert round(100 * palm(MfuModel()).out.mfu, 1) == 46.2
    assert round(100 * palm(MfuModel(), "hidden").out.mfu, 1) == 46.5
    assert palm(MfuModel()).out.model_flops == pytest.approx(3.278e12, rel=1e-3)


def test_palm_published_hfu_lies_between_none_and_full():
    none = palm(MfuModel())
    none.set("recompute", "none")
    full = palm(MfuModel())
    full.set("recompute", "full")
    assert round(100 * none.out.hfu, 1) == 46.2
    assert round(100 * full.out.hfu, 1) == 61.6
    assert none.out.hfu < 0.578 < full.out.hfu


def test_planning_a_trillion_tokens_on_256_h100s():
    m = log_line(MfuModel(), mode="plan", chips=256, assumed_mfu=40.0, tokens=1e12)
    assert round(m.out.plan_days, 1) == 5.3
    assert m.readouts()["days"].revealed_text == "5.3 days"
    assert m.readouts()["mfu"].text == "40.0%"  # assumed, so not hidden
    assert round(100 * m.out.hfu, 1) == 53.3  # full recomputation at that MFU


def test_the_log_line_also_times_the_token_budget():
    out = MfuModel().out
    assert out.plan_seconds == pytest.approx(1e12 / out.tokens_per_second)


def test_a_step_time_that_is_not_positive_is_refused():
    parameter = MfuModel.parameter("step_time")
    for text in ("0", "-3.6", "abc"):
        with pytest.raises(ValueError):
            parameter.parse(text)


def test_recomputation_orders_the_flops():
    n, layers, width, seq = 7e9, 32, 4096, 4096
    counts = [flops_per_token(n, layers, width, seq, r) for r in ("none", "selective", "full")]
    assert counts == sorted(counts)
    assert counts[0] == flops_per_token(n, layers, width, seq)


@settings(max_examples=80, deadline=None)
@given(key=st.sampled_from([key for key, _ in preset_choices()]),
       accelerator=st.sampled_from([k for k, _ in MfuModel.parameter("accelerator").choices]),
       attention=st.sampled_from(["heads", "hidden"]),
       recompute=st.sampled_from(["none", "selective", "full"]),
       mode=st.sampled_from(["log", "plan"]),
       chips=st.integers(1, 65536), sequences=st.integers(1, 65536),
       seq_len=st.integers(128, 131072), step_time=st.floats(0.01, 1e5),
       tokens=st.floats(1e9, 1e14), assumed=st.floats(1, 100), guess=st.floats(1, 100))
def test_sweep(key, accelerator, attention, recompute, mode, chips, sequences, seq_len,
               step_time, tokens, assumed, guess):
    m = log_line(MfuModel(), preset=key, accelerator=accelerator, attention=attention,
                 recompute=recompute, mode=mode, chips=chips, sequences=sequences,
                 seq_len=seq_len, step_time=step_time, tokens=tokens, assumed_mfu=assumed,
                 guess_mfu=guess, revealed=True)
    out = m.out
    for value in (out.mfu, out.hfu, out.plan_days, out.tokens_per_second):
        assert math.isfinite(value) and value > 0
    assert out.hfu >= out.mfu
    for readout in m.readouts().values():
        assert readout.revealed_text
    assert m.answer_text()


# ---- 13.2: which regime, which fix ----------------------------------------------------

SIZES = {"small": 256, "medium": 3072, "large": 16384}


def alone(n: int) -> dict[str, float]:
    m = RegimeModel()
    m.set("n", n)
    return {fix: m.readouts()[f"{fix}_alone"].value for fix in ("fuse", "cuda_graph", "fp8")}


def test_each_fix_helps_in_its_own_regime():
    small, medium, large = (alone(n) for n in SIZES.values())
    # A CUDA graph helps only at small n, where the GPU waits for launches.
    assert small["cuda_graph"] == pytest.approx(2.578, abs=1e-3)
    assert medium["cuda_graph"] == pytest.approx(1.0) and large["cuda_graph"] == pytest.approx(1.0)
    # fp8 helps only where the matmul's compute dominates.
    assert small["fp8"] == pytest.approx(1.0)
    assert 1.2 < medium["fp8"] < large["fp8"]
    assert large["fp8"] == pytest.approx(1.634, abs=1e-3)
    # Fusing helps most at small and medium n (launches and traffic), least at large n.
    assert small["fuse"] == pytest.approx(4.462, abs=1e-3)
    assert medium["fuse"] == pytest.approx(2.074, abs=1e-3)
    assert large["fuse"] == pytest.approx(1.243, abs=1e-3)
    assert large["fuse"] < medium["fuse"] < small["fuse"]


def test_the_regimes_at_the_three_sizes():
    regimes = []
    for n in SIZES.values():
        m = RegimeModel()
        m.set("n", n)
        regimes.append(m.readouts()["regime"].name)
    assert regimes == ["overhead", "memory", "compute"]


def test_small_step_times_count_launches():
    before = step_times(np.array([256]), 8, False, False, False)
    assert before.time[0] == pytest.approx(9 * 3.6e-6, rel=0.01)  # nine launches
    graph = step_times(np.array([256]), 8, False, True, False)
    assert graph.time[0] == pytest.approx(3.6e-6 + 9 * 1e-6)  # one launch, 1 µs minimum


@settings(max_examples=60, deadline=None)
@given(n=st.integers(64, 32768), k=st.integers(1, 16), fuse=st.booleans(),
       graph=st.booleans(), fp8=st.booleans())
def test_regime_sweep(n, k, fuse, graph, fp8):
    m = RegimeModel()
    with m.batch():
        for name, value in (("n", n), ("k", k), ("fuse", fuse), ("cuda_graph", graph),
                            ("fp8", fp8)):
            m.set(name, value)
    for steps in m.out.values():
        assert np.all(np.isfinite(steps.time)) and np.all(steps.time > 0)
        assert np.all(steps.overhead >= -1e-15)
        assert np.allclose(steps.overhead + steps.memory + steps.compute, steps.time)
    assert m.out["now"].time[0] <= m.out["before"].time[0] * (1 + 1e-12)
    assert all(r.revealed_text for r in m.readouts().values())


def test_tokens_per_second_past_a_million_in_millions():
    m = log_line(MfuModel(), step_time=0.01)
    assert m.readouts()["tokens_per_second"].text == "105 M tokens/s"
    assert MfuModel().readouts()["tokens_per_second"].text == "291,271 tokens/s"
