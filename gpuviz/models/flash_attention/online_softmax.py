"""Figure 4.1: softmax naive, safe (the exact reference) and online, one block of scores
at a time, keeping only the running max m, the running sum of exponentials l and the
running softmax average of the values o."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpuviz.core.model import Parameter, Readout, SteppedModel
from gpuviz.models.flash_attention.common import SCORE_SPREAD, overflow_readout

# exp(x) overflows float64 above ln(largest double) = 709.78.
FLOAT64_EXP_LIMIT = math.log(np.finfo(np.float64).max)
HUGE_SCORE = 1000.0


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
            "m": overflow_readout("Running max m", float(t.m[k]), 4),
            "l": Readout("Running sum l", float(t.l[k]), digits=4),
            "o": Readout("Running output o", float(t.o[k]), digits=6),
            "rescale": rescale,
            "exact": Readout("Exact softmax average", s.exact, digits=6),
            "difference": Readout("|online − exact| at the end", s.difference, digits=2),
            "naive_sum": overflow_readout("Naive Σ eˣ, whole row", s.naive_sum, 4),
            "naive_result": overflow_readout("Naive result, whole row", s.naive_result, 6),
        }
