"""Lesson 11, quantization: the integer grid (11.1), the rounding/clipping trade-off
(11.2), the granularity of scales (11.3), SmoothQuant (11.4) and W4A16 on the roofline
(11.5).

Every number is real numpy arithmetic on the values the figures show, drawn from seeded
generators (numpy.random.default_rng), so each figure gives the same numbers every run.
Pure functions first, then the figure models.

Uniform symmetric quantization with b bits keeps a zero level and Q = 2^(b-1) - 1
levels on each side: step = alpha / Q, code = clip(round(x / step), -Q, Q), value =
code x step. Inside the range |x| <= alpha the error is at most step / 2 (rounding);
outside it is |x| - alpha (clipping).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from gpuviz.core.model import (
    FigureModel,
    Parameter,
    PredictFirstModel,
    Readout,
    format_g,
    format_value,
    time_readout,
    time_text,
)
from gpuviz.data.hardware import DEFAULT_GPU
from gpuviz.data.models import model
from gpuviz.models import transformer as tf
from gpuviz.models.roofline import (
    COMPUTE,
    Roof,
    RooflineTime,
    attainable,
    gpu_roof,
    roofline_time,
)

SEED = 0
PER_TENSOR, PER_ROW, PER_COLUMN = "tensor", "row", "column"
GRANULARITIES = ((PER_TENSOR, "Per tensor"), (PER_ROW, "Per row"), (PER_COLUMN, "Per column"))


# ---------------------------------------------------------------------------------------
# Uniform symmetric quantization
# ---------------------------------------------------------------------------------------


def levels(bits: int) -> int:
    """Q = 2^(b-1) - 1: the largest code; the grid has 2Q + 1 points including zero."""
    return 2 ** (int(bits) - 1) - 1


def quant_step(alpha: float | np.ndarray, bits: int) -> float | np.ndarray:
    """step = alpha / (2^(b-1) - 1)."""
    return alpha / levels(bits)


def _safe(alpha: float | np.ndarray) -> float | np.ndarray:
    # A range of 0 (an all-zero row) would divide by zero; any positive range maps zeros
    # to code 0 exactly.
    return np.where(np.asarray(alpha) > 0, alpha, 1.0)


def quantize_codes(x: np.ndarray, alpha: float | np.ndarray, bits: int) -> np.ndarray:
    """Integer codes clip(round(x / step), -Q, Q); alpha broadcasts (per-row scales...)."""
    q = levels(bits)
    return np.clip(np.rint(x / quant_step(_safe(alpha), bits)), -q, q)


def quantize(x: np.ndarray, alpha: float | np.ndarray, bits: int) -> np.ndarray:
    """The values the codes stand for: code x step."""
    return quantize_codes(x, alpha, bits) * quant_step(_safe(alpha), bits)


def mse_split(x: np.ndarray, alpha: float, bits: int) -> tuple[float, float]:
    """(rounding, clipping) parts of the mean squared error: the squared errors of the
    values inside the range and of those outside, each summed and divided by all n."""
    rounding, clipping = mse_curves(x, np.array([alpha]), bits)
    return float(rounding[0]), float(clipping[0])


def mse_curves(x: np.ndarray, alphas: np.ndarray, bits: int, chunk: int = 64
               ) -> tuple[np.ndarray, np.ndarray]:
    """mse_split for many ranges at once (chunks bound the memory)."""
    x = np.asarray(x, dtype=float).ravel()
    ax = np.abs(x)
    rounding = np.empty(len(alphas))
    clipping = np.empty(len(alphas))
    for start in range(0, len(alphas), chunk):
        a = np.asarray(alphas[start:start + chunk], dtype=float)[:, None]
        err = (x[None, :] - quantize(x[None, :], a, bits)) ** 2
        inside = ax[None, :] <= a
        rounding[start:start + chunk] = np.where(inside, err, 0.0).sum(axis=1) / x.size
        clipping[start:start + chunk] = np.where(inside, 0.0, err).sum(axis=1) / x.size
    return rounding, clipping


def absmax(x: np.ndarray, granularity: str) -> np.ndarray:
    """The min-max range of each scale group: the whole tensor, each row or each column
    (kept as a broadcastable array)."""
    ax = np.abs(x)
    if granularity == PER_ROW:
        return ax.max(axis=1, keepdims=True)
    if granularity == PER_COLUMN:
        return ax.max(axis=0, keepdims=True)
    return np.full((1, 1), ax.max())


def quantize_granular(x: np.ndarray, granularity: str, bits: int) -> np.ndarray:
    """Min-max quantization with one scale per tensor, per row or per column."""
    return quantize(x, absmax(x, granularity), bits)


def rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x))))


def relative_error(approx: np.ndarray, exact: np.ndarray) -> float:
    """||approx - exact||_F / ||exact||_F."""
    return float(np.linalg.norm(approx - exact) / np.linalg.norm(exact))


# ---------------------------------------------------------------------------------------
# SmoothQuant and W8A8
# ---------------------------------------------------------------------------------------


def smoothing_scales(x_max: np.ndarray, w_max: np.ndarray, alpha: float) -> np.ndarray:
    """SmoothQuant: s_j = max|X_j|^alpha / max|W_j|^(1 - alpha) per input channel j."""
    return x_max ** alpha / w_max ** (1.0 - alpha)


def w8a8_matmul(x: np.ndarray, w: np.ndarray, bits: int = 8) -> np.ndarray:
    """X @ W with X (tokens x channels) quantized with one per-tensor scale and W
    (channels x outputs) with one scale per output column; integer products summed and
    rescaled, as an int8 GEMM does. The scales sit outside the sum over channels."""
    x_alpha = absmax(x, PER_TENSOR)
    w_alpha = absmax(w, PER_COLUMN)
    xq = quantize_codes(x, x_alpha, bits)
    wq = quantize_codes(w, w_alpha, bits)
    return (xq @ wq) * quant_step(x_alpha, bits) * quant_step(w_alpha, bits)


# ---------------------------------------------------------------------------------------
# Weight-only quantization with group scales (W4A16)
# ---------------------------------------------------------------------------------------

SCALE_BITS = 16  # one fp16 scale per group


def bits_per_weight(weight_bits: float, group: int, scale_bits: float = SCALE_BITS) -> float:
    """Stored bits per weight with one scale per `group` weights: b + scale_bits / group
    (4 + 16 / 128 = 4.125)."""
    return weight_bits + scale_bits / group


def weight_matmul_cost(tokens: float | np.ndarray, k: int, m: int, weight_bits: float
                       ) -> tuple[float | np.ndarray, float | np.ndarray]:
    """(FLOPs, bytes) of (tokens x k) @ (k x m) with bf16 activations in and out and
    weights stored in `weight_bits` bits each (dequantized on chip, so the FLOPs are
    bf16 FLOPs): FLOPs 2 n k m, bytes 2 (n k + n m) + k m bits / 8."""
    flops, _ = tf.matmul_cost(tokens, k, m)
    activations = tf.BF16_BYTES * (tokens * k + tokens * m)
    return flops, activations + k * m * weight_bits / 8


# ---------------------------------------------------------------------------------------
# Figure 11.1: the integer grid
# ---------------------------------------------------------------------------------------

GRID_VALUES = 16
OUTLIER = 10.0
ALPHA_MIN, ALPHA_MAX = 0.1, 12.0


@functools.cache
def grid_values() -> np.ndarray:
    """16 seeded values in [-1, 1], scaled so the largest magnitude is exactly 1."""
    u = np.random.default_rng(SEED).uniform(-1.0, 1.0, GRID_VALUES)
    return u / np.abs(u).max()


@dataclass(frozen=True)
class GridOut:
    values: np.ndarray  # the 16 small values, then the outlier if present
    quantized: np.ndarray
    codes: np.ndarray
    small: np.ndarray  # bool mask of the 16 small values
    alpha: float
    bits: int
    step: float
    top_code: int  # Q
    errors: np.ndarray  # |x - q|
    max_error: float
    max_error_inside: float  # over values inside the range
    bound: float  # step / 2
    used_small: int  # distinct grid points the 16 small values land on
    clipped: int


class GridModel(FigureModel):
    """Figure 11.1: 16 values (and an optional outlier of 10) on a b-bit symmetric grid.

    step = alpha / (2^(b-1) - 1); codes -(2^(b-1) - 1) .. 2^(b-1) - 1; the error is at
    most step / 2 for |x| <= alpha, and |x| - alpha for a clipped value. "Min-max" sets
    alpha to the largest |x|; moving the range slider turns it off.
    """

    bits = Parameter(4, label="Bits b", minimum=2, maximum=8, step=1,
                     help="Bits per code: 2ᵇ⁻¹ − 1 levels on each side of zero")
    alpha = Parameter(1.0, label="Range α", minimum=ALPHA_MIN, maximum=ALPHA_MAX, log=True,
                      help="Values beyond ±α are clipped to it; the grid step is "
                           "α / (2ᵇ⁻¹ − 1)")
    min_max = Parameter(True, label="Range = largest |value| (min-max)",
                        help="Set α to the largest magnitude, so nothing is clipped")
    outlier = Parameter(False, label=f"Add an outlier ({OUTLIER:g})",
                        help="A 17th value far outside the others")

    def values_shown(self) -> np.ndarray:
        small = grid_values()
        return np.append(small, OUTLIER) if self.outlier else small

    def parameter_changed(self, name: str) -> None:
        if name == "alpha":
            self._values["min_max"] = math.isclose(
                self.alpha, float(np.abs(self.values_shown()).max()))
        elif self.min_max and name in ("min_max", "outlier"):
            # No second signal needed: the change being handled emits one.
            self._values["alpha"] = float(np.abs(self.values_shown()).max())

    def compute(self) -> GridOut:
        x = self.values_shown()
        bits, alpha = self.bits, self.alpha
        codes = quantize_codes(x, alpha, bits)
        step = quant_step(alpha, bits)
        q = codes * step
        errors = np.abs(x - q)
        small = np.arange(len(x)) < GRID_VALUES
        inside = np.abs(x) <= alpha
        return GridOut(x, q, codes, small, alpha, bits, step, levels(bits), errors,
                       float(errors.max()),
                       float(errors[inside].max()) if inside.any() else 0.0, step / 2,
                       len(np.unique(codes[small])), int((~inside).sum()))

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        return {
            "step": Readout("Step α / (2ᵇ⁻¹ − 1)", out.step),
            "bound": Readout("Bound step / 2", out.bound),
            "max_error": Readout("Largest error", out.max_error),
            "max_error_inside": Readout("Largest error inside ±α", out.max_error_inside),
            "grid_points": Readout("Grid points", 2 * out.top_code + 1),
            "used_small": Readout("Used by the 16 small values", out.used_small),
            "clipped": Readout("Clipped values", out.clipped),
        }

    def message(self) -> tuple[str, bool]:
        out = self.out
        if out.clipped:
            what = "1 value" if out.clipped == 1 else f"{out.clipped} values"
            return (f"{what} beyond ±{out.alpha:.3g} clipped: the largest error "
                    f"({format_value(out.max_error)}) exceeds the rounding bound step/2 = "
                    f"{format_value(out.bound)}.", True)
        return (f"Every value is inside the range, so every error is at most step/2 = "
                f"{format_value(out.bound)} (largest here {format_value(out.max_error)}). "
                f"The 16 small values "
                f"use {out.used_small} of {2 * out.top_code + 1} grid points.", False)


# ---------------------------------------------------------------------------------------
# Figure 11.2: rounding against clipping
# ---------------------------------------------------------------------------------------

SAMPLES = 8192
GAUSSIAN, LAPLACE = "gaussian", "laplace"
DISTRIBUTIONS = ((GAUSSIAN, "Gaussian"), (LAPLACE, "Laplace"))
MSE_BITS = (("4", "4 bits"), ("8", "8 bits"))
MSE_ALPHA_MIN, MSE_ALPHA_MAX, MSE_ALPHA_STEP = 0.25, 10.0, 0.01


def sigma_text(alpha: float) -> str:
    """A range in standard deviations, to the slider's step: 3.90 σ."""
    return format_value(alpha, "σ", decimals=2)


