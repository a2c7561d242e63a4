"""The number formats of Lesson 5 (FP32, BF16, FP16, the FP8s, FP4) and how its figures
write their numbers (`value_text`, `power_text`).

Every rounding to a real format is a numpy or ml_dtypes cast (`round_to`), never bit
arithmetic written here. An arithmetic result is first computed in float64 and then cast:
float64 has 53 significand bits, at least 2p + 2 for every format here (p <= 24), so this
double rounding gives the correctly rounded sum, difference or product (Figueroa's
theorem)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import ml_dtypes
import numpy as np

from gpuviz.core.model import MINUS, Readout, format_g, signed, superscript


@dataclass(frozen=True)
class FloatFormat:
    """A binary floating-point format: sign, `exponent_bits`, `mantissa_bits` stored
    fraction bits (p = mantissa_bits + 1 with the implicit one). The limits come from
    ml_dtypes.finfo, which reads them off the type."""

    key: str
    label: str
    dtype: type
    exponent_bits: int
    mantissa_bits: int
    specials: str  # what the format does beyond its largest number

    @property
    def bits(self) -> int:
        return 1 + self.exponent_bits + self.mantissa_bits

    @property
    def precision(self) -> int:
        return self.mantissa_bits + 1

    @property
    def bias(self) -> int:
        return 2 ** (self.exponent_bits - 1) - 1

    @cached_property
    def info(self) -> ml_dtypes.finfo:
        return ml_dtypes.finfo(self.dtype)

    @cached_property
    def max(self) -> float:
        return float(self.info.max)

    @cached_property
    def min_normal(self) -> float:
        return float(self.info.smallest_normal)

    @cached_property
    def min_subnormal(self) -> float:
        return float(self.info.smallest_subnormal)

    @cached_property
    def eps(self) -> float:
        return float(self.info.eps)

    @cached_property
    def overflow_threshold(self) -> float:
        """max + half its ulp: larger magnitudes do not round to max. At the tie itself it
        depends on max's last mantissa bit: 1 in the IEEE-like formats (65520 overflows
        in FP16), 0 in E4M3 (464 rounds down to 448)."""
        return self.max + 0.5 * (self.max - neighbours(self, self.max, -1)[0])

    def overflows(self, magnitude: float) -> bool:
        """Whether rounding `magnitude` passes the largest number (to inf, NaN or, in E2M1,
        a saturated max)."""
        edge = self.overflow_threshold
        return magnitude > edge or (magnitude == edge and bit_pattern(self, self.max) & 1)

    @property
    def uint(self) -> type:
        return {32: np.uint32, 16: np.uint16}.get(self.bits, np.uint8)


FORMATS: dict[str, FloatFormat] = {f.key: f for f in (
    FloatFormat("fp32", "FP32", np.float32, 8, 23, "inf"),
    FloatFormat("bf16", "BF16", ml_dtypes.bfloat16, 8, 7, "inf"),
    FloatFormat("fp16", "FP16", np.float16, 5, 10, "inf"),
    FloatFormat("e4m3", "FP8 E4M3", ml_dtypes.float8_e4m3fn, 4, 3, "nan"),
    FloatFormat("e5m2", "FP8 E5M2", ml_dtypes.float8_e5m2, 5, 2, "inf"),
    FloatFormat("e2m1", "FP4 E2M1", ml_dtypes.float4_e2m1fn, 2, 1, "saturate"),
)}
FORMAT_CHOICES = [(f.key, f.label) for f in FORMATS.values()]


def round_to(fmt: FloatFormat, x: np.ndarray | float) -> np.ndarray:
    """x (float64) stored in `fmt` and read back as float64: one cast, round to nearest,
    ties to even. Beyond the range: inf (fp32, bf16, fp16, E5M2), NaN (E4M3, which has no
    inf) or the largest number (E2M1, which has neither, as ml_dtypes casts it)."""
    with np.errstate(all="ignore"):
        return np.asarray(x, dtype=np.float64).astype(fmt.dtype).astype(np.float64)


def bit_pattern(fmt: FloatFormat, value: float) -> int:
    """The raw bits of `value` stored in `fmt`, as an unsigned integer."""
    with np.errstate(all="ignore"):
        stored = np.asarray([value], dtype=np.float64).astype(fmt.dtype)
    return int(stored.view(fmt.uint)[0]) & ((1 << fmt.bits) - 1)


def neighbours(fmt: FloatFormat, value: float, count: int) -> list[float]:
    """The `count` representable numbers after `value` (count > 0, upwards) or before it
    (count < 0, downwards), by numpy.nextafter on the format's own type. Stops at the
    largest finite number (no neighbour beyond)."""
    step = fmt.dtype(math.copysign(fmt.max, count))
    current = np.asarray(value, dtype=np.float64).astype(fmt.dtype)
    found = []
    with np.errstate(all="ignore"):
        for _ in range(abs(count)):
            following = np.nextafter(current, step)
            if following == current or not np.isfinite(following):
                break
            current = following
            found.append(float(current))
    return found


def value_text(value: float) -> str:
    """A short text for a value, with inf, NaN and −0 spelled out (true minus, ×10ⁿ)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else MINUS + "inf"
    if value == 0:
        return MINUS + "0" if math.copysign(1.0, value) < 0 else "0"
    if value.is_integer() and abs(value) < 1e7:
        return signed(f"{int(value):,}")
    if 1e-4 <= abs(value) < 1e7:
        shortest = repr(value)  # the shortest text that reads back as this float
        return signed(shortest.removesuffix(".0") if len(shortest) <= 16
                      else f"{value:.10g}")
    return format_g(value)


def number_readout(label: str, value: float, text: Callable[[float], str] = value_text
                   ) -> Readout:
    """A float written as this lesson writes it (`value_text`, `power_text`, a decimal
    expansion): infinity and NaN have no value, only their text."""
    return Readout(label, float(value) if math.isfinite(value) else None, shown=text(value))


def power_text(value: float) -> str:
    """A positive power of two as 2ᵏ, other numbers as value_text."""
    if value > 0 and math.isfinite(value):
        mantissa, exponent = math.frexp(value)
        if mantissa == 0.5:
            return "2" + superscript(exponent - 1)
    return value_text(value)
