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

from gpuviz.core.model import FigureModel, Parameter, Readout, SteppedModel
from gpuviz.data.hardware import DEFAULT_GPU, GPU, gpu, gpu_choices

BF16_BYTES = 2
FP32_BYTES = 4
# exp(x) overflows float64 above ln(largest double) = 709.78.
FLOAT64_EXP_LIMIT = math.log(np.finfo(np.float64).max)
HUGE_SCORE = 1000.0
SCORE_SPREAD = 1.5  # standard deviation of the random scores of 4.1 and 4.3


def _text_if_not_finite(value: float) -> float | str:
    """Readouts show overflow on purpose, as text: 'inf' or 'NaN'; an empty set's max is
    '−∞'."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "−∞"
    return float(value)


def _seconds_in_unit(seconds: float) -> tuple[float, str]:
    """A duration in ns, µs, ms or s, whichever keeps it between 1 and 1,000."""
    for unit, size in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= size:
            return seconds / size, unit
    return seconds * 1e9, "ns"


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
    with np.errstate(over="ignore", invalid="ignore"):
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
    (0 at the first block, where there is no old state; factor[0] = 1 by convention).
    weights[k, i]: e^(x_i - m[k]) for the scores seen after k blocks, else 0.
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


def online_softmax_trace(scores: np.ndarray, values: np.ndarray,
                         block_size: int) -> OnlineSoftmaxTrace:
    """One pass over blocks of B scores, keeping only (m, l, o) on chip:

      m_new = max(m, max_j x_j)                 (j in the block)
      f     = exp(m - m_new)                    (rescale of the old state, <= 1)
      l_new = l f + sum_j exp(x_j - m_new)
      o_new = (l f o + sum_j exp(x_j - m_new) v_j) / l_new

    Every exponent is <= 0, so nothing overflows, and after the last block
    o = sum_i e^x_i v_i / sum_i e^x_i exactly (up to rounding).
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
    for k in range(blocks):
        lo, hi = k * block_size, min(n, (k + 1) * block_size)
        m_new = max(m[k], float(scores[lo:hi].max()))
        f = 0.0 if l[k] == 0.0 else math.exp(m[k] - m_new)
        p = np.exp(scores[lo:hi] - m_new)
        l_new = l[k] * f + float(p.sum())
        m[k + 1], l[k + 1], factor[k + 1] = m_new, l_new, f
        o[k + 1] = (l[k] * f * o[k] + float(p @ values[lo:hi])) / l_new
        weights[k + 1, :hi] = np.exp(scores[:hi] - m_new)
    return OnlineSoftmaxTrace(scores, values, block_size, blocks, m, l, o, factor, weights)


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