@functools.cache
def unit_samples(distribution: str) -> np.ndarray:
    """8,192 seeded samples scaled to a sample variance of exactly 1 (Laplace with scale
    1/sqrt(2) has unit variance before the scaling)."""
    rng = np.random.default_rng(SEED)
    if distribution == LAPLACE:
        x = rng.laplace(0.0, 1.0 / math.sqrt(2.0), SAMPLES)
    else:
        x = rng.standard_normal(SAMPLES)
    return x / x.std()


def mse_alphas() -> np.ndarray:
    count = round((MSE_ALPHA_MAX - MSE_ALPHA_MIN) / MSE_ALPHA_STEP) + 1
    return np.linspace(MSE_ALPHA_MIN, MSE_ALPHA_MAX, count)


@dataclass(frozen=True)
class MseCurves:
    alphas: np.ndarray  # in units of sigma
    rounding: np.ndarray
    clipping: np.ndarray
    total: np.ndarray
    uniform: np.ndarray  # step^2 / 12
    best_alpha: float
    best_mse: float
    max_abs: float  # the min-max range
    min_max_mse: float


@functools.cache
def mse_trade_off(distribution: str, bits: int) -> MseCurves:
    """MSE against the range for one sample and bit width; the best range is the
    minimum over a 0.01-sigma grid."""
    x = unit_samples(distribution)
    alphas = mse_alphas()
    rounding, clipping = mse_curves(x, alphas, bits)
    total = rounding + clipping
    best = int(np.argmin(total))
    max_abs = float(np.abs(x).max())
    r, c = mse_split(x, max_abs, bits)
    return MseCurves(alphas, rounding, clipping, total, quant_step(alphas, bits) ** 2 / 12,
                     float(alphas[best]), float(total[best]), max_abs, r + c)


