"""Lesson 5, mixed-precision training: number formats, accumulation, the training step and
loss scaling.

Every rounding to a real format is a numpy or ml_dtypes cast (`round_to`), never bit
arithmetic written here. An arithmetic result is first computed in float64 and then cast:
float64 has 53 significand bits, at least 2p + 2 for every format here (p <= 24), so this
double rounding gives the correctly rounded sum, difference or product (Figueroa's
theorem). The toy format of 5.2 (`round_bits`) is the only hand-written rounding: it
keeps p significant bits, ties to even, with an unbounded exponent.
"""

from __future__ import annotations

import ast
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from functools import cache, cached_property, lru_cache

import ml_dtypes
import numpy as np

from gpuviz.core.model import (
    MINUS,
    FigureModel,
    Parameter,
    PredictFirstModel,
    Readout,
    format_g,
    plural,
    signed,
    superscript,
)

# --- formats ---------------------------------------------------------------------------


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


def classify(fmt: FloatFormat, value: float, stored: float) -> str:
    """What happened to `value` when stored: its class in the format."""
    if math.isnan(value):
        return "NaN" if math.isnan(stored) else "NaN (not in this format)"
    if math.isinf(value):
        return "infinity" if math.isinf(stored) else "infinity (not in this format)"
    if math.isnan(stored) or math.isinf(stored):
        return "overflow"
    if fmt.overflows(abs(value)):
        return "overflow (saturated)"
    if stored == 0:
        if value == 0:
            return "negative zero" if math.copysign(1.0, value) < 0 else "zero"
        return "underflow to zero"
    if abs(stored) < fmt.min_normal:
        return "subnormal"
    return "normal"


# --- the safe expression parser --------------------------------------------------------

MAX_EXPRESSION = 120  # characters: more is refused (deep nesting, endless literals)
_WORDS = {"inf": math.inf, "infinity": math.inf, "nan": math.nan}
_BINARY = {ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply,
           ast.Div: np.divide, ast.Pow: np.power}


def parse_value(text: str) -> float:
    """a number or an arithmetic expression such as 1+2**-8, 1e-8 or inf

    Numbers, + - * / ** (or ^) and parentheses, and the words inf and nan. The text is
    parsed by Python's ast and only those nodes are evaluated, in float64 (a huge power
    gives inf, 0/0 gives NaN); nothing is ever passed to eval. Raises ValueError for
    anything else."""
    cleaned = (text.strip().replace("^", "**").replace("−", "-").replace("×", "*")
               .replace("_", "").replace(",", ""))
    if not cleaned:
        raise ValueError("type a number")
    if len(cleaned) > MAX_EXPRESSION:
        raise ValueError(f"too long (at most {MAX_EXPRESSION} characters)")
    try:
        tree = ast.parse(cleaned, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        raise ValueError(f"'{text.strip()}' is not a number or an arithmetic expression"
                         ) from None
    with np.errstate(all="ignore"):
        try:
            return float(_evaluate(tree.body))
        except ValueError as error:
            raise ValueError(f"'{text.strip()}' is not a number: {error}") from None


def _evaluate(node: ast.AST) -> np.float64:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        if isinstance(node.value, int) and node.value.bit_length() > 1100:
            return np.float64(math.inf)  # float() of it would raise
        return np.float64(node.value)
    if isinstance(node, ast.Name) and node.id.lower() in _WORDS:
        return np.float64(_WORDS[node.id.lower()])
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = _evaluate(node.operand)
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_evaluate(node.left), _evaluate(node.right))
    raise ValueError("only numbers, + - * / ** ( ) and the words inf and nan are allowed")


def check_value(text: str) -> None:
    """a number or an arithmetic expression such as 1+2**-8, 1e-8 or inf"""
    parse_value(text)


# --- 5.1 float formats ----------------------------------------------------------------

VALUE_EXAMPLES = ("1+2**-8", "70000", "65520", "65519.99", "1e-8", "2**-25", "0.1",
                  "448", "6", "-0", "inf", "nan", "1/3")
NEIGHBOURS = 2  # representable numbers shown on each side of the stored value


