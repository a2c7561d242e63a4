"""Lesson 3 (kernels, tiling and fusion): figures 3.1 to 3.4, numbers from the spec notes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuviz.data.hardware import gpu, load_gpus
from gpuviz.models.kernels import (
    ACCESS_PRESETS,
    BANK_PATTERNS,
    DTYPE_BYTES,
    FUSION_N_MAX,
    FUSION_N_MIN,
    KB,
    MATRIX_SIZES,
    TILE_SIZES,
    BankConflictModel,
    CoalescingModel,
    FusionModel,
    TiledMatmulModel,
    bank_access,
    fusion,
    largest_tile_within,
    tile_pair_shared_bytes,
    tiled_matmul_state,
    warp_load,
)

H100 = "h100_sxm"
GPUS = list(load_gpus())
SMALL_N = 1e3  # deep in the launch-bound regime for every setting
LARGE_N = 1e9  # deep in the memory-bound regime for every setting


# --- 3.1 fusion ------------------------------------------------------------------------

def test_fusion_unary_bf16_boundary_near_3m_elements_on_h100():
    out = fusion(gpu(H100), 1e8, 4, "unary", "bf16", 3.6)
    # 3.6 us x 3.35 TB/s / 4 B per element (read 2 B, write 2 B) = 3.015 M elements.
    assert out.boundary_n == pytest.approx(3.015e6, rel=1e-3)
    assert 2.5e6 < out.boundary_n < 3.5e6


@pytest.mark.parametrize("k", [2, 4, 8, 16])
@pytest.mark.parametrize("n", [SMALL_N, LARGE_N])
def test_fusion_unary_speedup_is_k_in_both_regimes(k, n):
    out = fusion(gpu(H100), n, k, "unary", "bf16", 3.6)
    assert out.speedup == pytest.approx(k)
    assert out.launch_bound == (n < out.boundary_n)


@pytest.mark.parametrize("k", [2, 4, 8, 16])
def test_fusion_second_input_speedups_k_launch_bound_and_3k_over_k_plus_2(k):
    small = fusion(gpu(H100), SMALL_N, k, "binary", "bf16", 3.6)
    large = fusion(gpu(H100), LARGE_N, k, "binary", "bf16", 3.6)
    assert small.launch_bound and not large.launch_bound
    assert small.speedup == pytest.approx(k)
    assert large.speedup == pytest.approx(3 * k / (k + 2))
    assert large.speedup_memory_bound == pytest.approx(3 * k / (k + 2))
    # k kernels each move 3 N elements; the fused one moves k + 2.
    assert large.unfused_kernel_bytes == 3 * DTYPE_BYTES["bf16"]
    assert large.fused_bytes == (k + 2) * DTYPE_BYTES["bf16"]


def test_fusion_model_defaults_and_readouts():
    model = FusionModel()
    assert model.launch_overhead_us == 3.6
    readouts = model.readouts()
    assert readouts["speedup"].value == pytest.approx(model.k)
    assert readouts["boundary"].value == pytest.approx(3.015, rel=1e-3)  # M elements
    model.set("ops", "binary")
    assert model.readouts()["speedup_memory_bound"].value == pytest.approx(3 * 4 / 6)


@settings(max_examples=50, deadline=None)
@given(n=st.floats(FUSION_N_MIN, FUSION_N_MAX), k=st.integers(2, 16),
       ops=st.sampled_from(["unary", "binary"]), dtype=st.sampled_from(list(DTYPE_BYTES)),
       key=st.sampled_from(GPUS), launch=st.floats(0.5, 20.0))
def test_fusion_sweep_is_finite_and_fused_never_slower(n, k, ops, dtype, key, launch):
    out = fusion(gpu(key), n, k, ops, dtype, launch)
    for value in (out.unfused_s, out.fused_s, out.speedup, out.boundary_n):
        assert math.isfinite(value) and value > 0
    assert np.all(np.isfinite(out.unfused_curve_s)) and np.all(np.isfinite(out.fused_curve_s))
    assert np.all(np.diff(out.n_curve) > 0)
    # Never below the launch floor; fusing never loses.
    assert out.fused_s >= launch * 1e-6 * (1 - 1e-12)
    assert out.speedup >= 1 - 1e-12
    assert min(out.speedup_launch_bound, out.speedup_memory_bound) - 1e-9 <= out.speedup
    assert out.speedup <= max(out.speedup_launch_bound, out.speedup_memory_bound) + 1e-9


# --- 3.2 tiled matmul ------------------------------------------------------------------

def _replay(n: int, t: int, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Reference: run the loops and count."""
    m = n // t
    a, b = np.zeros((n, n), int), np.zeros((n, n), int)
    done = 0
    for i in range(m):
        for j in range(m):
            for k in range(m):
                if done == steps:
                    return a, b
                a[i * t:(i + 1) * t, k * t:(k + 1) * t] += 1
                b[k * t:(k + 1) * t, j * t:(j + 1) * t] += 1
                done += 1
    return a, b