@dataclass(frozen=True)
class StepperState:
    trace: OnlineSoftmaxTrace
    done: int  # blocks processed so far
    exact: float
    naive_sum: float
    naive_result: float

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
                           help="Replace the middle score with 1000: e^1000 overflows "
                                "a float64, whose exp limit is 709.78")

    @property
    def blocks(self) -> int:
        return math.ceil(self.n_scores / self.block_size)

    @property
    def total_steps(self) -> int:
        return self.blocks

    # --- outputs ----------------------------------------------------------------------
    def compute(self) -> StepperState:
        scores, values = stepper_scores(self.n_scores, self.seed, self.huge_score)
        trace = online_softmax_trace(scores, values, self.block_size)
        naive_sum, naive_result = naive_softmax_average(scores, values)
        return StepperState(trace, min(self._step, trace.blocks),
                            safe_softmax_average(scores, values), naive_sum, naive_result)

    def readouts(self) -> dict[str, Readout]:
        s = self.out
        t, k = s.trace, s.done
        if k == 0:
            factor: float | str = "— (no block yet)"
        elif k == 1:
            factor = "— (first block)"
        else:
            factor = float(t.factor[k])
        return {
            "block": Readout("Blocks processed", f"{k} of {t.blocks}"),
            "m": Readout("Running max m", _text_if_not_finite(float(t.m[k])), digits=4),
            "l": Readout("Running sum l", float(t.l[k]), digits=4),
            "o": Readout("Running output o", float(t.o[k]), digits=6),
            "rescale": Readout("Last rescale exp(m_old − m_new)", factor, digits=4),
            "exact": Readout("Exact softmax average", s.exact, digits=6),
            "difference": Readout("|online − exact| at the end", s.difference, digits=2),
            "naive_sum": Readout("Naive Σ e^x", _text_if_not_finite(s.naive_sum), digits=4),
            "naive_result": Readout("Naive result", _text_if_not_finite(s.naive_result),
                                    digits=6),
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
    """HBM (reads, writes) in elements of FlashAttention's forward pass with query blocks
    of B_r rows: each Q block is read once, its O block written once, and for every query
    block all (causal: the first min((i+1) B_r, N)) rows of K and V are read again:

      reads  = Nd + 2d * sum_i keys_i   (non-causal: Nd + 2Nd ceil(N / B_r))
      writes = Nd
      total  = 2Nd + 2Nd ceil(N / B_r)  (non-causal)

    The N log-sum-exp values kept for the backward pass are not counted.
    """
    rows = tile_sizes(n, block_rows)
    ends = np.cumsum(rows)
    keys = ends if causal else np.full(rows.size, n)
    return int(n * d + 2 * d * int(keys.sum())), n * d


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


def attention_schedule(mode: str, n: int, block: int, d: int, causal: bool) -> TileSchedule:
    """The step-by-step order of work and HBM traffic of the two algorithms, with square
    B x B tiles. Summing `reads` and `writes` gives standard_attention_traffic or
    flash_attention_traffic exactly. Flash with a causal mask skips tiles above the
    diagonal (column block > row block)."""
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
    if mode == "flash":
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
    flash: tuple[int, int]

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

    def _schedule(self) -> TileSchedule:
        return attention_schedule(self.mode, self.seq_len, self.block_size, self.head_dim,
                                  self.causal)

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
            standard_attention_traffic(self.seq_len, self.head_dim),
            flash_attention_traffic(self.seq_len, self.head_dim, self.block_size, self.causal))

    def readouts(self) -> dict[str, Readout]:
        s = self.out
        sch = s.schedule
        final = s.flash if self.mode == "flash" else s.standard
        std_total, flash_total = sum(s.standard), sum(s.flash)
        phase = PHASE_NAMES[int(sch.phase[s.done - 1])] if s.done else "not started"
        return {
            "step": Readout("Step", f"{s.done} of {sch.steps}"),
            "phase": Readout("Doing", phase),
            "reads": Readout("HBM reads so far", s.reads, "elements"),
            "writes": Readout("HBM writes so far", s.writes, "elements"),
            "total_end": Readout("This mode, in all", sum(final), "elements"),
            "standard_total": Readout("Standard total", std_total, "elements"),
            "flash_total": Readout("Flash total", flash_total, "elements"),
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
                       help="Every key of B gets score -inf: B is empty, l_B = 0")
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
            "m_a": Readout("m_A (max of A)", _text_if_not_finite(s.a.m), digits=3),
            "l_a": Readout("l_A", s.a.l, digits=4),
            "m_b": Readout("m_B (max of B)", _text_if_not_finite(s.b.m), digits=3),
            "l_b": Readout("l_B", s.b.l, digits=4),
            "m": Readout("Merged m = max", _text_if_not_finite(s.merged.m), digits=3),
            "w_a": Readout("Weight w_A = l_A e^(m_A − m)", s.merged.w_a, digits=4),
            "w_b": Readout("Weight w_B = l_B e^(m_B − m)", s.merged.w_b, digits=4),
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
    block_rows = Parameter(128, label="Query block B_r", unit="rows", minimum=16,
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
            "compute_time": Readout("Compute 4N²d / peak",
                                    *_seconds_in_unit(float(p.compute_time[0]))),
            "standard_time": Readout("Standard attention",
                                     *_seconds_in_unit(float(p.standard_time[0]))),
            "flash_time": Readout("FlashAttention", *_seconds_in_unit(float(p.flash_time[0]))),
            "standard_ratio": Readout("Standard ÷ compute", s.standard_ratio, "×"),
            "flash_ratio": Readout("Flash ÷ compute", s.flash_ratio, "×"),
            "standard_limit": Readout("Long N: max(1, 2·ridge/d)", s.standard_limit, "×"),
            "flash_limit": Readout("Long N: max(1, ridge/B_r)", s.flash_limit, "×"),
            "ridge": Readout("Ridge point (bf16)", s.ridge, "FLOP/B"),
            "standard_keep": Readout("Saved for backward: N² P",
                                     *_bytes_in_unit(s.standard_keep)),
            "flash_keep": Readout("Saved for backward: N LSE",
                                  *_bytes_in_unit(s.flash_keep)),
        }


# ---------------------------------------------------------------------------------------
# Split-KV decoding (figure 4.5)
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SplitKV:
    units: int  # work units = batch x KV heads x splits
    waves: int  # ceil(units / SMs)
    busy_sms: int  # SMs with work in the first wave
    utilisation: float  # units / (waves x SMs)
    unit_bytes: float  # bytes one unit streams (its K/V slice and its partial output)
    partial_bytes: float  # fp32 partial outputs + LSE of all units (0 without splits)
    attention_time: float  # seconds, including the kernel's fixed cost
    merge_time: float  # seconds, 0 without splits
    total_time: float


