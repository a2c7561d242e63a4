"""Lesson 4, FlashAttention and online softmax.

Pure numpy functions first (numbers in, frozen dataclasses out), then the figure models:
4.1 the online softmax stepper, 4.2 the tiled score matrix and its HBM traffic, 4.3 the
merge of two partial softmaxes, 4.4 one head's forward pass on the roofline, 4.5 split-KV
decoding over the SMs.

Notation: N the sequence length (queries = keys), d the head dimension, B (or B_r) the
number of query rows in one tile, m a running maximum, l a running sum of exponentials,
o a running (normalised) softmax average of the values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpuviz.core.model import FigureModel, Parameter, Readout, SteppedModel, time_readout
from gpuviz.data.hardware import DEFAULT_GPU, GPU, gpu, gpu_choices

BF16_BYTES = 2
FP32_BYTES = 4
# exp(x) overflows float64 above ln(largest double) = 709.78.
FLOAT64_EXP_LIMIT = math.log(np.finfo(np.float64).max)
HUGE_SCORE = 1000.0
SCORE_SPREAD = 1.5  # standard deviation of the random scores of 4.1 and 4.3


def _overflow_readout(label: str, value: float, digits: int) -> Readout:
    """Readouts show overflow on purpose, as text with no value: 'inf' or 'NaN'; an empty
    set's max is '−∞'."""
    if math.isfinite(value):
        return Readout(label, float(value), digits=digits)
    return Readout(label, shown="NaN" if math.isnan(value) else "inf" if value > 0 else "−∞")


def _bytes_in_unit(count: float) -> tuple[float, str]:
    """A byte count in KB, MB or GB (decimal), whichever keeps it below 1,000."""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if count >= size:
            return count / size, unit
    return float(count), "B"


# ---------------------------------------------------------------------------------------
# Softmax: naive, safe (exact reference) and online (figure 4.1)
# ---------------------------------------------------------------------------------------

def naive_softmax_average(scores: np.ndarray, values: np.ndarray) -> tuple[float, float]:
    """The textbook formula with no max subtracted: returns (sum of e^x, sum e^x v / sum e^x).

    e^x overflows to inf for x > 709.78 in float64; inf/inf is NaN. That failure is what
    figure 4.1 shows, so numpy's overflow warnings are silenced here and only here.
    """
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        e = np.exp(np.asarray(scores, dtype=np.float64))
        total = float(e.sum())
        result = float((e * values).sum() / total)
    return total, result


def safe_softmax_average(scores: np.ndarray, values: np.ndarray) -> float:
    """Two passes: m = max x, then sum e^(x - m) v / sum e^(x - m). The exact reference."""
    scores = np.asarray(scores, dtype=np.float64)
    p = np.exp(scores - scores.max())
    return float((p * values).sum() / p.sum())


@dataclass(frozen=True)
class OnlineSoftmaxTrace:
    """State (m, l, o) after 0, 1, ..., K blocks (index 0 is the empty start state).

    factor[k]: the rescale factor exp(m[k-1] - m[k]) applied to the old state at block k
    (0 while there is no old state, l = 0; factor[0] = 1 by convention).
    weights[k, i]: e^(x_i - m[k]) for the scores seen after k blocks, else 0.
    visit[i]: the step (1 to K) at which score i is read; blocks are read left to right,
    or right to left with `reverse` (as FlashAttention-2 does under a causal mask).
    """

    scores: np.ndarray
    values: np.ndarray
    block_size: int
    blocks: int
    m: np.ndarray
    l: np.ndarray
    o: np.ndarray
    factor: np.ndarray
    weights: np.ndarray
    visit: np.ndarray


