"""Figure 5.1: a typed value (a safe arithmetic expression) stored in a format: its bits,
its class, the rounding error, the neighbouring representable numbers."""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from decimal import Decimal

import numpy as np

from gpuviz.core.model import MINUS, FigureModel, Parameter, Readout, superscript
from gpuviz.models.mixed_precision.formats import (
    FORMAT_CHOICES,
    FORMATS,
    FloatFormat,
    bit_pattern,
    neighbours,
    number_readout,
    power_text,
    round_to,
    value_text,
)


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


def error_words(out: FormatOutput) -> tuple[str, str] | None:
    """The rounding and relative errors in words where they are not finite numbers (an
    overflow's error is unbounded; NaN has none), else None."""
    value, stored = out.value, out.stored
    if math.isnan(value):
        return "not defined (NaN)", "not defined (NaN)"
    if math.isinf(value):
        if stored == value:
            return "none (inf kept)", "none (inf kept)"
        sign = "" if stored > value else MINUS
        return f"{sign}inf (no inf here)", "not defined"
    if math.isnan(stored):
        return "overflow to NaN", "overflow to NaN"
    if math.isinf(stored):
        sign = "" if stored > 0 else MINUS
        return f"{sign}inf (overflow)", "inf (overflow)"
    return None


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

    def _error_words(self) -> dict[str, Readout]:
        words = error_words(self.out)
        if words is None:
            return {}
        return {"error": Readout("Rounding error", None, shown=words[0]),
                "relative": Readout("Relative error", None, shown=words[1])}

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
            **self._error_words(),
            "ulp": number_readout("ulp here", out.ulp, power_text),
            "max": number_readout("Largest number", f.max),
            "min_normal": number_readout("Smallest normal", f.min_normal, power_text),
            "min_subnormal": number_readout("Smallest subnormal", f.min_subnormal, power_text),
            "eps": number_readout("Machine epsilon", f.eps, power_text),
        }