@dataclass(frozen=True)
class MseOut:
    curves: MseCurves
    alpha: float
    rounding: float
    clipping: float
    uniform: float


class MseModel(PredictFirstModel):
    """Figure 11.2: mean squared error of b-bit symmetric quantization of 8,192 samples of
    unit variance against the range alpha (in sigma). Rounding part: about step^2 / 12
    times the share of values inside; clipping part: the squared excess of the values
    beyond alpha. The best alpha balances the two; min-max (alpha = max |x|) has no
    clipping but a coarse step."""

    distribution = Parameter(GAUSSIAN, label="Distribution", choices=DISTRIBUTIONS,
                             help="Laplace has heavier tails than the Gaussian")
    bits_choice = Parameter("4", label="Bits", choices=MSE_BITS,
                            help="4-bit or 8-bit codes")
    alpha = Parameter(4.0, label="Range α", unit="σ", minimum=MSE_ALPHA_MIN,
                      maximum=MSE_ALPHA_MAX, step=MSE_ALPHA_STEP,
                      help="Clip at ±α standard deviations (or drag the marker)")
    guess_alpha = Parameter(4.0, label="Your guess for the best α", unit="σ",
                            minimum=MSE_ALPHA_MIN, maximum=MSE_ALPHA_MAX, step=MSE_ALPHA_STEP,
                            help="The range you expect to give the smallest error for "
                                 "the distribution and bits chosen (Reveal compares them)")
    guess_parameter = "guess_alpha"

    def compute(self) -> MseOut:
        bits = int(self.bits_choice)
        curves = mse_trade_off(self.distribution, bits)
        r, c = mse_split(unit_samples(self.distribution), self.alpha, bits)
        return MseOut(curves, self.alpha, r, c, quant_step(self.alpha, bits) ** 2 / 12)

    def answer_text(self) -> str:
        c = self.out.curves
        off = self.guess_alpha - c.best_alpha
        closeness = ("spot on" if abs(off) <= 0.15 else
                     f"{sigma_text(abs(off))} too {'wide' if off > 0 else 'narrow'}")
        return (f"Best α = {sigma_text(c.best_alpha)} for this sample "
                f"({dict(DISTRIBUTIONS)[self.distribution]}, {self.bits_choice} bits); "
                f"min-max (α = {sigma_text(c.max_abs)}) has "
                f"{format_value(c.min_max_mse / c.best_mse, '×')} its error. Your guess of "
                f"{sigma_text(self.guess_alpha)} is {closeness}.")

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        c = out.curves
        return {
            "rounding": Readout("Rounding MSE", out.rounding),
            "uniform": Readout("step² / 12", out.uniform),
            "clipping": Readout("Clipping MSE", out.clipping),
            "total": Readout("Total MSE", out.rounding + out.clipping),
            "best_alpha": self.answer(Readout("Best α", c.best_alpha, "σ")),
            "best_mse": self.answer(Readout("Smallest MSE", c.best_mse)),
            "min_max_alpha": Readout("Min-max α = max |x|", c.max_abs, "σ"),
            "min_max_mse": Readout("Min-max MSE", c.min_max_mse),
            "ratio": self.answer(Readout("Min-max / best error", c.min_max_mse / c.best_mse,
                                         "×")),
        }