def online_softmax_trace(scores: np.ndarray, values: np.ndarray, block_size: int,
                         reverse: bool = False) -> OnlineSoftmaxTrace:
    """One pass over blocks of B scores, keeping only (m, l, o) on chip:

      m_new = max(m, max_j x_j)                 (j in the block)
      f     = exp(m - m_new)                    (rescale of the old state, <= 1)
      l_new = l f + sum_j exp(x_j - m_new)
      o_new = (l f o + sum_j exp(x_j - m_new) v_j) / l_new

    Every exponent is <= 0, so nothing overflows, and after the last block
    o = sum_i e^x_i v_i / sum_i e^x_i exactly (up to rounding). Masked scores are -inf.
    While every score read so far is masked, m_new is -inf and x_j - m_new would be
    -inf + inf = NaN: the state stays empty (m = -inf, l = 0, o = 0) until a finite
    score arrives, and an empty old state (l = 0) gets f = 0 without exp(-inf + inf).
    """
    scores = np.asarray(scores, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    n = scores.size
    block_size = max(1, int(block_size))
    blocks = math.ceil(n / block_size)
    m = np.full(blocks + 1, -np.inf)
    l = np.zeros(blocks + 1)
    o = np.zeros(blocks + 1)
    factor = np.ones(blocks + 1)
    weights = np.zeros((blocks + 1, n))
    order = range(blocks - 1, -1, -1) if reverse else range(blocks)
    visit = np.zeros(n, dtype=np.int64)
    for k, block in enumerate(order):
        lo, hi = block * block_size, min(n, (block + 1) * block_size)
        visit[lo:hi] = k + 1
        m_new = max(m[k], float(scores[lo:hi].max()))
        if m_new == -math.inf:  # nothing finite yet: the empty state carries on
            factor[k + 1] = 0.0
            continue
        f = 0.0 if l[k] == 0.0 else math.exp(m[k] - m_new)
        p = np.exp(scores[lo:hi] - m_new)
        l_new = l[k] * f + float(p.sum())
        m[k + 1], l[k + 1], factor[k + 1] = m_new, l_new, f
        o[k + 1] = (l[k] * f * o[k] + float(p @ values[lo:hi])) / l_new
        seen = visit > 0
        weights[k + 1, seen] = np.exp(scores[seen] - m_new)
    return OnlineSoftmaxTrace(scores, values, block_size, blocks, m, l, o, factor, weights,
                              visit)


def stepper_scores(n: int, seed: int, huge_score: bool) -> tuple[np.ndarray, np.ndarray]:
    """Seeded scores x ~ N(0, 1.5^2) and values v ~ N(0, 1), both rounded to 0.1 so that
    what the figure prints is exactly what it computes with; with `huge_score` the middle
    score becomes 1000 (e^1000 overflows float64)."""
    rng = np.random.default_rng(seed)
    scores = np.round(rng.normal(0.0, SCORE_SPREAD, n), 1)
    values = np.round(rng.normal(0.0, 1.0, n), 1)
    if huge_score:
        scores[huge_index(n)] = HUGE_SCORE
    return scores, values


def huge_index(n: int) -> int:
    return n // 2


def causal_query(n: int, block_size: int) -> int:
    """Position of the query row that figure 4.1 follows under a causal mask: it sees keys
    0 to q and the rest are masked (-inf). Chosen so that the last block is entirely
    masked and the one before it partly (when there are two blocks or more): read from
    the diagonal backwards, the first block is all -inf."""
    blocks = math.ceil(n / block_size)
    return max(0, (blocks - 1) * block_size - 1 - block_size // 2)


@dataclass(frozen=True)
class StepperState:
    trace: OnlineSoftmaxTrace
    done: int  # blocks processed so far
    exact: float
    naive_sum: float  # the naive formula over the whole row
    naive_result: float
    naive_sums: np.ndarray  # ... over the scores read after 0, 1, ..., K blocks
    naive_results: np.ndarray

    @property
    def finished(self) -> bool:
        return self.done >= self.trace.blocks

    @property
    def difference(self) -> float:
        return abs(float(self.trace.o[self.trace.blocks]) - self.exact)


class OnlineSoftmaxModel(SteppedModel):
    """Figure 4.1: the online softmax, one block of scores per step. Equations in
    `online_softmax_trace`; the naive and exact versions for comparison."""

    SECONDS_PER_BLOCK = 1.2
    step_seconds = SECONDS_PER_BLOCK

    n_scores = Parameter(16, label="Scores", unit="scores", minimum=4, maximum=20, step=1,
                         help="Length of the row of attention scores")
    block_size = Parameter(4, label="Block size", unit="scores", minimum=1, maximum=8,
                           step=1, help="Scores loaded on chip per step")
    seed = Parameter(9, label="Random seed", minimum=0, maximum=99, step=1,
                     help="Draws a new row of scores and values")
    huge_score = Parameter(False, label="One huge score (1000)",
                           help="Replace the middle score with 1000: exp(1000) overflows "
                                "a float64, whose exp limit is 709.78")
    causal = Parameter(False, label="Causal mask",
                       help="The query sits early in the row: later keys are masked (−∞), "
                            "and the blocks are read from the last one back, as "
                            "FlashAttention-2 does, so the first block read is all masked")

    @property
    def blocks(self) -> int:
        return math.ceil(self.n_scores / self.block_size)

    @property
    def total_steps(self) -> int:
        return self.blocks

    # --- outputs ----------------------------------------------------------------------
    def compute(self) -> StepperState:
        scores, values = stepper_scores(self.n_scores, self.seed, self.huge_score)
        if self.causal:
            scores[causal_query(self.n_scores, self.block_size) + 1:] = -np.inf
        trace = online_softmax_trace(scores, values, self.block_size, reverse=self.causal)
        naive_sum, naive_result = naive_softmax_average(scores, values)
        # The naive formula over what has been read so far: where it overflows (or, over
        # masked scores only, divides 0 by 0).
        partial = [naive_softmax_average(scores[seen], values[seen])
                   for seen in (trace.visit[None, :] <= np.arange(1, trace.blocks + 1)[:, None])]
        sums = np.array([0.0] + [p[0] for p in partial])
        results = np.array([math.nan] + [p[1] for p in partial])
        return StepperState(trace, min(self._step, trace.blocks),
                            safe_softmax_average(scores, values), naive_sum, naive_result,
                            sums, results)

    def readouts(self) -> dict[str, Readout]:
        s = self.out
        t, k = s.trace, s.done
        if k == 0:
            rescale = Readout("Last rescale f", shown="none yet")
        elif t.l[k - 1] == 0.0:
            rescale = Readout("Last rescale f", shown="none (empty state)")
        else:  # three digits, as the chart writes f
            rescale = Readout("Last rescale f", float(t.factor[k]), digits=3)
        return {
            "block": Readout("Blocks processed", k, total=t.blocks),
            "m": _overflow_readout("Running max m", float(t.m[k]), 4),
            "l": Readout("Running sum l", float(t.l[k]), digits=4),
            "o": Readout("Running output o", float(t.o[k]), digits=6),
            "rescale": rescale,
            "exact": Readout("Exact softmax average", s.exact, digits=6),
            "difference": Readout("|online − exact| at the end", s.difference, digits=2),
            "naive_sum": _overflow_readout("Naive Σ eˣ, whole row", s.naive_sum, 4),
            "naive_result": _overflow_readout("Naive result, whole row", s.naive_result, 6),
        }


# ---------------------------------------------------------------------------------------
# Tiled attention and its HBM traffic (figure 4.2)
# ---------------------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------------------
# Merging two partial softmaxes (figure 4.3)
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Partial:
    """A softmax over a subset of keys: max m, sum l = sum e^(x - m), and the normalised
    average o of its values. An empty (or fully masked) set has m = -inf, l = 0, o = 0."""

    m: float
    l: float
    o: np.ndarray


def partial_softmax(scores: np.ndarray, values: np.ndarray) -> Partial:
    """(m, l, o) of the finite scores; masked keys carry score -inf."""
    scores = np.asarray(scores, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    keep = np.isfinite(scores)
    if not keep.any():
        return Partial(-math.inf, 0.0, np.zeros(values.shape[1]))
    m = float(scores[keep].max())
    p = np.exp(scores[keep] - m)
    l = float(p.sum())
    return Partial(m, l, (p @ values[keep]) / l)


@dataclass(frozen=True)
class Merged:
    m: float
    w_a: float
    w_b: float
    l: float
    o: np.ndarray


def merge_partials(a: Partial, b: Partial) -> Merged:
    """m = max(m_A, m_B); w_X = l_X exp(m_X - m); o = (w_A o_A + w_B o_B) / (w_A + w_B);
    l = w_A + w_B. An empty side (l = 0) gets weight 0 without evaluating exp(-inf + inf);
    when both are empty the result is empty too (m = -inf, l = 0, o = 0), never NaN."""
    m = max(a.m, b.m)
    w_a = 0.0 if a.l == 0.0 else a.l * math.exp(a.m - m)
    w_b = 0.0 if b.l == 0.0 else b.l * math.exp(b.m - m)
    total = w_a + w_b
    if total == 0.0:
        return Merged(-math.inf, 0.0, 0.0, 0.0, np.zeros_like(a.o))
    return Merged(m, w_a, w_b, total, (w_a * a.o + w_b * b.o) / total)


def merge_scores(seed: int, keys: int, dims: int) -> tuple[np.ndarray, np.ndarray]:
    """Seeded scores x ~ N(0, 1.5^2) rounded to 0.1 and value vectors v ~ N(0, 1)."""
    rng = np.random.default_rng(seed)
    return np.round(rng.normal(0.0, SCORE_SPREAD, keys), 1), rng.normal(0.0, 1.0, (keys, dims))


@dataclass(frozen=True)
class MergeState:
    unmasked: np.ndarray  # the drawn scores, before masking
    scores: np.ndarray  # with -inf for masked keys
    values: np.ndarray  # (keys, dims)
    split: int
    a: Partial
    b: Partial
    merged: Merged
    full: Partial
    plain: np.ndarray  # (o_A + o_B) / 2, the mistake
    merge_error: float  # max |merged - full|
    plain_error: float  # max |plain - full|


class MergeModel(FigureModel):
    """Figure 4.3: two partial softmaxes over a split of eight keys, merged exactly by
    `merge_partials`, and compared with the plain average of the two outputs."""

    KEYS = 8
    DIMS = 6

    split = Parameter(3, label="Split point (keys in A)", unit="keys", minimum=0,
                      maximum=KEYS, step=1,
                      help="Keys left of the split form set A, the rest set B")
    mask_b = Parameter(False, label="Mask all of set B",
                       help="Every key of B gets score −∞: B is empty, l(B) = 0")
    seed = Parameter(7, label="Random seed", minimum=0, maximum=99, step=1,
                     help="Draws new scores and value vectors")

    def compute(self) -> MergeState:
        unmasked, values = merge_scores(self.seed, self.KEYS, self.DIMS)
        scores = unmasked.copy()
        if self.mask_b:
            scores[self.split:] = -np.inf
        a = partial_softmax(scores[:self.split], values[:self.split])
        b = partial_softmax(scores[self.split:], values[self.split:])
        merged = merge_partials(a, b)
        full = partial_softmax(scores, values)
        plain = (a.o + b.o) / 2
        return MergeState(unmasked, scores, values, self.split, a, b, merged, full, plain,
                          float(np.abs(merged.o - full.o).max()),
                          float(np.abs(plain - full.o).max()))

    def readouts(self) -> dict[str, Readout]:
        s = self.out
        return {
            "m_a": _overflow_readout("m(A), max of A", s.a.m, 3),
            "l_a": Readout("l(A)", s.a.l, digits=4),
            "m_b": _overflow_readout("m(B), max of B", s.b.m, 3),
            "l_b": Readout("l(B)", s.b.l, digits=4),
            "m": _overflow_readout("Merged m = max", s.merged.m, 3),
            "w_a": Readout("Weight w(A) = l(A) exp(m(A) − m)", s.merged.w_a, digits=4),
            "w_b": Readout("Weight w(B) = l(B) exp(m(B) − m)", s.merged.w_b, digits=4),
            "merge_error": Readout("max |merged − full|", s.merge_error, digits=2),
            "plain_error": Readout("max |plain average − full|", s.plain_error, digits=3),
        }


# ---------------------------------------------------------------------------------------
# One head's forward pass on the roofline (figure 4.4)
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class HeadCosts:
    """Arrays over sequence lengths N (or scalars for one N); seconds and bytes."""

    n: np.ndarray
    flops: np.ndarray
    standard_bytes: np.ndarray
    flash_bytes: np.ndarray
    compute_time: np.ndarray
    standard_time: np.ndarray
    flash_time: np.ndarray


def head_forward_costs(n: np.ndarray, d: int, block_rows: int, peak_flops: float,
                       bandwidth: float, l2_rereads: bool) -> HeadCosts:
    """Minimum time of one head's attention forward pass in bf16 (2 bytes per element):

      FLOPs          = 4 N^2 d                       (Q K^T and P V, 2 N^2 d each)
      standard bytes = 2 (4Nd + 4N^2)                (Q, K, V, O once; S and P written
                                                      and read once each)
      flash bytes    = 2 (2Nd + 2Nd ceil(N / B_r))   (Q and O once; K and V once per
                                                      query block of B_r rows)
                     = 2 (4Nd)                       if L2 serves the K/V re-reads
      time           = max(FLOPs / peak, bytes / HBM bandwidth)

    For long sequences the memory term over the compute term tends to 2 ridge / d for
    standard attention and to ridge / B_r for FlashAttention (ridge = peak / bandwidth
    in FLOP/byte), so FlashAttention is compute-bound once B_r > ridge.
    """
    n = np.asarray(n, dtype=np.float64)
    flops = 4.0 * n * n * d
    standard = BF16_BYTES * (4.0 * n * d + 4.0 * n * n)
    if l2_rereads:
        flash = BF16_BYTES * 4.0 * n * d
    else:
        flash = BF16_BYTES * (2.0 * n * d + 2.0 * n * d * np.ceil(n / block_rows))
    compute = flops / peak_flops
    return HeadCosts(n, flops, standard, flash, compute,
                     np.maximum(compute, standard / bandwidth),
                     np.maximum(compute, flash / bandwidth))


def backward_memory_bytes(n: int) -> tuple[int, int]:
    """What the forward pass keeps for the backward pass, per head: standard attention
    the N x N probabilities P (bf16), FlashAttention N log-sum-exp values (fp32)."""
    return BF16_BYTES * n * n, FP32_BYTES * n


ROOFLINE_N_MIN, ROOFLINE_N_MAX = 256, 131072


@dataclass(frozen=True)
class RooflineState:
    curve: HeadCosts
    point: HeadCosts
    ridge: float
    standard_ratio: float  # standard time / compute time at this N
    flash_ratio: float
    standard_limit: float  # long-sequence limits of the ratios
    flash_limit: float
    standard_keep: int  # bytes kept for the backward pass
    flash_keep: int
    kv_bytes: float  # K and V of this head, to compare with L2
    l2_bytes: float


class HeadRooflineModel(FigureModel):
    """Figure 4.4: standard attention and FlashAttention against the compute time of one
    head's forward pass, over sequence length. Equations in `head_forward_costs`."""

    CURVE_POINTS = 96

    gpu = Parameter(DEFAULT_GPU, label="GPU", choices=gpu_choices,
                    help="Peak bf16 FLOP/s and HBM bandwidth come from this GPU")
    seq_len = Parameter(8192, label="Sequence length N", unit="tokens",
                        minimum=ROOFLINE_N_MIN, maximum=ROOFLINE_N_MAX, log=True,
                        help="Queries and keys of one head")
    head_dim = Parameter(128, label="Head dimension d", minimum=32, maximum=256, step=32,
                         help="Changes both the FLOPs and the standard version's intensity")
    block_rows = Parameter(128, label="Query block Bᵣ", unit="rows", minimum=16,
                           maximum=512, step=16,
                           help="Queries that share each K/V byte loaded from HBM")
    l2_rereads = Parameter(False, label="L2 serves re-reads",
                           help="The ideal case: K and V come from HBM once, every later "
                                "pass over them hits in L2")

    def compute(self) -> RooflineState:
        g: GPU = gpu(self.gpu)
        peak, bw = g.peak_flops("bf16"), g.hbm_bandwidth
        # Whole query blocks only, so the drawn line has no ceil() saw-tooth.
        ns = np.geomspace(ROOFLINE_N_MIN, ROOFLINE_N_MAX, self.CURVE_POINTS)
        ns = np.where(ns <= self.block_rows, ns, np.ceil(ns / self.block_rows) * self.block_rows)
        ns = np.unique(np.clip(ns, ROOFLINE_N_MIN, ROOFLINE_N_MAX))
        args = (self.head_dim, self.block_rows, peak, bw, self.l2_rereads)
        curve = head_forward_costs(ns, *args)
        point = head_forward_costs(np.array([self.seq_len]), *args)
        ridge = g.ridge("bf16")
        std_keep, flash_keep = backward_memory_bytes(self.seq_len)
        return RooflineState(
            curve, point, ridge,
            float(point.standard_time[0] / point.compute_time[0]),
            float(point.flash_time[0] / point.compute_time[0]),
            max(1.0, 2 * ridge / self.head_dim),
            1.0 if self.l2_rereads else max(1.0, ridge / self.block_rows),
            std_keep, flash_keep,
            2.0 * BF16_BYTES * self.seq_len * self.head_dim, g["chip.l2_mb"] * 1e6)

    def readouts(self) -> dict[str, Readout]:
        s = self.out
        p = s.point
        return {
            "compute_time": time_readout("Compute 4N²d / peak", p.compute_time[0]),
            "standard_time": time_readout("Standard attention", p.standard_time[0]),
            "flash_time": time_readout("FlashAttention", p.flash_time[0]),
            "standard_ratio": Readout("Standard ÷ compute", s.standard_ratio, "×"),
            "flash_ratio": Readout("Flash ÷ compute", s.flash_ratio, "×"),
            "standard_limit": Readout("Long N: max(1, 2·ridge/d)", s.standard_limit, "×"),
            "flash_limit": Readout("Long N: max(1, ridge/Bᵣ)", s.flash_limit, "×"),
            "ridge": Readout("Ridge point (bf16)", s.ridge, "FLOP/B"),
            "standard_keep": Readout("Saved for backward: N² P",
                                     *_bytes_in_unit(s.standard_keep)),
            "flash_keep": Readout("Saved for backward: N LSE",
                                  *_bytes_in_unit(s.flash_keep)),
        }


# ---------------------------------------------------------------------------------------
# Split-KV decoding (figure 4.5)
# ---------------------------------------------------------------------------------------

def sm_stream_bandwidth(bytes_in_flight: float, latency_s: float) -> float:
    """Little's law: an SM that keeps `bytes_in_flight` bytes of loads outstanding, each
    answered after `latency_s`, streams at most bytes_in_flight / latency bytes/s."""
    return bytes_in_flight / latency_s


@dataclass(frozen=True)
class SplitKV:
    units: int  # work units = batch x KV heads x splits
    waves: int  # ceil(units / SMs)
    busy_sms: int  # SMs with work in the first wave
    utilisation: float  # units / (waves x SMs)
    unit_bytes: float  # bytes one unit streams (its K/V slice and its partial output)
    partial_bytes: float  # fp32 partial outputs + LSE of all units (0 without splits)
    stream_bandwidth: float  # bytes/s the first wave draws from HBM, all busy SMs
    attention_time: float  # seconds, including the kernel's fixed cost
    merge_time: float  # seconds, 0 without splits
    total_time: float


def _wave_bandwidth(busy: np.ndarray | int, sm_bandwidth: float, bandwidth: float
                    ) -> np.ndarray | float:
    """Bytes/s of a wave with `busy` SMs: each at its Little's-law rate, all of them
    together at most the HBM bandwidth."""
    return np.minimum(busy * sm_bandwidth, bandwidth)


def split_kv_time(batch: int, kv_heads: int, kv_len: int, splits: int, head_dim: int,
                  group: int, sms: int, bandwidth: float, sm_bandwidth: float,
                  kernel_s: float) -> SplitKV:
    """Decode attention for one new token per sequence, K/V cache in bf16.

    A work unit is one (sequence, KV head, split): it streams ceil(L / splits) keys and
    values, 2 x ceil(L/s) x d x 2 bytes, and, when splits > 1, writes a partial output of
    (d + 1) fp32 numbers (o and the log-sum-exp) for each of the `group` query heads that
    share the KV head. Units run on the SMs in waves of `sms`. A wave with b busy SMs
    streams at min(b x per-SM bandwidth, HBM bandwidth), the per-SM bandwidth set by
    Little's law (`sm_stream_bandwidth`): a few busy SMs cannot use all of HBM, enough
    of them saturate it.

      units     = batch x kv_heads x splits,  waves = ceil(units / sms)
      attention = kernel cost + sum over waves of b x unit bytes / wave bandwidth(b)
      merge     = kernel cost + partial bytes / bandwidth      (only when splits > 1)

    Reading the queries is neglected (d numbers per query head, tiny next to the cache).
    """
    times = split_kv_times(batch, kv_heads, kv_len, np.array([splits]), head_dim, group,
                           sms, bandwidth, sm_bandwidth, kernel_s)
    splits = max(1, splits)
    units = batch * kv_heads * splits
    waves = math.ceil(units / sms)
    busy = min(units, sms)
    return SplitKV(units, waves, busy, units / (waves * sms), float(times.unit_bytes[0]),
                   float(times.partial_bytes[0]),
                   float(_wave_bandwidth(busy, sm_bandwidth, bandwidth)),
                   float(times.attention[0]), float(times.merge[0]), float(times.total[0]))


@dataclass(frozen=True)
class SplitTimes:
    unit_bytes: np.ndarray
    partial_bytes: np.ndarray
    attention: np.ndarray
    merge: np.ndarray
    total: np.ndarray


def split_kv_times(batch: int, kv_heads: int, kv_len: int, splits: np.ndarray,
                   head_dim: int, group: int, sms: int, bandwidth: float,
                   sm_bandwidth: float, kernel_s: float) -> SplitTimes:
    """The times of `split_kv_time` for an array of split counts at once."""
    splits = np.maximum(1, np.asarray(splits, dtype=np.int64))
    units = batch * kv_heads * splits
    full, rest = np.divmod(units, sms)  # full waves, SMs busy in the last one
    keys_per_unit = -(-kv_len // splits)  # ceiling division
    partial_per_unit = np.where(splits > 1, group * (head_dim + 1) * FP32_BYTES, 0)
    unit_bytes = 2.0 * keys_per_unit * head_dim * BF16_BYTES + partial_per_unit
    full_wave = sms * unit_bytes / _wave_bandwidth(sms, sm_bandwidth, bandwidth)
    last_wave = np.where(rest > 0, rest * unit_bytes
                         / _wave_bandwidth(np.maximum(rest, 1), sm_bandwidth, bandwidth), 0.0)
    attention = kernel_s + full * full_wave + last_wave
    partial_bytes = units * partial_per_unit
    merge = np.where(splits > 1, kernel_s + partial_bytes / bandwidth, 0.0)
    return SplitTimes(unit_bytes, partial_bytes.astype(float), attention, merge,
                      attention + merge)


MAX_SPLITS = 64


@dataclass(frozen=True)
class SplitKVState:
    sms: int
    split: SplitKV
    unsplit: SplitKV
    units_per_sm: np.ndarray  # units each SM runs over all waves
    curve_splits: np.ndarray
    curve_time: np.ndarray  # total seconds for 1..MAX_SPLITS splits
    sm_bandwidth: float  # bytes/s one SM streams (Little's law)
    hbm_bandwidth: float

    @property
    def speedup(self) -> float:
        return self.unsplit.total_time / self.split.total_time


def sm_bandwidth(g: GPU) -> float:
    """Bytes/s one SM can stream from HBM: its bytes in flight over the HBM latency
    (an idle-GPU pointer-chase latency; under load it is longer)."""
    latency = g["latency_cycles.hbm"] / (g["chip.clock_ghz"] * 1e9)
    return sm_stream_bandwidth(g["sm.bytes_in_flight_kb"] * 1024, latency)


class SplitKVModel(FigureModel):
    """Figure 4.5: split-KV (Flash-Decoding) fills the SMs when batch x KV heads is small.
    Time model in `split_kv_time`."""

    HEAD_DIM = 128  # the head size of every Llama model (reference facts, Llama table)

    gpu = Parameter(DEFAULT_GPU, label="GPU", choices=gpu_choices,
                    help="SM count and HBM bandwidth come from this GPU")
    splits = Parameter(1, label="KV splits", minimum=1, maximum=MAX_SPLITS, step=1,
                       help="Pieces the cache of each sequence is cut into along its "
                            "length; each piece is a separate work unit")
    # Not "batch": that name is FigureModel.batch(), the context manager.
    batch_size = Parameter(1, label="Batch size", unit="sequences", minimum=1, maximum=256,
                           log=True, help="Sequences decoding one token each")
    kv_len = Parameter(32768, label="KV cache length", unit="tokens", minimum=256,
                       maximum=131072, log=True, help="Tokens already in each sequence")
    kv_heads = Parameter(8, label="KV heads", minimum=1, maximum=64, step=1,
                         help="Key/value heads per layer (8 in Llama 3 with GQA)")
    group = Parameter(8, label="Query heads per KV head", minimum=1, maximum=16, step=1,
                      help="GQA group size: query heads sharing each KV head")
    kernel_us = Parameter(3.0, label="Fixed cost per kernel", unit="µs", minimum=0.0,
                          maximum=20.0, step=0.5,
                          help="Launch and tail of each kernel; the merge kernel adds one")

    def compute(self) -> SplitKVState:
        g = gpu(self.gpu)
        sms, bw = g.sms, g.hbm_bandwidth
        sm_bw = sm_bandwidth(g)

        args = (self.batch_size, self.kv_heads, self.kv_len)
        rest = (self.HEAD_DIM, self.group, sms, bw, sm_bw, self.kernel_us * 1e-6)

        def run(splits: int) -> SplitKV:
            return split_kv_time(*args, splits, *rest)

        split = run(self.splits)
        units = split.units
        per_sm = np.full(sms, units // sms, dtype=np.int64)
        per_sm[: units % sms] += 1
        # The curve over split counts does not depend on the chosen split: moving the
        # splits slider reuses it (the curve is evaluated once per other setting).
        key = (self.gpu, *args, *rest)
        cached = getattr(self, "_curve_cache", None)
        if cached is None or cached[0] != key:
            curve_splits = np.arange(1, MAX_SPLITS + 1)
            curve = split_kv_times(*args, curve_splits, *rest).total
            curve_splits.flags.writeable = False
            curve.flags.writeable = False
            cached = self._curve_cache = (key, curve_splits, curve, run(1))
        _, curve_splits, curve, unsplit = cached
        return SplitKVState(sms, split, unsplit, per_sm, curve_splits, curve, sm_bw, bw)

    def readouts(self) -> dict[str, Readout]:
        s = self.out
        sp = s.split
        best = int(s.curve_splits[int(np.argmin(s.curve_time))])
        return {
            "units": Readout("Work units", sp.units, "units"),
            "busy": Readout("Busy SMs", sp.busy_sms, total=s.sms),
            "utilisation": Readout("SM utilisation", 100 * sp.utilisation, "%"),
            "sm_bandwidth": Readout("Per SM, in flight ÷ latency", s.sm_bandwidth / 1e9,
                                    "GB/s"),
            "hbm_use": Readout("HBM bandwidth in use", 100 * sp.stream_bandwidth
                               / s.hbm_bandwidth, "%"),
            "time_unsplit": Readout("Time, no splits", s.unsplit.total_time * 1e6,
                                    "µs"),
            "attention_time": Readout("Attention kernel", sp.attention_time * 1e6, "µs"),
            "merge_time": Readout("Merge kernel", sp.merge_time * 1e6, "µs"),
            "time_split": Readout("Time, these splits", sp.total_time * 1e6, "µs"),
            "speedup": Readout("Speed-up", s.speedup, "×"),
            "best_splits": Readout("Best split count", best),
        }
