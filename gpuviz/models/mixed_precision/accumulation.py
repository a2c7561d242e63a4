"""Figure 5.2: a long sum in a low-precision accumulator, naive, pairwise or Kahan. The
toy format (`round_bits`) is the only hand-written rounding of the lesson: it keeps p
significant bits, ties to even, with an unbounded exponent."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np

from gpuviz.core.model import FigureModel, Parameter, Readout, format_g, plural
from gpuviz.models.mixed_precision.formats import FORMATS, FloatFormat, number_readout, value_text

TOY_PRECISION = 4  # the toy format: 3 stored fraction bits plus the implicit one


def round_bits(x: float, precision: int = TOY_PRECISION) -> float:
    """x rounded to `precision` significant bits, ties to even, with no exponent limit:
    the rule of the real formats in their normal range (for precision 4 it matches FP8
    E4M3 there, which the tests check). math.frexp gives x = m * 2^e with 0.5 <= |m| < 1;
    m * 2^p is exact, Python's round() rounds half to even, ldexp puts the exponent back."""
    if x == 0 or not math.isfinite(x):
        return x
    mantissa, exponent = math.frexp(x)
    return math.ldexp(round(math.ldexp(mantissa, precision)), exponent - precision)


@dataclass(frozen=True)
class Accumulator:
    key: str
    label: str
    precision: int  # significant bits with the implicit one
    fmt: FloatFormat | None  # None: the toy format


ACCUMULATORS: dict[str, Accumulator] = {a.key: a for a in (
    Accumulator("fp32", "FP32", FORMATS["fp32"].precision, FORMATS["fp32"]),
    Accumulator("bf16", "BF16", FORMATS["bf16"].precision, FORMATS["bf16"]),
    Accumulator("fp16", "FP16", FORMATS["fp16"].precision, FORMATS["fp16"]),
    Accumulator("toy", "Toy (3 fraction bits)", TOY_PRECISION, None),
)}
METHODS = [("naive", "Naive"), ("pairwise", "Pairwise"), ("kahan", "Kahan")]
TERMS = ("0.125", "0.25", "0.5", "1", "2", "0.1", "0.01")
COUNT_MAX = 4096


def _arithmetic(acc: Accumulator) -> tuple[type, object]:
    """The number type the sums are kept in and the rounding applied after each
    operation. Real formats: their own numpy or ml_dtypes scalar type, whose +, - round
    every result to the format (computed in float32 and rounded once, exact by the 2p + 2
    argument above) and the rounding is then nothing more. Toy: float64 and round_bits."""
    if acc.fmt is None:
        return float, round_bits
    return acc.fmt.dtype, _same


def _same(x: object) -> object:
    return x


def store_term(acc: Accumulator, term: float) -> float:
    """The term as the accumulator format holds it."""
    number, r = _arithmetic(acc)
    with np.errstate(all="ignore"):
        return float(r(number(term)))


@cache
def running_sums(acc_key: str, method: str, term: float, count: int = COUNT_MAX
                 ) -> np.ndarray:
    """The computed sum after 1..count additions of `term` (first stored in the format),
    every addition rounded by the accumulator. Naive: s = r(s + t). Pairwise: the sum of
    k terms is r(sum of the first k//2 + sum of the other k - k//2), each half summed the
    same way. Kahan: y = r(t - c); u = r(s + y); c = r(r(u - s) - y); s = u."""
    acc = ACCUMULATORS[acc_key]
    number, r = _arithmetic(acc)
    sums = np.empty(count, dtype=number if acc.fmt is not None else np.float64)
    with np.errstate(all="ignore"):
        t = r(number(term))
        zero = number(0.0)
        if method == "naive":
            s = zero
            for k in range(count):
                new = r(s + t)
                if new == s:  # stalled: the same addition gives the same sum forever
                    sums[k:] = s
                    break
                s = sums[k] = new
        elif method == "pairwise":
            partial = [zero, t]
            for k in range(2, count + 1):
                half = k // 2
                partial.append(r(partial[half] + partial[k - half]))
            sums[:] = partial[1:]
        else:
            s = c = zero
            for k in range(count):
                y = r(t - c)
                u = r(s + y)
                c = r(r(u - s) - y)
                s = sums[k] = u
    return sums.astype(np.float64)