def test_tiling_default_every_element_read_n_over_t_4_times_at_the_end():
    model = TiledMatmulModel()
    assert (model.n, model.t) == (8, 2)
    model.finish()
    out = model.out
    assert out.finished and out.steps == 64
    assert np.all(out.reads_a == 4) and np.all(out.reads_b == 4)
    assert model.readouts()["reads_per_element"].value == 4


@pytest.mark.parametrize("n", MATRIX_SIZES)
@pytest.mark.parametrize("t", TILE_SIZES)
def test_tiling_counters_match_a_replay_and_end_at_n_over_t(n, t):
    t = min(t, n)
    total = (n // t) ** 3
    for steps in sorted({0, 1, total // 3, total // 2, total - 1, total}):
        state = tiled_matmul_state(n, t, steps)
        a, b = _replay(n, t, steps)
        assert np.array_equal(state.reads_a, a) and np.array_equal(state.reads_b, b)
    end = tiled_matmul_state(n, t, total)
    assert np.all(end.reads_a == n // t) and np.all(end.reads_b == n // t)
    assert end.reads_so_far == 2 * n ** 3 // t


def test_tiling_stepper_steps_plays_and_rewinds():
    model = TiledMatmulModel()  # opens on step 1: the first pair of tiles loaded
    out = model.out
    assert out.steps == 1
    assert out.current_c == (0, 0) and out.current_k == 0
    assert out.reads_a[:2, :2].tolist() == [[1, 1], [1, 1]] and out.reads_a.sum() == 4
    model.step()
    assert model.out.steps == 2 and model.out.reads_a.sum() == 8
    model.set_playing(True)
    model.advance(1e9)  # a huge step jumps to the end
    assert model.finished and not model.playing
    model.rewind()
    assert model.out.steps == 1 and model.out.reads_so_far == 8
    model.step()
    model.set("tile_size", "4")  # new tiling starts again
    assert model.out.steps == 1 and model.total_steps == 8


def test_tiling_shared_memory_4t2_and_limits_on_h100():
    g = gpu(H100)
    opt_in = g["sm.shared_memory_per_block_kb"] * KB
    default = g["sm.shared_memory_default_per_block_kb"] * KB
    assert (opt_in, default) == (227 * KB, 48 * KB)
    assert tile_pair_shared_bytes(128) == 4 * 128 ** 2 == 64 * KB
    powers = [2 ** p for p in range(4, 10)]
    assert min(t for t in powers if tile_pair_shared_bytes(t) > opt_in) == 256
    assert min(t for t in powers if tile_pair_shared_bytes(t) > default) == 128
    assert largest_tile_within(opt_in) == 241 and largest_tile_within(default) == 110
    model = TiledMatmulModel()
    model.set("full_tile", 256)
    assert model.readouts()["fits"].text.startswith("no")
    model.set("full_tile", 128)
    assert model.readouts()["fits"].text == "with opt-in"
    model.set("full_tile", 64)
    assert model.readouts()["fits"].text.startswith("yes")


@settings(max_examples=50, deadline=None)
@given(n=st.sampled_from(MATRIX_SIZES), t=st.sampled_from(TILE_SIZES),
       fraction=st.floats(0, 1), full=st.integers(16, 512), key=st.sampled_from(GPUS))
def test_tiling_sweep_counts_are_monotone_and_bounded(n, t, fraction, full, key):
    model = TiledMatmulModel()
    model.set("matrix_size", str(n))
    model.set("tile_size", str(t))
    model.set("full_tile", full)
    model.set("gpu", key)
    steps = max(1, round(fraction * model.total_steps))  # it opens on step 1
    for _ in range(steps - 1):
        model.step_once()
    out = model.out
    m = n // min(t, n)
    assert out.steps == steps
    assert out.reads_a.min() >= 0 and out.reads_a.max() <= m
    assert out.reads_so_far == 2 * steps * min(t, n) ** 2
    need, default, opt_in = model.shared_memory()
    assert need == 4 * model.full_tile ** 2 and 0 < default < opt_in
    for readout in model.readouts().values():
        assert not isinstance(readout.value, float) or math.isfinite(readout.value)


# --- 3.3 coalescing --------------------------------------------------------------------

@pytest.mark.parametrize("pattern, sectors", [("stride1", 4), ("stride2", 8), ("column", 32),
                                              ("misaligned", 5)])
def test_coalescing_spec_sector_counts(pattern, sectors):
    stride, offset = ACCESS_PRESETS[pattern]
    out = warp_load(stride, offset)
    assert out.sectors.size == sectors
    assert out.bytes_used == 128 and out.bytes_fetched == 32 * sectors
    model = CoalescingModel()
    model.set("pattern", pattern)
    assert model.readouts()["sectors"].value == sectors


def test_coalescing_column_is_32_sectors_for_32_elements_and_presets_link_the_slider():
    model = CoalescingModel()
    model.set("pattern", "column")
    assert model.stride == 32 and model.out.efficiency == pytest.approx(4 / 32)
    model.set("stride", 2)
    assert model.pattern == "stride2"
    model.set("stride", 5)
    assert model.pattern == "custom" and model.out.sectors.size == 20
    model.set("pattern", "misaligned")
    assert (model.stride, model.offset) == (1, 1)
    model.reset()
    assert (model.pattern, model.stride) == ("stride1", 1)


@settings(max_examples=50, deadline=None)
@given(stride=st.integers(1, 32), offset=st.integers(0, 7))
def test_coalescing_sweep(stride, offset):
    out = warp_load(stride, offset)
    assert 4 <= out.sectors.size <= 32
    assert 0 < out.efficiency <= 1
    # Every element read lies in a fetched sector.
    assert set((out.elements * 4 // 32).tolist()) <= set(out.sectors.tolist())


# --- 3.4 banks -------------------------------------------------------------------------

def test_banks_column_of_32x32_is_a_32_way_conflict_in_bank_0():
    out = bank_access(*BANK_PATTERNS["column32"])
    assert out.degree == 32 and out.transactions == 32
    assert out.distinct_per_bank[0] == 32 and np.all(out.banks == 0)


@pytest.mark.parametrize("pattern", ["column33", "diagonal32", "row32"])
def test_banks_conflict_free_patterns(pattern):
    out = bank_access(*BANK_PATTERNS[pattern])
    assert out.degree == 1 and not out.broadcast
    assert sorted(out.banks.tolist()) == list(range(32))


def test_banks_diagonal_of_32x33_is_2_way_word_34i_bank_2i():
    out = bank_access(*BANK_PATTERNS["diagonal33"])
    i = np.arange(32)
    assert np.array_equal(out.words, 34 * i)
    assert np.array_equal(out.banks, (2 * i) % 32)
    assert out.degree == 2


def test_banks_one_word_is_a_broadcast_without_conflict():
    out = bank_access(*BANK_PATTERNS["one_word"])
    assert out.broadcast and out.degree == 1 and out.transactions == 1
    model = BankConflictModel()
    model.set("pattern", "one_word")
    assert model.readouts()["verdict"].text == "broadcast, no conflict"
    model.set("pattern", "diagonal33")
    assert model.readouts()["verdict"].text == "2-way conflict"


@pytest.mark.parametrize("pattern", list(BANK_PATTERNS))
def test_banks_every_pattern_invariants(pattern):
    out = bank_access(*BANK_PATTERNS[pattern])
    assert out.distinct_per_bank.sum() == np.unique(out.words).size
    assert out.threads_per_bank.sum() == 32
    assert out.degree == out.distinct_per_bank.max() >= 1