def exact_decimal(value: float, digits: int = 40) -> str:
    """The exact decimal expansion of a binary float (every one has a finite one), cut
    to `digits` significant digits with an ellipsis when longer."""
    if not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("inf" if value > 0 else MINUS + "inf")
    if value == 0:
        return MINUS + "0" if math.copysign(1.0, value) < 0 else "0"
    exact = Decimal(value)
    sign, figures, exponent = exact.as_tuple()
    text = "".join(map(str, figures)).rstrip("0") or "0"
    cut = len(text) > digits
    text = text[:digits]
    point = len(figures) + exponent  # digits before the decimal point
    if -6 < point <= 21:
        if point <= 0:
            body = "0." + "0" * -point + text
        elif point >= len(text):
            body = text + "0" * (point - len(text))
        else:
            body = text[:point] + "." + text[point:]
    else:
        body = (text[0] + ("." + text[1:] if len(text) > 1 else "") + ("…" if cut else "")
                + f"×10{superscript(point - 1)}")
        cut = False
    return (MINUS if sign else "") + body + ("…" if cut else "")


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


@dataclass(frozen=True)
class FormatOutput:
    fmt: FloatFormat
    value: float  # the typed value, float64
    stored: float  # the value the format holds, as float64
    pattern: int
    sign_bits: str
    exponent_bits: str
    mantissa_bits: str
    kind: str
    error: float  # stored - value (NaN when not finite)
    relative_error: float
    below: list[float]  # representable numbers below stored, nearest first
    above: list[float]
    ulp: float  # the gap above the stored value (below it at the top of the range)


def store(fmt: FloatFormat, value: float) -> FormatOutput:
    stored = float(round_to(fmt, value))
    pattern = bit_pattern(fmt, value)
    bits = format(pattern, f"0{fmt.bits}b")
    finite = math.isfinite(stored)
    if finite and math.isfinite(value):
        error = stored - value
        relative = abs(error) / abs(value) if value else 0.0
    else:
        error = relative = math.nan
    if math.isnan(value):  # nothing to place on the number line
        below, above, ulp = [], [], math.nan
    else:
        # An overflow is drawn past the largest number of its sign.
        anchor = stored if finite else math.copysign(fmt.max, value)
        below = neighbours(fmt, anchor, -NEIGHBOURS)
        above = neighbours(fmt, anchor, NEIGHBOURS)
        ulp = abs((above or below)[0] - anchor) if (above or below) else math.nan
        if not finite:
            below, above = ([anchor, *below[:-1]], []) if anchor > 0 else (
                [], [anchor, *above[:-1]])
    return FormatOutput(fmt, value, stored, pattern, bits[0],
                        bits[1:1 + fmt.exponent_bits], bits[1 + fmt.exponent_bits:],
                        classify(fmt, value, stored), error, relative, below, above, ulp)