# ---------------------------------------------------------------------------------------
# Figure 11.3: granularity
# ---------------------------------------------------------------------------------------

GRAN_ROWS, GRAN_COLUMNS = 8, 16
OUTLIER_COLUMN = 5
OUTLIER_SIZE = 40.0  # the outlier channel's typical magnitude, in units of the others
ACTIVATIONS, WEIGHTS = "activations", "weights"
TENSORS = ((ACTIVATIONS, "Activations X"), (WEIGHTS, "Weights W"))


@functools.cache
def granularity_tensors() -> tuple[np.ndarray, np.ndarray]:
    """X: 8 tokens x 16 channels, unit-scale values with one outlier channel (column 5)
    about 40 times larger in every token. W: 8 output channels x 16 input channels
    (the layout of a linear layer's weight), each output row with its own size from
    0.05 to 2."""
    rng = np.random.default_rng(SEED)
    x = rng.standard_normal((GRAN_ROWS, GRAN_COLUMNS))
    x[:, OUTLIER_COLUMN] = OUTLIER_SIZE * rng.choice([-1.0, 1.0], GRAN_ROWS) * \
        rng.uniform(0.7, 1.0, GRAN_ROWS)
    row_size = rng.permutation(np.geomspace(0.05, 2.0, GRAN_ROWS))
    w = rng.standard_normal((GRAN_ROWS, GRAN_COLUMNS)) * row_size[:, None]
    return x, w


