"""Lesson 12, inference serving: a decode step's cost and the memory that caps the batch
(gpuviz.models.serving)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuviz.core.trace import read_trace, write_trace
from gpuviz.data.hardware import gpu, load_gpus
from gpuviz.data.models import load_models, model
from gpuviz.models import transformer as tf
from gpuviz.models.memory import GB
from gpuviz.models.roofline import LayerModel
from gpuviz.models.serving import (
    BatchingModel,
    DecodeBatchModel,
    KvBlocksModel,
    decode_steps,
    memory_budget,
)
from gpuviz.models.serving.costs import prefill_compute_seconds
from gpuviz.models.serving.kv_blocks import BLOCK

PRESETS = list(load_models())
GPUS = list(load_gpus())


# --- 12.1 --------------------------------------------------------------------------------

def decode_model(**values) -> DecodeBatchModel:
    m = DecodeBatchModel()  # Llama-3-8B, H100, 2,048 tokens, bf16 cache
    for name, value in values.items():
        m.set(name, value)
    return m


def test_largest_batch_and_what_changes_it():
    assert decode_model().out.budget.max_batch == 186
    assert decode_model(cache="fp8").out.budget.max_batch == 372
    assert decode_model(context=8192).out.budget.max_batch == 46
    assert decode_model(preset="llama2_7b").out.budget.max_batch == 48  # no GQA


def test_budget_is_hbm_less_headroom_workspace_and_weights():
    b = memory_budget("llama3_8b", "h100_sxm", 2048, "bf16")
    assert b.hbm == 80 * GB and b.headroom == 12 * GB and b.workspace == 2 * GB
    assert b.weights == 2 * 8_030_261_248
    assert b.cache_per_sequence == 128 * 1024 * 2048
    assert b.cache_pool == pytest.approx(49.94 * GB, rel=1e-3)


def test_step_times_of_the_worked_example():
    """Batch 1: 4.87 ms; 64: 9.92 ms (2.04x for 64x the work); 186: 19.7 ms with the
    caches 76% of the bytes (the notes' numbers)."""
    times = {}
    for batch in (1, 64, 186):
        m = decode_model(batch_size=batch)
        times[batch] = m.out.step.time[0]
        assert m.out.bound == "memory"
    assert round(times[1] * 1e3, 3) == 4.874
    assert round(times[64] * 1e3, 3) == 9.923
    assert round(times[186] * 1e3, 3) == 19.698
    assert round(times[64] / times[1], 2) == 2.04
    m = decode_model(batch_size=186)
    assert round(100 * m.out.step.cache_share[0]) == 76
    assert m.readouts()["cache_share"].text == "76%"
    assert m.readouts()["step_time"].text == "19.7 ms"
    assert m.readouts()["slowdown"].text == "4.04×"
    assert decode_model(batch_size=64).readouts()["step_time"].text == "9.92 ms"
    assert decode_model().readouts()["step_time"].text == "4.87 ms"


def test_predict_the_step_at_batch_64_first():
    m = decode_model()
    r = m.readouts()["predicted"]
    assert r.hidden and round(r.value, 2) == 2.04
    m.set("guess_slowdown", 2.0)
    m.set("revealed", True)
    assert not m.readouts()["predicted"].hidden
    assert "2.04×" in m.answer_text() and "spot on" in m.answer_text()
    m.set("context", 8192)  # a new question hides the answer again
    assert m.readouts()["predicted"].hidden
    m.set("revealed", True)
    assert "Only 46 caches fit" in m.answer_text()


def test_one_accounting_with_the_transformer_module():
    """The step's bytes and FLOPs are forward_parts', at every batch: every parameter
    once and every sequence's cache."""
    cfg = model("llama3_8b")
    steps = decode_steps("llama3_8b", "h100_sxm", 2048, "bf16", np.array([1, 7, 186]))
    for i, batch in enumerate((1, 7, 186)):
        cost = tf.forward_parts(cfg, batch, 2048, "decode")
        assert steps.bytes[i] == pytest.approx(cost.bytes, rel=1e-12)
        assert steps.flops[i] == pytest.approx(cost.flops, rel=1e-12)
        assert steps.bytes[i] == pytest.approx(
            2 * tf.parameter_count(cfg).total + batch * 2048 * 128 * 1024, rel=1e-12)


def test_what_the_step_leaves_out():
    """The lesson's two caveats: the step counts the 1.05 GB input embedding table whole
    (0.31 ms at batch 1), of which a lookup reads only B rows; and it leaves out the
    activations that a kernel-by-kernel count (Lesson 2's ops) sends through HBM: 12 MB
    at batch 1, 2.25 GB at 186."""
    cfg = model("llama3_8b")
    count = tf.parameter_count(cfg)
    bandwidth = gpu("h100_sxm").hbm_bandwidth
    assert 2 * count.token_embedding == 1_050_673_152
    assert round(2 * count.token_embedding / bandwidth * 1e3, 2) == 0.31

    def activations(batch: int) -> float:
        layer = tf.layer_ops(cfg, batch, 2048, "decode")
        head = tf.head_ops(cfg, batch, 2048, "decode")
        return (cfg.layers * sum(op.activation_bytes for op in layer)
                + sum(op.activation_bytes for op in head))

    assert round(activations(1) / 1e6) == 12
    assert round(activations(186) / 1e9, 2) == 2.25


def test_figure_2_3_layers_and_the_whole_step():
    """Llama 2 7B at batch 1: figure 2.3's 32 layers take 4.19 ms kernel by kernel, the
    whole step 4.34 ms: plus the embedding table, output matrix and final norm (0.157 ms),
    less the layers' activations (3.4 us)."""
    layers = LayerModel()
    for name, value in (("preset", "llama2_7b"), ("gpu", "h100_sxm"), ("phase", "decode"),
                        ("batch_size", 1), ("context", 2048)):
        layers.set(name, value)
    assert layers.readouts()["model_time"].text == "4.19 ms"
    cfg = model("llama2_7b")
    bandwidth = gpu("h100_sxm").hbm_bandwidth
    step = decode_steps("llama2_7b", "h100_sxm", 2048, "bf16", 1)
    assert round(step.time[0] * 1e3, 2) == 4.34
    count = tf.parameter_count(cfg)
    outside = 2 * (count.total - count.layers) / bandwidth
    assert round(outside * 1e3, 3) == 0.157
    activations = cfg.layers * sum(op.activation_bytes
                                   for op in tf.layer_ops(cfg, 1, 2048, "decode"))
    assert round(activations / bandwidth * 1e6, 1) == 3.4
    assert step.time[0] == pytest.approx(layers.out.total_time * cfg.layers + outside
                                         - activations / bandwidth, rel=1e-9)


def test_fp8_cache_halves_the_cache_bytes_only():
    bf16 = decode_steps("llama3_8b", "h100_sxm", 2048, "bf16", 64)
    fp8 = decode_steps("llama3_8b", "h100_sxm", 2048, "fp8", 64)
    assert fp8.kv_cache[0] == bf16.kv_cache[0] / 2
    assert fp8.weights[0] == bf16.weights[0] and fp8.flops[0] == bf16.flops[0]


def test_trade_off_curve_covers_every_batch_that_fits():
    out = decode_model().out
    assert list(out.curve.batch) == list(range(1, 187))
    assert np.all(np.diff(out.curve.time) > 0)  # longer steps
    assert np.all(np.diff(out.curve.tokens_per_second) > 0)  # more tokens per second


def test_axes_move_in_few_steps_beyond_the_batch_that_fits(qapp):
    """Past the largest batch the bars grow with every notch of the slider; the three
    axes move in 1-2-5 steps there, not with each notch (each move repainted all three
    plots)."""
    from gpuviz import catalog
    from tests import figure_driver as drive

    spec = next(spec for spec in catalog.all_figures() if spec.number == "12.1")
    page = drive.build_page(spec)
    try:
        view, model = page.view, page.model
        shown, moves = None, 0
        for batch in range(model.out.budget.max_batch + 1, 1001, 25):
            model.set("batch_size", batch)
            drive.settle()
            ranges = (view._step_top, view._memory_top, view._trade_range)
            moves += shown is not None and ranges != shown
            shown = ranges
        assert moves <= 5  # of 32 notches (12 with the fine steps)
        model.set("batch_size", 64)  # fits: the longest bar fills its axis again
        drive.settle()
        assert view._step_top[0] in (15.0, 20.0, 30.0, 40.0)
    finally:
        page.close()


def test_too_big_a_batch_or_model_is_flagged():
    m = decode_model(batch_size=200)
    assert not m.out.fits and m.message()[1]
    m = decode_model(preset="gpt3_175b")
    assert m.out.budget.max_batch == 0 and len(m.out.curve.batch) == 0
    assert "more GPUs" in m.message()[0]


@settings(max_examples=60, deadline=None)
@given(preset=st.sampled_from(PRESETS), gpu_key=st.sampled_from(GPUS),
       batch=st.integers(1, 4096), context=st.integers(128, 131072),
       cache=st.sampled_from(["bf16", "fp8"]))
def test_decode_sweep(preset, gpu_key, batch, context, cache):
    m = decode_model(preset=preset, gpu=gpu_key, batch_size=batch, context=context,
                     cache=cache)
    out = m.out
    step = out.step
    assert math.isfinite(step.time[0]) and step.time[0] > 0
    assert step.time[0] >= out.first.time[0]
    assert 0 <= step.cache_share[0] < 1
    assert out.fits == (batch <= out.budget.max_batch)
    if len(out.curve.batch):
        assert out.curve.batch[-1] == out.budget.max_batch
        assert np.all(np.isfinite(out.curve.tokens_per_second))
    for readout in m.readouts().values():
        assert readout.text
    assert m.message()[0]


# --- 12.2 --------------------------------------------------------------------------------

def batching_model(**values) -> BatchingModel:
    m = BatchingModel()  # 4 slots, 16 requests, outputs up to 32 tokens, seed 1
    for name, value in values.items():
        m.set(name, value)
    return m


def test_static_batches_wait_for_their_longest_request():
    m = batching_model()
    outputs = m.out.outputs
    assert list(outputs) == [16, 17, 25, 31, 2, 5, 27, 31, 8, 10, 28, 14, 9, 27, 9, 14]
    batches = outputs.reshape(4, 4)
    assert m.out.static.steps == batches.max(axis=1).sum() == 117
    assert m.out.continuous.steps == 80


def test_continuous_slots_take_the_next_request_at_once():
    """Each request starts the step after the slot that frees first, as a heap of
    free times says; the scheduler's times agree."""
    m = batching_model(seed=7, slots=3, requests=20)
    result = m.out.continuous.schedule
    free = [0] * 3
    for i, n in enumerate(m.out.outputs):
        slot = min(range(3), key=lambda s: (free[s], s))
        name = f"continuous slot {slot + 1} R{i + 1} prefill"
        assert result.start[result.index(name)] == free[slot]
        free[slot] += int(n)
    assert m.out.continuous.steps == max(free)


def test_readouts_of_both_policies():
    r = batching_model().readouts()
    assert r["static_steps"].value == 117 and r["continuous_steps"].value == 80
    assert r["static_use"].text == "58%" and r["continuous_use"].text == "85%"
    assert r["speedup"].text == "1.46×"
    step = decode_steps("llama3_8b", "h100_sxm", 2048, "bf16", 4).time[0]
    assert r["continuous_rate"].value == pytest.approx(273 / (80 * step))
    assert round(step * 1e3, 2) == 5.11  # the lesson's numbers
    assert round(r["static_rate"].value) == 456 and round(r["continuous_rate"].value) == 667


def test_trace_has_a_process_per_policy_and_a_thread_per_slot(tmp_path):
    m = batching_model(slots=3)
    trace = m.trace()
    path = tmp_path / "batching.json"
    write_trace(trace, path)
    events = json.loads(path.read_text(encoding="utf-8"))["traceEvents"]
    processes = {e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert processes == {"Static batching", "Continuous batching"}
    boxes = [e for e in events if e["ph"] == "X"]
    assert len(boxes) == len(m.out.static.schedule.tasks) + len(m.out.continuous.schedule.tasks)
    assert max(e["ts"] + e["dur"] for e in boxes) == pytest.approx(
        m.out.static.steps * trace.seconds * 1e6)
    back = read_trace(path)
    assert [lane.text for lane in back.lanes] == ["slot 1", "slot 2", "slot 3"] * 2


@settings(max_examples=60, deadline=None)
@given(slots=st.integers(2, 16), requests=st.integers(4, 48), longest=st.integers(2, 128),
       seed=st.integers(0, 9999))
def test_batching_sweep(slots, requests, longest, seed):
    m = batching_model(slots=slots, requests=requests, longest=longest, seed=seed)
    out = m.out
    tokens = int(out.outputs.sum())
    assert out.continuous.steps <= out.static.steps
    assert out.static.steps >= -(-tokens // slots)
    for policy in (out.static, out.continuous):
        # every output token is one busy slot-step
        assert policy.slot_use == pytest.approx(tokens / (slots * policy.steps))
        assert 0 < policy.slot_use <= 1
        assert np.isfinite(policy.tokens_per_second)
    for readout in m.readouts().values():
        assert readout.text


# --- 12.3 --------------------------------------------------------------------------------

def kv_model(**values) -> KvBlocksModel:
    m = KvBlocksModel()  # contiguous, 24 blocks of 4, requests up to 20 tokens
    for name, value in values.items():
        m.set(name, value)
    return m


def test_reservation_wastes_most_of_its_range_and_paging_almost_none():
    """Three requests (prompts 5, 3 and 7) after three steps hold 24 tokens: 60 slots
    reserved (40% used) against 28 in blocks (86%)."""
    contiguous = kv_model(history="step,step,step")
    assert contiguous.out.allocated == 60 and round(100 * contiguous.out.used_share) == 40
    paged = kv_model(history="step,step,step", mode="paged")
    assert paged.out.allocated == 28 and round(100 * paged.out.used_share) == 86
    assert paged.readouts()["used_share"].text == "86%"
    # paging wastes less than one block per sequence
    assert paged.out.allocated - np.count_nonzero(paged.out.holds) < 3 * BLOCK


def test_fork_shares_every_block_and_copies_on_write():
    m = kv_model(mode="paged", history="step,step,fork")
    parent, child = m.out.requests[0], m.out.requests[3]
    assert child.blocks == parent.blocks and child.forked_from == 1
    assert all(m.out.refs[b] == 2 for b in parent.blocks)
    assert "×2" in m.out.message and m.out.copies == 0
    m.set("history", "step,step,fork,step")  # request 1 writes into the shared last block
    parent, child = m.out.requests[0], m.out.requests[3]
    assert m.out.copies == 1 and "copy-on-write" in m.out.message
    assert parent.blocks[0] == child.blocks[0] and m.out.refs[parent.blocks[0]] == 2
    assert parent.blocks[1] != child.blocks[1]
    m.set("selected", 4)
    assert [row[:2] for row in m.out.block_table()] == [(0, 0), (1, 1)]


def test_a_full_pool_preempts_the_newest_request():
    m = kv_model(mode="paged", history=",".join(["add"] * 8 + ["step"] * 6))
    assert m.out.preemptions == 4 and m.out.warn
    assert "preempted" in m.out.message
    assert m.out.allocated == len(m.out.owner)  # every block in use


def test_contiguous_requests_wait_for_a_whole_range():
    m = kv_model(history=",".join(["add"] * 8))
    assert m.readouts()["running"].value == 4 and m.readouts()["waiting"].value == 7
    assert "consecutive" in m.out.message


def test_finish_frees_memory_for_the_waiting():
    m = kv_model(history="add,add,finish")
    assert m.readouts()["running"].value == 4 and "Admitted: 5" in m.out.message


@settings(max_examples=60, deadline=None)
@given(mode=st.sampled_from(["contiguous", "paged"]), blocks=st.integers(8, 64),
       reserve=st.integers(8, 48), prefix=st.booleans(),
       actions=st.lists(st.sampled_from(["step", "add", "fork", "finish"]), max_size=60))
def test_kv_blocks_sweep(mode, blocks, reserve, prefix, actions):
    m = kv_model(mode=mode, pool_blocks=blocks, reserve=reserve, system_prompt=prefix,
                 history=",".join(actions))
    out = m.out
    assert 0 < out.used_share <= 1 if out.allocated else out.used_share == 1
    assert out.allocated <= len(out.owner)
    running = [r for r in out.requests if r.state == "running"]
    if mode == "paged":
        refs = np.zeros(blocks, dtype=int)
        for r in running:
            assert len(r.blocks) == -(-r.length // BLOCK)
            for b in r.blocks:
                refs[b] += 1
        refs[list(out.prefix)] += 1  # the prefix cache's own hold
        assert np.array_equal(refs, out.refs)  # reference counts are the tables'
    else:
        starts = sorted(r.start for r in running)
        assert all(np.diff(starts) >= reserve)  # no two ranges overlap
    cached = len(out.prefix) * BLOCK
    assert int(np.count_nonzero(out.holds)) <= sum(r.length for r in running) + cached
    for readout in m.readouts().values():
        assert readout.text


def test_prefix_caching_maps_the_system_prompt_to_cached_blocks():
    """Every prompt starts with the same 8 tokens: request 1 computes their 2 blocks,
    requests 2, 3 and 4 map them (6 blocks saved, 3 x 114 us of prefill at peak); the
    cache keeps them after every request has finished."""
    m = kv_model(mode="paged", system_prompt=True, history="add")
    out = m.out
    assert out.prefix == (0, 1) and out.saved_blocks == 6
    assert all(r.blocks[:2] == [0, 1] for r in out.requests)
    assert list(out.refs[:2]) == [5, 5]  # four requests and the cache
    assert "from the prefix cache" in out.message
    one = prefill_compute_seconds("llama3_8b", "h100_sxm", 8)
    assert round(one * 1e6) == 114
    assert m.readouts()["prefill_saved"].value == pytest.approx(3 * one * 1e6)
    m.set("history", "add,finish,finish,finish,finish")
    assert list(m.out.refs[:2]) == [1, 1] and m.out.allocated == 2 * BLOCK
    m.set("mode", "contiguous")  # reservations cannot share
    assert m.out.saved_blocks == 0


def test_kv_pool_takes_the_blocks_per_row_that_draw_it_largest(qapp):
    """A wide canvas keeps 8 blocks a row; a taller one takes fewer, in more rows, while
    that draws a slot larger (issue 29: diagrams use the room they are given). The view
    follows a resize."""
    from gpuviz import catalog
    from gpuviz.views.serving.kv_blocks import best_columns, diagram_size
    from tests import figure_driver as drive

    assert best_columns(24, 12, 1800, 500) == 8
    assert best_columns(24, 12, 900, 1100) == 4
    columns = best_columns(24, 12, 900, 650)  # 1280x800's canvas
    assert 4 < columns < 8

    def slot_px(c: int) -> float:
        width, height = diagram_size(24, c, 12)
        return min(900 / width, 650 / height)

    assert slot_px(columns) >= max(slot_px(c) for c in range(4, 9)) - 1.0
    assert slot_px(columns) > 1.2 * slot_px(8)
    spec = next(spec for spec in catalog.all_figures() if spec.number == "12.3")
    page = drive.build_page(spec)
    try:
        for size, wanted in (((1900, 700), 8), ((900, 1300), 4)):
            page.resize(*size)
            drive.settle()
            box = page.view.box.size()
            assert page.view._columns == wanted == best_columns(
                24, 12, box.width(), box.height())
    finally:
        page.close()