class FloatFormatsModel(FigureModel):
    """5.1: a typed value stored in a format: bits, exact value, error, neighbours, range."""

    fmt = Parameter("bf16", label="Format", choices=FORMAT_CHOICES,
                    help="The floating-point format the value is stored in")
    value = Parameter("1+2**-8", label="Value (number or expression)",
                      choices=[(v, v) for v in VALUE_EXAMPLES], free_text=check_value,
                      help="Type a number or an expression of numbers with + - * / ** "
                           "and parentheses (2**-8, 1e-8, inf, nan); Enter stores it")

    def compute(self) -> FormatOutput:
        return store(FORMATS[self.fmt], parse_value(self.value))

    def comment(self) -> tuple[str, bool]:
        """A sentence on what happened to the value, and whether it is a loss."""
        out = self.out
        f, typed, kind = out.fmt, value_text(out.value), out.kind
        if kind.startswith("NaN"):
            return (f"NaN is not a number; {f.label} has no NaN, so ml_dtypes stores "
                    f"{value_text(out.stored)}." if "not" in kind else
                    "NaN is stored as NaN: exponent bits all ones and a mantissa that "
                    "is not zero."), "not" in kind
        if kind.startswith("infinity"):
            return (f"{f.label} has no infinity: ml_dtypes stores {value_text(out.stored)}."
                    if "not" in kind else "Infinity: exponent bits all ones, mantissa "
                    "zero."), "not" in kind
        if kind.startswith("overflow"):
            return (f"{typed} is past {f.label}'s largest number {value_text(f.max)} by more "
                    f"than half an ulp: it becomes {value_text(out.stored)}."), True
        if kind == "underflow to zero":
            return (f"{typed} is at or below half the smallest subnormal "
                    f"({power_text(f.min_subnormal)} / 2): it is flushed to 0."), True
        if kind in ("zero", "negative zero"):
            return (f"{'Negative zero: only the sign bit is set' if kind != 'zero' else 'Zero'};"
                    " it compares equal to the other zero."), False
        if out.error == 0:
            return f"{typed} is exactly representable in {f.label}.", False
        tie = self.tie()
        where = "exactly halfway between" if tie else "between"
        rule = (", a tie; ties go to the neighbour whose last mantissa bit is 0" if tie
                else "; it rounds to the nearer one")
        low, high = self.bracket()
        subnormal = " (a subnormal: fewer significant bits)" if kind == "subnormal" else ""
        return (f"{typed} lies {where} {value_text(low)} and {value_text(high)}{rule}: "
                f"{value_text(out.stored)}{subnormal}."), False

    def bracket(self) -> tuple[float, float]:
        """The two representable numbers around a finite value that is not one."""
        out = self.out
        if out.stored < out.value:
            return out.stored, (out.above[0] if out.above else math.inf)
        return (out.below[0] if out.below else -math.inf), out.stored

    def tie(self) -> bool:
        out = self.out
        if not (math.isfinite(out.stored) and math.isfinite(out.value)) or out.error == 0:
            return False
        low, high = self.bracket()
        return math.isfinite(low) and math.isfinite(high) and out.value - low == high - out.value

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        f = out.fmt
        return {
            "typed": number_readout("Typed value", out.value),
            "stored": number_readout("Stored value", out.stored),
            "exact": number_readout("Exactly", out.stored, lambda v: exact_decimal(v, 24)),
            "kind": Readout("Class", name=out.kind),
            "bits": Readout("Bits (hex)", out.pattern,
                            shown=f"0x{out.pattern:0{(f.bits + 3) // 4}X}"),
            "error": number_readout("Rounding error", out.error),
            "relative": number_readout("Relative error", out.relative_error),
            "ulp": number_readout("ulp here", out.ulp, power_text),
            "max": number_readout("Largest number", f.max),
            "min_normal": number_readout("Smallest normal", f.min_normal, power_text),
            "min_subnormal": number_readout("Smallest subnormal", f.min_subnormal, power_text),
            "eps": number_readout("Machine epsilon", f.eps, power_text),
        }


# --- 5.2 accumulation -----------------------------------------------------------------

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


# --- 5.3 the training step ------------------------------------------------------------

FP32, HALF, FP8, SCALING = "fp32", "16-bit", "fp8", "scaling"
RECIPES = [("bf16", "BF16"), ("fp16", "FP16 + loss scaling"), ("fp8", "FP8 matmuls")]


@dataclass(frozen=True)
class Step:
    key: str
    title: str
    kind: str  # FP32, HALF, FP8 or SCALING
    format_text: str
    why: str


