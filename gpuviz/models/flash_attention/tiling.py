"""Figure 4.2: the N × N score matrix cut into tiles of B query rows, and the HBM traffic
(in elements) of standard attention, FlashAttention-2 and FlashAttention-1 for head
dimension d."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpuviz.core.model import Parameter, Readout, SteppedModel


def tile_sizes(n: int, block: int) -> np.ndarray:
    """Sizes of the ceil(N/B) blocks of a length-N axis cut every B (the last may be short)."""
    count = math.ceil(n / block)
    sizes = np.full(count, block, dtype=np.int64)
    sizes[-1] = n - block * (count - 1)
    return sizes


def standard_attention_traffic(n: int, d: int) -> tuple[int, int]:
    """HBM (reads, writes) in elements of standard attention, three kernels:

      S = Q K^T      reads Q, K (2Nd)       writes S (N^2)
      P = softmax(S) reads S (N^2)          writes P (N^2)
      O = P V        reads P, V (N^2 + Nd)  writes O (Nd)

    reads 3Nd + 2N^2, writes Nd + 2N^2, total 4Nd + 4N^2. A causal mask does not change
    it: the dense kernels still store the masked entries (as -inf and 0).
    """
    return 3 * n * d + 2 * n * n, n * d + 2 * n * n


def flash_attention_traffic(n: int, d: int, block_rows: int,
                            causal: bool = False) -> tuple[int, int]:
    """HBM (reads, writes) in elements of FlashAttention-2's forward pass (Dao 2023,
    Algorithm 1: query blocks in the outer loop) with query blocks of B_r rows: each Q
    block is read once, its O block written once, and for every query block all (causal:
    the first min((i+1) B_r, N)) rows of K and V are read again:

      reads  = Nd + 2d * sum_i keys_i   (non-causal: Nd + 2Nd ceil(N / B_r))
      writes = Nd
      total  = 2Nd + 2Nd ceil(N / B_r)  (non-causal)

    The N log-sum-exp values kept for the backward pass are not counted.
    """
    rows = tile_sizes(n, block_rows)
    ends = np.cumsum(rows)
    keys = ends if causal else np.full(rows.size, n)
    return int(n * d + 2 * d * int(keys.sum())), n * d


def flash1_attention_traffic(n: int, d: int, block: int,
                             causal: bool = False) -> tuple[int, int]:
    """HBM (reads, writes) in elements of FlashAttention-1's forward pass (Dao et al.
    2022, Algorithm 1: K/V blocks in the outer loop, T_c = ceil(N / B_c) of them, square
    B x B tiles here). Each K, V block is read once; for every (query block, K/V block)
    tile the query block's Q, O and its running max m and sum l are read from HBM and O,
    m, l written back:

      reads  = 2Nd + T_c (2Nd + 2N)     (non-causal)
      writes = T_c (Nd + 2N)
      total  = 2Nd + 3Nd T_c + 4N T_c

    Causal: K/V block j meets only the query blocks i >= j. Zeroing O, l and m in HBM
    before the loop (Nd + 2N writes) is not counted.
    """
    sizes = tile_sizes(n, block)
    # Rows of Q met by each K/V block: all of them, or (causal) those from block j on.
    rows_met = n - np.concatenate([[0], np.cumsum(sizes)[:-1]]) if causal else np.full(
        sizes.size, n)
    met = int(rows_met.sum())
    return 2 * n * d + met * (2 * d + 2), met * (d + 2)


PHASE_FLASH, PHASE_S, PHASE_P, PHASE_O = 0, 1, 2, 3
PHASE_NAMES = {
    PHASE_FLASH: "one tile, on chip",
    PHASE_S: "pass 1: S = QKᵀ",
    PHASE_P: "pass 2: softmax",
    PHASE_O: "pass 3: O = PV",
}


@dataclass(frozen=True)
class TileSchedule:
    """One row per animation step: what it works on and the HBM elements it moves.

    phase: PHASE_*; row, col: the tile (col = -1 for a step that handles a whole row).
    """

    tiles: int
    sizes: np.ndarray
    phase: np.ndarray
    row: np.ndarray
    col: np.ndarray
    reads: np.ndarray
    writes: np.ndarray
    computed_tiles: int
    skipped_tiles: int

    @property
    def steps(self) -> int:
        return int(self.phase.size)


def attention_schedule(mode: str, n: int, block: int, d: int, causal: bool,
                       order: str = "fa2") -> TileSchedule:
    """The step-by-step order of work and HBM traffic of the algorithms, with square
    B x B tiles. Summing `reads` and `writes` gives standard_attention_traffic,
    flash_attention_traffic (order "fa2": query blocks outside) or
    flash1_attention_traffic (order "fa1": K/V blocks outside) exactly. Flash with a
    causal mask skips tiles above the diagonal (column block > row block)."""
    sizes = tile_sizes(n, block)
    tiles = sizes.size
    phase, row, col, reads, writes = [], [], [], [], []

    def add(ph: int, r: int, c: int, rd: int, wr: int) -> None:
        phase.append(ph)
        row.append(r)
        col.append(c)
        reads.append(rd)
        writes.append(wr)

    skipped = tiles * (tiles - 1) // 2 if causal else 0
    if mode == "flash" and order == "fa1":
        for j in range(tiles):
            first = j if causal else 0
            for i in range(first, tiles):
                rows = int(sizes[i])
                kv = 2 * d * int(sizes[j]) if i == first else 0
                # Q_i, O_i, l_i, m_i in; O_i, l_i, m_i out.
                add(PHASE_FLASH, i, j, kv + rows * (2 * d + 2), rows * (d + 2))
        computed = tiles * tiles - skipped
    elif mode == "flash":
        for i in range(tiles):
            last = i if causal else tiles - 1
            for j in range(last + 1):
                rd = 2 * d * int(sizes[j]) + (int(sizes[i]) * d if j == 0 else 0)
                wr = int(sizes[i]) * d if j == last else 0
                add(PHASE_FLASH, i, j, rd, wr)
        computed = tiles * tiles - skipped
    else:
        for i in range(tiles):
            for j in range(tiles):
                rd = (int(sizes[i]) * d if j == 0 else 0) + (int(sizes[j]) * d if i == 0 else 0)
                add(PHASE_S, i, j, rd, int(sizes[i]) * int(sizes[j]))
        # The dense kernels compute and store every tile, masked or not.
        for i in range(tiles):
            add(PHASE_P, i, -1, int(sizes[i]) * n, int(sizes[i]) * n)
        for i in range(tiles):
            add(PHASE_O, i, -1, int(sizes[i]) * n + (n * d if i == 0 else 0), int(sizes[i]) * d)
        computed = tiles * tiles
    as_array = lambda values: np.array(values, dtype=np.int64)  # noqa: E731
    return TileSchedule(tiles, sizes, as_array(phase), as_array(row), as_array(col),
                        as_array(reads), as_array(writes), computed,
                        skipped if mode == "flash" else 0)


@dataclass(frozen=True)
class TilingState:
    schedule: TileSchedule
    done: int  # steps executed
    reads: int  # HBM elements read so far
    writes: int
    standard: tuple[int, int]  # final (reads, writes) of each algorithm
    flash: tuple[int, int]  # in the chosen loop order

    @property
    def finished(self) -> bool:
        return self.done >= self.schedule.steps


class FlashTilingModel(SteppedModel):
    """Figure 4.2: FlashAttention against standard attention on a tiled N x N score
    matrix. Traffic formulas in `standard_attention_traffic` and
    `flash_attention_traffic`, order of work in `attention_schedule`."""

    ANIMATION_SECONDS = 10.0  # whole animation at 1x, whatever the tile count
    MIN_STEP_SECONDS, MAX_STEP_SECONDS = 0.03, 0.6

    mode = Parameter("flash", label="Algorithm",
                     choices=[("flash", "FlashAttention"), ("standard", "Standard")],
                     help="FlashAttention keeps score tiles on chip; standard attention "
                          "writes the whole score matrix to HBM")
    seq_len = Parameter(1024, label="Sequence length N", unit="tokens", minimum=256,
                        maximum=2048, step=256, help="Queries and keys of one head")
    block_size = Parameter(128, label="Block size B", unit="rows", minimum=64, maximum=256,
                           step=64, help="Rows of Q (and of K, V) per tile")
    head_dim = Parameter(64, label="Head dimension d", minimum=32, maximum=256, step=32,
                         help="Elements per query, key and value vector")
    causal = Parameter(False, label="Causal mask",
                       help="Each query attends only to keys at or before it; "
                            "FlashAttention skips the tiles above the diagonal")
    loop_order = Parameter("fa2", label="Flash loop order",
                           choices=[("fa2", "Q outside (FA-2)"), ("fa1", "K/V outside (FA-1)")],
                           help="FlashAttention-2 (Dao 2023) keeps a Q block on chip and "
                                "streams K, V past it; FlashAttention-1 (Dao et al. 2022, "
                                "Algorithm 1) keeps a K/V block and re-reads and re-writes "
                                "Q, O, m and l for every one")

    def _schedule(self) -> TileSchedule:
        return attention_schedule(self.mode, self.seq_len, self.block_size, self.head_dim,
                                  self.causal, self.loop_order)

    def flash_traffic(self) -> tuple[int, int]:
        count = flash1_attention_traffic if self.loop_order == "fa1" else (
            flash_attention_traffic)
        return count(self.seq_len, self.head_dim, self.block_size, self.causal)

    @property
    def step_seconds(self) -> float:
        return min(self.MAX_STEP_SECONDS,
                   max(self.MIN_STEP_SECONDS, self.ANIMATION_SECONDS / self.out.schedule.steps))

    @property
    def total_steps(self) -> int:
        return self.out.schedule.steps

    def compute(self) -> TilingState:
        schedule = self._schedule()
        done = min(self._step, schedule.steps)
        return TilingState(
            schedule, done, int(schedule.reads[:done].sum()), int(schedule.writes[:done].sum()),
            standard_attention_traffic(self.seq_len, self.head_dim), self.flash_traffic())

    def readouts(self) -> dict[str, Readout]:
        s = self.out
        sch = s.schedule
        final = s.flash if self.mode == "flash" else s.standard
        std_total, flash_total = sum(s.standard), sum(s.flash)
        phase = ("finished" if s.finished else PHASE_NAMES[int(sch.phase[s.done - 1])]
                 if s.done else "not started")
        return {
            "step": Readout("Step", s.done, total=sch.steps),
            "phase": Readout("Doing", name=phase),
            "reads": Readout("HBM reads so far", s.reads, "elements"),
            "writes": Readout("HBM writes so far", s.writes, "elements"),
            "total_end": Readout("This mode, in all", sum(final), "elements"),
            "standard_total": Readout("Standard total", std_total, "elements"),
            "flash_total": Readout("Flash total" + (" (FA-1)" if self.loop_order == "fa1"
                                                     else " (FA-2)"), flash_total, "elements"),
            "ratio": Readout("Standard ÷ Flash", std_total / flash_total, "×"),
            "tiles": Readout("Tiles computed", sch.computed_tiles, "tiles"),
            "skipped": Readout("Tiles skipped", sch.skipped_tiles, "tiles"),
        }