@dataclass(frozen=True)
class GranularityOut:
    tensor: str
    values: np.ndarray
    quantized: np.ndarray
    error: np.ndarray  # |x - q|
    error_scale: float  # the fixed top of the error colour scale: step/2 of one scale
    rms: dict[str, float]  # RMS error of each granularity
    rms_normal: dict[str, float]  # RMS error over the values outside the outlier column
    factorable: bool


def factors_out(tensor: str, granularity: str) -> bool:
    """Can an int8 matmul keep this scale outside its integer sum? Y[i, j] = sum_k X[i, k]
    W[j, k]: a scale may depend on i (a row of X: a token) or j (a row of W: an output
    channel), never on the summed k (a column of either)."""
    return granularity != PER_COLUMN


class GranularityModel(FigureModel):
    """Figure 11.3: one scale per tensor, per row or per column, min-max, b bits.

    X has rows = tokens (outer dimension) and columns = channels (the reduction
    dimension of X W^T); W is stored as output channels x input channels. The error map
    uses a fixed colour scale: step / 2 of a single per-tensor scale."""

    tensor = Parameter(ACTIVATIONS, label="Tensor", choices=TENSORS,
                       help="Activations have an outlier channel; weights have rows of "
                            "different sizes")
    granularity = Parameter(PER_TENSOR, label="One scale", choices=GRANULARITIES,
                            help="Which values share a scale (and a range)")
    bits = Parameter(8, label="Bits b", minimum=2, maximum=8, step=1,
                     help="Bits per code")

    def compute(self) -> GranularityOut:
        x, w = granularity_tensors()
        values = x if self.tensor == ACTIVATIONS else w
        q = quantize_granular(values, self.granularity, self.bits)
        normal = np.ones(values.shape, dtype=bool)
        if self.tensor == ACTIVATIONS:
            normal[:, OUTLIER_COLUMN] = False
        errs = {g: values - quantize_granular(values, g, self.bits) for g, _ in GRANULARITIES}
        return GranularityOut(
            self.tensor, values, q, np.abs(values - q),
            float(quant_step(np.abs(values).max(), self.bits) / 2),
            {g: rms(e) for g, e in errs.items()},
            {g: rms(e[normal]) for g, e in errs.items()},
            factors_out(self.tensor, self.granularity))

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        rows = {f"rms_{g}": Readout(f"RMS error, {label.lower()}", out.rms[g])
                for g, label in GRANULARITIES}
        return {
            **rows,
            "rms_normal": Readout("RMS error, non-outlier values" if out.tensor == ACTIVATIONS
                                  else "RMS error, all values",
                                  out.rms_normal[self.granularity]),
            "max_error": Readout("Largest error", float(out.error.max())),
            "factorable": Readout("Usable in an int8 matmul", out.factorable),
        }

    def verdict(self) -> tuple[str, bool]:
        if self.granularity == PER_COLUMN:
            what = ("input channel" if self.tensor == ACTIVATIONS
                    else "input channel (a column of W)")
            return ("Per column does not fit an int8 matmul: each output is a sum over the "
                    f"columns, so a scale per {what} would have to multiply every term "
                    "inside the integer sum instead of the finished sum.", True)
        acts = self.tensor == ACTIVATIONS
        if self.granularity == PER_ROW:
            whose = "token" if acts else "output channel"
            note = (" It helps little here: every token carries the outlier channel."
                    if acts else "")
            return (f"Per row works: a row's scale (one per {whose}) multiplies the whole "
                    f"integer sum of its output once, after the int8 products.{note}", False)
        note = " But the outlier channel sets the step for every value." if acts else ""
        return ("Per tensor works: one scale multiplies every integer sum at the end."
                + note, False)