def stall_point(term: float, precision: int) -> float:
    """Where naive summation of a power-of-two term stops growing: t * 2^p. There the ulp
    is 2t, the term is half an ulp, and the tie rounds back to the even sum."""
    return term * 2.0 ** precision


@dataclass(frozen=True)
class AccumulationOutput:
    acc: Accumulator
    term: float  # as typed
    stored_term: float  # as stored in the accumulator format
    counts: np.ndarray  # 1..count
    sums: np.ndarray  # computed, chosen method
    exact: np.ndarray  # counts * stored_term
    naive_stall_index: int | None  # number of terms after which naive stops (None: never)
    naive_stall_value: float
    formula: float  # t * 2^p


class AccumulationModel(FigureModel):
    """5.2: add one term again and again with every addition rounded."""

    accumulator = Parameter("bf16", label="Accumulator",
                            choices=[(a.key, a.label) for a in ACCUMULATORS.values()],
                            help="The format of the running sum; every addition is "
                                 "rounded to it")
    method = Parameter("naive", label="Method", choices=METHODS,
                       help="Naive: one running sum. Pairwise: add in a balanced tree. "
                            "Kahan: carry the lost low part in a second variable")
    term = Parameter("0.125", label="Term t", choices=[(t, t) for t in TERMS],
                     help="The number added at every step")
    count = Parameter(1000, label="Terms added", minimum=1, maximum=COUNT_MAX, log=True,
                      help="How many times the term is added")

    def compute(self) -> AccumulationOutput:
        acc = ACCUMULATORS[self.accumulator]
        term = float(self.term)
        stored = store_term(acc, term)
        sums = running_sums(acc.key, self.method, term)[:self.count]
        naive = running_sums(acc.key, "naive", term)
        flat = np.flatnonzero(naive[1:] == naive[:-1])
        stall = int(flat[0]) + 1 if len(flat) else None
        counts = np.arange(1, self.count + 1, dtype=float)
        return AccumulationOutput(acc, term, stored, counts, sums, counts * stored, stall,
                                  float(naive[stall - 1]) if stall else math.nan,
                                  stall_point(stored, acc.precision))

    def comment(self) -> tuple[str, bool]:
        out = self.out
        final, exact = float(out.sums[-1]), float(out.exact[-1])
        count = len(out.counts)
        if self.method == "naive" and out.naive_stall_index and out.naive_stall_index <= count:
            ulp = 2.0 ** (math.frexp(out.naive_stall_value)[1] - out.acc.precision)
            return (f"{out.acc.label}: the sum is stuck at {value_text(out.naive_stall_value)} "
                    f"from term {out.naive_stall_index:,} on. There one ulp is "
                    f"{value_text(ulp)}, so adding {value_text(out.stored_term)} is half an "
                    f"ulp or less and rounds back to the same sum. Exact: "
                    f"{value_text(exact)}."), True
        error = abs(final - exact) / exact
        return (f"{out.acc.label}, {self.method}: {value_text(final)} after "
                f"{plural(count, 'term')} against {value_text(exact)} exact (relative error "
                f"{format_g(error, 2)})."), False

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        final, exact = float(out.sums[-1]), float(out.exact[-1])
        stall = (Readout("Naive sum stops", out.naive_stall_value,
                         shown=f"after {out.naive_stall_index:,} terms, at "
                               f"{value_text(out.naive_stall_value)}")
                 if out.naive_stall_index else
                 Readout("Naive sum stops", shown=f"not within {COUNT_MAX:,} terms"))
        return {
            "stored_term": number_readout("Term as stored", out.stored_term),
            "computed": number_readout("Computed sum", final),
            "exact": number_readout("Exact sum", exact),
            "error": Readout("Relative error", abs(final - exact) / exact * 100, "%"),
            "precision": Readout("Significand bits p", out.acc.precision),
            "formula": number_readout("t × 2ᵖ", out.formula),
            "stall": stall,
        }
