"""Figure 4.3: the softmaxes of two blocks of keys, (m, l, o) each, merged into the
softmax of all of them."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpuviz.core.model import FigureModel, Parameter, Readout
from gpuviz.models.flash_attention.common import SCORE_SPREAD, overflow_readout


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
            "m_a": overflow_readout("m(A), max of A", s.a.m, 3),
            "l_a": Readout("l(A)", s.a.l, digits=4),
            "m_b": overflow_readout("m(B), max of B", s.b.m, 3),
            "l_b": Readout("l(B)", s.b.l, digits=4),
            "m": overflow_readout("Merged m = max", s.merged.m, 3),
            "w_a": Readout("Weight w(A) = l(A) exp(m(A) − m)", s.merged.w_a, digits=4),
            "w_b": Readout("Weight w(B) = l(B) exp(m(B) − m)", s.merged.w_b, digits=4),
            "merge_error": Readout("max |merged − full|", s.merge_error, digits=2),
            "plain_error": Readout("max |plain average − full|", s.plain_error, digits=3),
        }