# ---------------------------------------------------------------------------------------
# Figure 11.4: SmoothQuant
# ---------------------------------------------------------------------------------------

SQ_TOKENS, SQ_CHANNELS, SQ_OUTPUTS = 256, 8, 16
SQ_OUTLIERS = {2: 30.0, 6: 60.0}  # channel: size relative to the others
SQ_ALPHAS = np.linspace(0.0, 1.0, 101)
W8A8_BITS = 8


@functools.cache
def smooth_tensors() -> tuple[np.ndarray, np.ndarray]:
    """X: 256 tokens x 8 channels with outliers in channels 2 and 6; W: 8 channels x 16
    outputs with channel sizes from 0.2 to 1 (weights have no outliers)."""
    rng = np.random.default_rng(SEED)
    x = rng.standard_normal((SQ_TOKENS, SQ_CHANNELS))
    for channel, size in SQ_OUTLIERS.items():
        x[:, channel] *= size
    w = rng.standard_normal((SQ_CHANNELS, SQ_OUTPUTS)) * \
        rng.uniform(0.2, 1.0, SQ_CHANNELS)[:, None]
    return x, w


def smooth_error(x: np.ndarray, w: np.ndarray, alpha: float) -> float:
    """Relative error of (X diag(s)^-1)(diag(s) W) in W8A8 against the exact X W."""
    s = smoothing_scales(np.abs(x).max(axis=0), np.abs(w).max(axis=1), alpha)
    return relative_error(w8a8_matmul(x / s, w * s[:, None], W8A8_BITS), x @ w)


@functools.cache
def smooth_error_curve() -> np.ndarray:
    x, w = smooth_tensors()
    return np.array([smooth_error(x, w, a) for a in SQ_ALPHAS])


@dataclass(frozen=True)
class SmoothOut:
    scales: np.ndarray
    x_max: np.ndarray
    w_max: np.ndarray
    x_max_after: np.ndarray
    w_max_after: np.ndarray
    alphas: np.ndarray
    errors: np.ndarray
    error: float
    best_alpha: float
    unsmoothed_error: float  # W8A8 on X and W as they are (s = 1)
    identity_error: float  # max |(X/s)(sW) - XW| / max |XW|


