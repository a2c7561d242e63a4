"""Lesson 1 (GPU architecture): figures 1.1 to 1.4, numbers from the spec notes and facts.md."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuviz.data.hardware import gpu, load_gpus
from gpuviz.models.gpu_architecture import (
    ISSUE,
    KB,
    LEVELS,
    MEMORY_LEVELS,
    QUANTITIES,
    READY,
    WAIT,
    HierarchyModel,
    MemoryHierarchyModel,
    OccupancyModel,
    WarpSchedulerModel,
    format_quantity,
    grid_launch,
    idle_share,
    level_description,
    memory_hierarchy,
    memory_levels,
    occupancy,
    simulate_warps,
    warp_schedule,
    warps_to_hide_latency,
)

H100 = "h100_sxm"
A100 = "a100_sxm"
GPUS = list(load_gpus())


# --- 1.3 occupancy -----------------------------------------------------------------------

def test_occupancy_starting_example_fits_eight_blocks_with_registers_and_warps_tied():
    out = occupancy(gpu(H100), 256, 32, 16 * KB)
    assert out.blocks == 8
    assert out.occupancy == 1.0
    assert set(out.limiting) == {"warps", "registers"}


def test_occupancy_100kb_shared_memory_limits_to_two_blocks():
    out = occupancy(gpu(H100), 256, 32, 100 * KB)
    assert out.blocks == 2
    assert out.limiting == ("shared_memory",)


def test_occupancy_128_registers_limits_to_two_blocks():
    out = occupancy(gpu(H100), 256, 128, 16 * KB)
    assert out.blocks == 2
    assert out.limiting == ("registers",)


def test_occupancy_1024_threads_65_registers_cannot_launch():
    out = occupancy(gpu(H100), 1024, 65, 0)
    assert out.registers_per_warp == 2304
    assert out.registers_per_block == 73_728
    assert out.blocks == 0
    assert out.failure


def test_occupancy_1024_threads_64_registers_fits_one_block():
    out = occupancy(gpu(H100), 1024, 64, 0)
    assert out.blocks == 1
    assert out.registers_per_block == 65_536
    assert out.occupancy == 0.5
    assert not out.failure


@pytest.mark.parametrize(("registers", "blocks"), [(65, 3), (64, 4), (32, 8)])
def test_occupancy_facts_table_rows(registers, blocks):
    out = occupancy(gpu(H100), 256, registers, 0)
    assert out.blocks == blocks
    assert "registers" in out.limiting


@pytest.mark.parametrize(("key", "blocks"), [(H100, 4), (A100, 3)])
def test_occupancy_48kb_dynamic_shared_memory(key, blocks):
    out = occupancy(gpu(key), 256, 32, 48 * KB)
    assert out.shared_memory_per_block == 50_176  # 48 K + 1 K reserved, 128-byte units
    assert out.limits["shared_memory"] == blocks


def test_occupancy_model_readouts_and_names():
    model = OccupancyModel()
    assert set(model.parameters()) >= {"gpu", "threads_per_block", "registers_per_thread",
                                       "shared_memory_kb"}
    assert model.readouts()["resident_blocks"].value == 8
    with model.batch():
        model.threads_per_block = 1024
        model.registers_per_thread = 65
    assert model.readouts()["launch"].value is False
    assert model.readouts()["launch"].text == "fails"


# --- 1.1 hierarchy and waves -------------------------------------------------------------

def test_hierarchy_blocks_of_1024_leave_103_sms_idle():
    out = grid_launch(gpu(H100), 300_000, 1024)
    assert out.blocks == 293
    assert out.resident_blocks == 2
    assert out.waves == 2
    assert out.last_wave_blocks == 29
    assert out.idle_sms_last_wave == 103
    assert out.sms == 132


def test_hierarchy_blocks_of_256_leave_16_idle():
    out = grid_launch(gpu(H100), 300_000, 256)
    assert out.blocks == 1172
    assert out.idle_sms_last_wave == 16
    assert out.idle_threads == 32


@pytest.mark.parametrize("block_size", [32, 64, 96, 128])
def test_hierarchy_small_blocks_leave_no_sm_idle(block_size):
    assert grid_launch(gpu(H100), 300_000, block_size).idle_sms_last_wave == 0


def test_hierarchy_model_defaults_and_description():
    model = HierarchyModel()
    assert model.problem_size == 300_000
    assert model.block_size == 256
    model.block_size = 1024
    readouts = model.readouts()
    assert readouts["blocks"].value == 293
    assert readouts["idle_sms_last_wave"].value == 103
    for key, _ in LEVELS:
        model.level = key
        assert len(model.description()) > 40


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(GPUS), st.integers(1, 100_000_000), st.integers(1, 32))
def test_hierarchy_invariants(key, n, warps):
    g = gpu(key)
    out = grid_launch(g, n, warps * 32)
    assert out.blocks * out.block_size >= n > (out.blocks - 1) * out.block_size
    assert 0 <= out.idle_threads < out.block_size
    assert out.waves >= 1
    assert 1 <= out.last_wave_blocks <= out.blocks_per_wave
    assert (out.waves - 1) * out.blocks_per_wave + out.last_wave_blocks == out.blocks
    assert out.idle_sms_last_wave == max(0, out.sms - out.last_wave_blocks)
    assert 0 < out.tail_efficiency <= 1
    for level, _ in LEVELS:
        assert level_description(level, out, g)


# --- 1.2 warp scheduler ------------------------------------------------------------------

def test_one_warp_leaves_the_scheduler_idle_90_percent():
    assert idle_share(1, 10, 90) == pytest.approx(0.9)
    assert warp_schedule(1, 10, 90).idle_share_simulated == pytest.approx(0.9)


def test_gaps_vanish_at_ten_warps():
    assert warps_to_hide_latency(10, 90) == 10
    assert warp_schedule(9, 10, 90).idle_share_simulated == pytest.approx(0.1)
    assert warp_schedule(10, 10, 90).idle_share_simulated == pytest.approx(0.0)
    assert idle_share(10, 10, 90) == 0.0


def test_warps_needed_rounds_up_when_latency_is_not_a_multiple():
    assert warps_to_hide_latency(7, 95) == 1 + 14
    assert warp_schedule(14, 7, 95).idle_share_simulated > 0
    assert warp_schedule(15, 7, 95).idle_share_simulated == pytest.approx(0.0)


def test_simulated_schedule_never_overlaps_and_respects_latency():
    starts, owners = simulate_warps(4, 10, 90, 1000)
    assert np.all(np.diff(starts) >= 10 - 1e-9)
    for warp in range(4):
        mine = starts[owners == warp]
        assert np.all(np.diff(mine) >= 100 - 1e-9)


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 16), st.integers(1, 50), st.integers(1, 80))
def test_simulation_matches_formula(n, c, latency_tens):
    latency = 10 * latency_tens
    out = warp_schedule(n, c, latency)
    assert out.idle_share_simulated == pytest.approx(out.idle_share_formula, abs=1e-9)
    assert (out.idle_share_formula == 0) == (n >= out.warps_needed)
    assert np.all(out.starts < out.horizon)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 16), st.integers(1, 50), st.integers(1, 80))
def test_warp_bars_tile_every_lane(n, c, latency_tens):
    """Each warp issues c, waits L, then is ready until its next burst; the scheduler's
    issue bars and idle gaps cover the horizon once."""
    out = warp_schedule(n, c, 10 * latency_tens)
    bars = out.bars
    assert np.all(bars.end > bars.start) and np.all(bars.end <= out.horizon)
    for warp in range(n):
        mine = bars.lane == warp
        start, end, kind = bars.start[mine], bars.end[mine], bars.kind[mine]
        first = out.starts[out.owners == warp]
        if not first.size:  # many warps, short horizon: this one never gets to issue
            assert not start.size
            continue
        assert np.all(start[1:] == end[:-1])  # no gap, no overlap, in time order
        assert start[0] == first[0] and end[-1] == out.horizon
        issue = end[kind == ISSUE] - start[kind == ISSUE]
        assert np.all(issue[:-1] == c)  # the last one may be cut at the horizon
        assert np.all((end - start)[kind == WAIT][:-1] == 10 * latency_tens)
    sched = bars.lane == n
    assert np.all(bars.kind[sched] == ISSUE)
    assert np.array_equal(bars.start[sched], out.starts)
    covered = (bars.end[sched] - bars.start[sched]).sum() + (bars.idle_end
                                                               - bars.idle_start).sum()
    assert covered == pytest.approx(out.horizon)


def test_ready_bars_only_when_another_warp_issues():
    bars = warp_schedule(12, 10, 90).bars
    ready = bars.kind == READY
    assert ready.any() and bars.idle_start.size == 0  # 12 > 10 warps: never idle
    assert not (warp_schedule(1, 10, 90).bars.kind == READY).any()


def test_warp_scheduler_animation():
    model = WarpSchedulerModel()
    assert model.finished and model.t == model.out.horizon  # opens fully drawn
    model.rewind()
    assert model.t == 0 and not model.finished
    model.step()
    assert model.t == pytest.approx(10)  # end of the first burst
    model.set_playing(True)
    model.advance(0.5)
    assert 10 < model.t < model.out.horizon
    model.advance(1e9)
    assert model.finished and not model.playing
    model.warps = 10
    assert model.readouts()["idle_simulated"].value == 0.0
    model.reset()
    assert model.warps == 1 and model.readouts()["idle_formula"].value == 90.0


# --- 1.4 memory hierarchy ----------------------------------------------------------------

def test_hbm_is_1600_times_l2_but_slower():
    out = memory_hierarchy(gpu(H100), show_links=False)
    assert out.hbm_over_l2_size == pytest.approx(1600)
    levels = {lv.key: lv for lv in out.levels}
    assert levels["hbm"].bandwidth_bytes_s.value < levels["l2"].bandwidth_bytes_s.value
    assert levels["l2"].bandwidth_bytes_s.value == pytest.approx(5.5e12)
    assert levels["l2"].bandwidth_bytes_s.status == "estimate"
    assert out.l2_over_hbm_bandwidth > 1


def test_on_chip_bandwidths_are_computed_or_estimated_never_invented():
    levels = {lv.key: lv for lv in memory_levels(gpu(H100))}
    smem = levels["shared"].bandwidth_bytes_s
    assert smem.value == pytest.approx(32 * 4 * 132 * 1.98e9)
    assert smem.status == "computed"
    regs = levels["registers"].bandwidth_bytes_s
    assert regs.value == pytest.approx(128 * 3 * 4 * 132 * 1.98e9, rel=1e-3)
    assert regs.status == "estimate"
    assert not levels["registers"].latency_ns.shown
    # No L2 bandwidth was found for A100 or B200: no bar, no number.
    for key in (A100, "b200"):
        l2 = {lv.key: lv for lv in memory_levels(gpu(key))}["l2"]
        assert l2.bandwidth_bytes_s.value is None
        assert memory_hierarchy(gpu(key), True).l2_over_hbm_bandwidth is None


def test_latencies_convert_cycles_to_ns_and_links_have_no_size():
    levels = {lv.key: lv for lv in memory_levels(gpu(H100))}
    assert levels["hbm"].latency_ns.value == pytest.approx(700 / 1.98)
    assert levels["nvlink"].latency_ns.value == pytest.approx(3000)
    assert levels["nvlink"].latency_ns.status == "estimate"
    assert levels["nvlink"].size_bytes.value is None


@pytest.mark.parametrize("key", GPUS)
def test_every_shown_number_has_a_source(key):
    for level in memory_levels(gpu(key)):
        for quantity, _ in QUANTITIES:
            number = level.number(quantity)
            assert number.source
            if number.shown:
                assert math.isfinite(number.value) and number.value > 0
                assert number.status in ("published", "measured", "computed", "estimate")
            else:
                assert number.status == "none"


def test_memory_model_hides_links_and_selects_levels():
    model = MemoryHierarchyModel()
    assert [lv.key for lv in model.out.levels] == ["registers", "shared", "l2", "hbm"]
    assert model.readouts()["hbm_over_l2_size"].value == 1600
    model.show_links = True
    assert len(model.out.levels) == len(MEMORY_LEVELS)
    model.level = "network"
    model.show_links = False
    assert model.level == "hbm"
    for key, _ in MEMORY_LEVELS:
        model.level = key
        for quantity, _ in QUANTITIES:
            model.quantity = quantity
            assert all(r.text for r in model.readouts().values())


def test_format_quantity():
    assert format_quantity("size", 80e9) == "80 GB"
    assert format_quantity("bandwidth", 3.35e12) == "3.35 TB/s"
    assert format_quantity("latency", 3000) == "3 µs"
    assert format_quantity("latency", None) == "no published measurement"
