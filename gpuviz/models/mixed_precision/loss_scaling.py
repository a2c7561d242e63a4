"""Figure 5.4: loss scaling on a synthetic population of gradients: what a 16-bit format
flushes to zero, keeps as subnormals or lets overflow at each scale S = 2ᵏ."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from functools import cache, lru_cache

import numpy as np

from gpuviz.core.model import Parameter, PredictFirstModel, Readout, superscript
from gpuviz.models.mixed_precision.formats import (
    FORMATS,
    FloatFormat,
    power_text,
    round_to,
    value_text,
)

GRADIENT_COUNT = 10_000
GRADIENT_CENTRE = -23.96  # log2 of the median gradient magnitude
GRADIENT_SPREAD = 5.14  # standard deviation of log2 |g|, in binades
SCALE_EXP_MAX = 24
GRADIENT_FORMATS = [("fp16", "FP16"), ("bf16", "BF16")]


@cache
def gradient_log2() -> np.ndarray:
    """log2 |g| of the synthetic population: the exact normal quantiles
    centre + spread * Phi^-1((i + 0.5) / n), i = 0..n-1 (deterministic, no random draw)."""
    normal = statistics.NormalDist()
    return np.array([GRADIENT_CENTRE + GRADIENT_SPREAD * normal.inv_cdf((i + 0.5)
                                                                          / GRADIENT_COUNT)
                     for i in range(GRADIENT_COUNT)])


@dataclass(frozen=True)
class ScalingOutput:
    fmt: FloatFormat
    scale_exp: int
    scaled_log2: np.ndarray  # log2 |g * S| before rounding
    flushed: np.ndarray  # bool: stored as 0
    overflowed: np.ndarray  # bool: stored as inf
    subnormal: np.ndarray  # bool: kept with fewer significant bits
    flush_limit: float  # magnitudes at or below this become 0
    overflow_limit: float  # magnitudes from this up become inf
    edges: np.ndarray  # histogram bin edges, log2 |g * S|
    normal_counts: np.ndarray  # per bin: kept as normal numbers
    subnormal_counts: np.ndarray  # kept as subnormals
    lost_counts: np.ndarray  # flushed or overflowed

    @property
    def flushed_pct(self) -> float:
        return 100.0 * float(self.flushed.mean())

    @property
    def overflowed_pct(self) -> float:
        return 100.0 * float(self.overflowed.mean())

    @property
    def skip(self) -> bool:
        return bool(self.overflowed.any())

    @property
    def lossless(self) -> bool:
        return not (self.flushed.any() or self.overflowed.any())


HISTOGRAM_RANGE = (-46.0, 22.0)  # log2 |g * S| for every S = 2^0 .. 2^24
BIN_WIDTH = 0.5  # binades per bar; FP16's flush limit 2^-25 falls on an edge
HISTOGRAM_EDGES = np.arange(HISTOGRAM_RANGE[0], HISTOGRAM_RANGE[1] + BIN_WIDTH / 2, BIN_WIDTH)


@lru_cache(maxsize=64)  # every (format, S) of the figure: about 6 MB
def scale_gradients(fmt_key: str, scale_exp: int) -> ScalingOutput:
    """The population multiplied by S = 2^scale_exp (exact) and cast to the format, with
    a histogram of log2 |g * S| split into kept (normal, subnormal) and lost values."""
    fmt = FORMATS[fmt_key]
    logs = gradient_log2() + scale_exp
    stored = round_to(fmt, np.exp2(logs))
    flushed, overflowed = stored == 0, np.isinf(stored)
    subnormal = (stored > 0) & (stored < fmt.min_normal)
    lost = flushed | overflowed

    def count(mask: np.ndarray) -> np.ndarray:
        return np.histogram(logs[mask], HISTOGRAM_EDGES)[0]

    return ScalingOutput(fmt, scale_exp, logs, flushed, overflowed, subnormal,
                         fmt.min_subnormal / 2, fmt.overflow_threshold, HISTOGRAM_EDGES,
                         count(~lost & ~subnormal), count(subnormal), count(lost))


@cache
def lossless_exponents(fmt_key: str) -> tuple[int, ...]:
    return tuple(k for k in range(SCALE_EXP_MAX + 1) if scale_gradients(fmt_key, k).lossless)


class LossScalingModel(PredictFirstModel):
    """5.4: loss scaling on a synthetic gradient population."""

    fmt = Parameter("fp16", label="Gradient format", choices=GRADIENT_FORMATS,
                    help="The 16-bit format the backward pass stores gradients in")
    scale_exp = Parameter(0, label="Loss scale S = 2ᵏ, k", minimum=0, maximum=SCALE_EXP_MAX,
                          step=1, help="The loss (and so every gradient) is multiplied by S")
    guess_exp = Parameter(10, label="Your guess: lossless S = 2ᵏ, k", minimum=0,
                          maximum=SCALE_EXP_MAX, step=1,
                          help="Guess the one k for which FP16 loses no gradient")
    guess_parameter = "guess_exp"

    def compute(self) -> ScalingOutput:
        return scale_gradients(self.fmt, self.scale_exp)

    def comment(self) -> tuple[str, bool]:
        out = self.out
        if out.skip:
            return (f"{out.overflowed_pct:.2f}% of the scaled gradients reach "
                    f"{value_text(out.overflow_limit)} or more and become inf: GradScaler "
                    f"would skip this step and halve S."), True
        if out.lossless:
            return (f"Every gradient survives in {out.fmt.label} at "
                    f"S = 2{superscript(out.scale_exp)}"
                    + (f"; {100 * out.subnormal.mean():.2f}% are subnormals with fewer "
                       "significant bits." if out.subnormal.any() else "."), False)
        return (f"{out.flushed_pct:.2f}% of the gradients are at or below "
                f"{power_text(out.flush_limit)} after scaling and flush to 0: their "
                f"updates are lost."), out.flushed_pct >= 1.0

    def answer_text(self) -> str:
        good = lossless_exponents("fp16")
        listed = ", ".join(f"2{superscript(k)}" for k in good)
        verdict = ("right" if self.guess_exp in good else
                   "too small: the smallest gradients still flush to 0"
                   if good and self.guess_exp < good[0] else
                   "too large: the largest gradients overflow")
        return (f"In FP16 only S = {listed} loses no gradient: the population spans about "
                f"40 binades and FP16's window (subnormals included) about 41. Your 2"
                f"{superscript(self.guess_exp)} is {verdict}.")

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        good = lossless_exponents("fp16")  # one k only: its value is the smallest S
        return {
            "scale": Readout("Loss scale S", 2 ** out.scale_exp,
                             shown=f"2{superscript(out.scale_exp)} = {2 ** out.scale_exp:,}"),
            "flushed": Readout("Flushed to 0", out.flushed_pct, "%", decimals=2),
            "overflowed": Readout("Overflowed to inf", out.overflowed_pct, "%", decimals=2),
            "subnormal": Readout("Subnormal (fewer bits)", 100.0 * float(out.subnormal.mean()),
                                 "%", decimals=2),
            "skip": Readout("GradScaler skips the step", out.skip),
            "lossless": Readout("Nothing lost", out.lossless),
            "answer": self.answer(Readout("Lossless S (FP16)", 2 ** good[0], shown=", ".join(
                f"2{superscript(k)}" for k in good))),
        }