class SmoothQuantModel(FigureModel):
    """Figure 11.4: SmoothQuant, s_j = max|X_j|^alpha / max|W_j|^(1 - alpha); X_j / s_j
    and s_j W_j leave X W unchanged. W8A8: one 8-bit scale for X, one per output column
    of W. alpha = 1 gives every activation channel a maximum of 1; alpha = 0 gives every
    weight channel a maximum of 1."""

    alpha = Parameter(0.5, label="Migration strength α", minimum=0.0, maximum=1.0, step=0.05,
                      help="0: the activations keep their outliers; 1: the weights take "
                           "them all")

    def compute(self) -> SmoothOut:
        x, w = smooth_tensors()
        x_max, w_max = np.abs(x).max(axis=0), np.abs(w).max(axis=1)
        s = smoothing_scales(x_max, w_max, self.alpha)
        xs, ws = x / s, w * s[:, None]
        exact = x @ w
        identity = float(np.abs(xs @ ws - exact).max() / np.abs(exact).max())
        errors = smooth_error_curve()
        return SmoothOut(s, x_max, w_max, np.abs(xs).max(axis=0), np.abs(ws).max(axis=1),
                         SQ_ALPHAS, errors, smooth_error(x, w, self.alpha),
                         float(SQ_ALPHAS[int(np.argmin(errors))]),
                         relative_error(w8a8_matmul(x, w, W8A8_BITS), exact), identity)

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        return {
            "x_spread": Readout("Spread of X channel maxima",
                                float(out.x_max_after.max() / out.x_max_after.min()), "×"),
            "w_spread": Readout("Spread of W channel maxima",
                                float(out.w_max_after.max() / out.w_max_after.min()), "×"),
            "error": Readout("W8A8 error of XW", 100 * out.error, "%"),
            "no_smoothing": Readout("Error without smoothing", 100 * out.unsmoothed_error, "%"),
            "best_alpha": Readout("Best α on this data", out.best_alpha, digits=2),
            "identity": Readout("(X/s)(sW) vs XW, relative",
                                out.identity_error, digits=2),
        }


# ---------------------------------------------------------------------------------------
# Figure 11.5: W4A16 on the roofline
# ---------------------------------------------------------------------------------------

ROOFLINE_GPU = DEFAULT_GPU  # the H100 SXM
WEIGHT_BITS_16 = 16.0
WEIGHT_BITS_4 = 4
GROUP_CHOICES = (("32", "32"), ("64", "64"), ("128", "128"), ("256", "256"))
TOKENS_MAX = 8192
W16, W4 = "w16", "w4"
COMPUTE_BOUND = COMPUTE  # the bound name of a compute-bound point
FORMATS = ((W16, "W16"), (W4, "W4"))


def weight_shapes() -> dict[str, tuple[str, int, int]]:
    """Weight matrices (label, k, m) from the model configurations."""
    small, big = model("llama3_8b"), model("llama3_70b")
    return {
        "8b_o": (f"{small.short_name} O proj.", small.hidden, small.hidden),
        "8b_up": (f"{small.short_name} MLP up", small.hidden, small.intermediate),
        "70b_up": (f"{big.short_name} MLP up", big.hidden, big.intermediate),
    }


def weight_choices() -> list[tuple[str, str]]:
    return [(key, label) for key, (label, _, _) in weight_shapes().items()]


@dataclass(frozen=True)
class FormatPoint:
    bits: float  # stored bits per weight
    flops: float
    bytes: float
    intensity: float
    attained: float  # FLOP/s on the roofline
    time: RooflineTime


@dataclass(frozen=True)
class W4A16Out:
    roof: Roof
    k: int
    m: int
    tokens: int
    points: dict[str, FormatPoint]
    speedup: float  # time W16 / time W4
    curve_tokens: np.ndarray
    curve_w16: np.ndarray  # s
    curve_w4: np.ndarray  # s
    selected: str


def format_point(tokens: int, k: int, m: int, bits: float, roof: Roof) -> FormatPoint:
    flops, nbytes = weight_matmul_cost(tokens, k, m, bits)
    intensity = flops / nbytes
    return FormatPoint(bits, flops, nbytes, intensity,
                       attainable(intensity, roof.peak, roof.bandwidth),
                       roofline_time(flops, nbytes, roof.peak, roof.bandwidth))


# Three places, not the two of other ratios: 3.873 against 16 / 4.125 = 3.879 is the
# lesson's point, and so is exactly 1.000 at prefill.
SPEEDUP_DECIMALS = 3