def training_steps(recipe: str) -> list[Step]:
    """The steps of one mixed-precision training step, in order, for a recipe."""
    half = "FP16" if recipe == "fp16" else "BF16"
    fp8 = recipe == "fp8"
    steps = [
        Step("master", "Master\nweights", FP32, "FP32",
             "The optimizer adds updates that are often a thousand times smaller than the "
             "weight. In 16 bits (8 significant bits for BF16) such an update is below half "
             "an ulp and vanishes; FP32's 24 bits keep it. This copy is the real model."),
        Step("cast", f"{half}\ncopy", HALF, half,
             "Before the forward pass the weights are rounded to 16 bits once: matmuls read "
             "half the bytes and run on the fast tensor-core path. The copy is thrown away "
             "after the step."),
        Step("forward", "Forward\nmatmuls", FP8 if fp8 else HALF,
             "E4M3 in\nFP32 sum" if fp8 else f"{half} in\nFP32 sum",
             ("Weights and activations enter the matmul in FP8 E4M3, each tensor multiplied "
              "by its own scale so its largest value lands near 448; the products are "
              "summed in FP32 and the output written in BF16. Only the matmul inputs "
              "change with FP8." if fp8 else
              f"Matmul inputs are {half}; the tensor cores sum the products in FP32 and "
              f"the output is rounded to {half}. Activations saved for backward are "
              f"{half} too, half the memory of FP32.")),
        Step("loss", "Loss", FP32, "FP32",
             "Softmax, log and the mean over tokens are reductions over many values: they "
             "run in FP32, where a sum of thousands of terms does not stall."),
    ]
    if recipe == "fp16":
        steps.append(Step("scale", "× S", SCALING, "loss × S",
                          "FP16 flushes gradients at or below 2⁻²⁵ to zero. Multiplying "
                          "the loss by S multiplies every gradient by S (the chain rule), "
                          "which lifts the small ones into FP16's range."))
    steps += [
        Step("backward", "Backward\nmatmuls", FP8 if fp8 else HALF,
             "E5M2 in\nFP32 sum" if fp8 else f"{half} in\nFP32 sum",
             ("Gradients enter the matmuls in FP8 E5M2: two mantissa bits but five "
              "exponent bits, because gradients span a wider range than activations; "
              "each tensor has its own scale. Sums stay FP32." if fp8 else
              f"The gradient matmuls run like the forward ones: {half} inputs, FP32 sums, "
              f"{half} outputs.")),
        Step("reduce", "Gradient\nreduction", FP32, "FP32",
             "Gradients are summed over micro-batches and over GPUs. Summed in 16 bits, a "
             "long sum stalls once the total is 2ᵖ times a term; in FP32 it does not."),
    ]
    if recipe == "fp16":
        steps.append(Step("unscale", "÷ S,\ninf check", SCALING, "FP32",
                          "The gradients are divided by S in FP32 and checked: if any is "
                          "inf or NaN, S was too large, the step is skipped and S halves "
                          "(PyTorch's GradScaler; it doubles S again after 2,000 clean "
                          "steps)."))
    steps.append(Step("optimizer", "Optimizer\nstep", FP32, "FP32\nAdam m, v",
                      "Adam's moments m and v and the update are FP32: v holds squared "
                      "gradients, which underflow and overflow 16 bits easily, and the "
                      "update goes into the FP32 master weights."))
    return steps


ALL_STEPS = [(s.key, s.title.replace("\n", " ")) for s in training_steps("fp16")]


@dataclass(frozen=True)
class StepOutput:
    steps: list[Step]
    selected: Step


class TrainingStepModel(FigureModel):
    """5.3: the steps of one training step coloured by the format they run in."""

    recipe = Parameter("bf16", label="Recipe", choices=RECIPES,
                       help="Which mixed-precision recipe the step follows")
    step_shown = Parameter("master", label="Read about", choices=ALL_STEPS,
                           help="The step whose format is explained (or click a box)")

    def compute(self) -> StepOutput:
        steps = training_steps(self.recipe)
        by_key = {s.key: s for s in steps}
        return StepOutput(steps, by_key.get(self.step_shown, steps[0]))

    def comment(self) -> str:
        return {
            "bf16": "BF16 keeps FP32's 8 exponent bits, so small gradients survive without "
                    "loss scaling; everything that sums many numbers or keeps state stays FP32.",
            "fp16": "FP16's range ends at 65504 and flushes below 2⁻²⁵: two loss-scaling "
                    "steps (magenta) appear, × S after the loss and ÷ S with an inf check "
                    "before the optimizer.",
            "fp8": "Only the matmul inputs become FP8 (E4M3 forward, E5M2 for gradients, "
                   "one scale per tensor); master weights, reductions and the optimizer "
                   "stay FP32.",
        }[self.recipe]

    def readouts(self) -> dict[str, Readout]:
        steps = self.out.steps
        count = {kind: sum(s.kind == kind for s in steps) for kind in (FP32, HALF, FP8,
                                                                      SCALING)}
        matmul = next(s for s in steps if s.key == "forward")
        return {
            "steps": Readout("Steps", len(steps)),
            "fp32": Readout("Steps in FP32", count[FP32]),
            "low": Readout("Steps in 16 or 8 bits", count[HALF] + count[FP8]),
            "scaling": Readout("Loss-scaling steps", count[SCALING]),
            "matmul": Readout("Forward matmul", name=matmul.format_text.replace("\n", ", ")),
        }


# --- 5.4 loss scaling -----------------------------------------------------------------

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