def split_kv_time(batch: int, kv_heads: int, kv_len: int, splits: int, head_dim: int,
                  group: int, sms: int, bandwidth: float, kernel_s: float) -> SplitKV:
    """Decode attention for one new token per sequence, K/V cache in bf16.

    A work unit is one (sequence, KV head, split): it streams ceil(L / splits) keys and
    values, 2 x ceil(L/s) x d x 2 bytes, and, when splits > 1, writes a partial output of
    (d + 1) fp32 numbers (o and the log-sum-exp) for each of the `group` query heads that
    share the KV head. Units run on the SMs in waves of `sms`; with the time proportional
    to the number of busy SMs each SM streams at bandwidth / sms:

      units     = batch x kv_heads x splits,  waves = ceil(units / sms)
      attention = kernel cost + waves x unit bytes / (bandwidth / sms)
      merge     = kernel cost + partial bytes / bandwidth      (only when splits > 1)

    Reading the queries is neglected (d numbers per query head, tiny next to the cache).
    """
    splits = max(1, splits)
    units = batch * kv_heads * splits
    waves = math.ceil(units / sms)
    keys_per_unit = math.ceil(kv_len / splits)
    partial_per_unit = group * (head_dim + 1) * FP32_BYTES if splits > 1 else 0
    unit_bytes = 2.0 * keys_per_unit * head_dim * BF16_BYTES + partial_per_unit
    partial_bytes = float(units * partial_per_unit)
    attention = kernel_s + waves * unit_bytes / (bandwidth / sms)
    merge = kernel_s + partial_bytes / bandwidth if splits > 1 else 0.0
    return SplitKV(units, waves, min(units, sms), units / (waves * sms), unit_bytes,
                   partial_bytes, attention, merge, attention + merge)


def split_kv_total_times(batch: int, kv_heads: int, kv_len: int, splits: np.ndarray,
                         head_dim: int, group: int, sms: int, bandwidth: float,
                         kernel_s: float) -> np.ndarray:
    """`split_kv_time(...).total_time` for an array of split counts at once."""
    splits = np.maximum(1, np.asarray(splits, dtype=np.int64))
    units = batch * kv_heads * splits
    waves = -(-units // sms)  # ceiling division
    keys_per_unit = -(-kv_len // splits)
    partial_per_unit = np.where(splits > 1, group * (head_dim + 1) * FP32_BYTES, 0)
    unit_bytes = 2.0 * keys_per_unit * head_dim * BF16_BYTES + partial_per_unit
    attention = kernel_s + waves * unit_bytes / (bandwidth / sms)
    merge = np.where(splits > 1, kernel_s + units * partial_per_unit / bandwidth, 0.0)
    return attention + merge


MAX_SPLITS = 64


@dataclass(frozen=True)
class SplitKVState:
    sms: int
    split: SplitKV
    unsplit: SplitKV
    units_per_sm: np.ndarray  # units each SM runs over all waves
    curve_splits: np.ndarray
    curve_time: np.ndarray  # total seconds for 1..MAX_SPLITS splits

    @property
    def speedup(self) -> float:
        return self.unsplit.total_time / self.split.total_time


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
    batch_size = Parameter(1, label="Batch size", unit="seqs", minimum=1, maximum=256,
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

        args = (self.batch_size, self.kv_heads, self.kv_len)
        rest = (self.HEAD_DIM, self.group, sms, bw, self.kernel_us * 1e-6)

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
            curve = split_kv_total_times(args[0], args[1], args[2], curve_splits, *rest)
            curve_splits.flags.writeable = False
            curve.flags.writeable = False
            cached = self._curve_cache = (key, curve_splits, curve, run(1))
        _, curve_splits, curve, unsplit = cached
        return SplitKVState(sms, split, unsplit, per_sm, curve_splits, curve)

    def readouts(self) -> dict[str, Readout]:
        s = self.out
        sp = s.split
        best = int(s.curve_splits[int(np.argmin(s.curve_time))])
        return {
            "units": Readout("Work units", sp.units, "units"),
            "busy": Readout("Busy SMs", sp.busy_sms, f"of {s.sms}"),
            "waves": Readout("Waves", sp.waves),
            "utilisation": Readout("SM utilisation", 100 * sp.utilisation, "%"),
            "time_unsplit": Readout("Time, no splits", s.unsplit.total_time * 1e6,
                                    "µs"),
            "attention_time": Readout("Attention kernel", sp.attention_time * 1e6, "µs"),
            "merge_time": Readout("Merge kernel", sp.merge_time * 1e6, "µs"),
            "time_split": Readout("Time, these splits", sp.total_time * 1e6, "µs"),
            "speedup": Readout("Speed-up", s.speedup, "×"),
            "best_splits": Readout("Best split count", best),
        }