def bits_text(bits: float) -> str:
    """Stored bits per weight as figure 11.5 writes them everywhere, exactly: 4.0625."""
    return format_g(bits, 6)


def speedup_text(speedup: float) -> str:
    """W4's speed-up over W16 as figure 11.5 writes it everywhere: 3.873×."""
    return format_value(speedup, "×", decimals=SPEEDUP_DECIMALS)


class W4A16Model(FigureModel):
    """Figure 11.5: one weight matmul (n x k) @ (k x m) on the H100 BF16 roofline (the
    Lesson 2 model, time = max(FLOPs / peak, bytes / bandwidth)). W16 stores 16 bits per
    weight; W4 stores 4 bits plus one fp16 scale per group, 4 + 16 / g bits, and
    dequantizes to bf16 on chip (same FLOPs). Speed-up = time W16 / time W4: close to
    16 / 4.125 = 3.88 at n = 1 (the activations take a little), 1 once both are
    compute-bound."""

    weight = Parameter("8b_o", label="Weight matrix", choices=weight_choices,
                       help="k × m weight of one linear layer")
    tokens = Parameter(1, label="Tokens n", unit="tokens", minimum=1, maximum=TOKENS_MAX,
                       log=True, help="Rows of the input: 1 per sequence in decode, the "
                                      "prompt length in prefill")
    group = Parameter("128", label="Weights per scale", choices=GROUP_CHOICES,
                      help="Weights that share one fp16 scale in the int4 format")
    selected = Parameter(W4, label="Point", choices=FORMATS,
                         help="The point whose minimum time the readout shows (or click "
                              "a point)")

    def compute(self) -> W4A16Out:
        roof = gpu_roof(ROOFLINE_GPU, "bf16")
        _, k, m = weight_shapes()[self.weight]
        w4_bits = bits_per_weight(WEIGHT_BITS_4, int(self.group))
        points = {W16: format_point(self.tokens, k, m, WEIGHT_BITS_16, roof),
                  W4: format_point(self.tokens, k, m, w4_bits, roof)}
        n = np.unique(np.round(np.geomspace(1, TOKENS_MAX, 120)))
        curves = []
        for bits in (WEIGHT_BITS_16, w4_bits):
            flops, nbytes = weight_matmul_cost(n, k, m, bits)
            curves.append(np.maximum(flops / roof.peak, nbytes / roof.bandwidth))
        return W4A16Out(roof, k, m, self.tokens, points,
                        points[W16].time.time / points[W4].time.time, n, *curves,
                        self.selected)

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        p = out.points[self.selected]
        name = dict(FORMATS)[self.selected]
        return {
            "shape": Readout("Weight k × m", name=f"{out.k:,} × {out.m:,}"),
            # Exact (4.0625, 4.125, 4.5), as the legend of the time plot writes it.
            "w4_bits": Readout("W4 bits per weight", out.points[W4].bits,
                               shown=bits_text(out.points[W4].bits)),
            "speedup": Readout("Speed-up W4 over W16", out.speedup, "×",
                               decimals=SPEEDUP_DECIMALS),
            "selected": Readout("Selected point", name=name),
            "time": time_readout(f"Minimum time ({name})", p.time.time),
            "bound": Readout("Bound", name=f"{p.time.bound}-bound"),
            "intensity": Readout("Intensity", p.intensity, "FLOP/B"),
            "ridge": Readout("Ridge", out.roof.ridge, "FLOP/B"),
            "w16_time": time_readout("W16 time", out.points[W16].time.time),
            "w4_time": time_readout("W4 time", out.points[W4].time.time),
        }

    def message(self) -> str:
        out = self.out
        a, b = out.points[W16].time, out.points[W4].time
        if a.bound == COMPUTE_BOUND and b.bound == COMPUTE_BOUND:
            return (f"n = {out.tokens:,}: both points are compute-bound "
                    f"({time_text(a.time)}); fewer weight bytes buy nothing, the speed-up "
                    f"is {speedup_text(out.speedup)}.")
        return (f"n = {out.tokens:,}: W16 takes {time_text(a.time)} ({a.bound}-bound), "
                f"W4 {time_text(b.time)} ({b.bound}-bound): {speedup_text(out.speedup)} faster.")
