"""Parameters, figure models and readouts: the Qt-widget-free half of every figure.

A figure model declares its inputs as `Parameter` descriptors. Setting one validates
and clamps it, does nothing when the value is unchanged, drops the cached outputs and
emits `changed`. Outputs are computed on first read by the model's pure `compute()`.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal

if TYPE_CHECKING:
    from gpuviz.core.trace import Trace

Choices = Sequence[tuple[str, str]] | Callable[[], Sequence[tuple[str, str]]]


class Parameter:
    """A typed model input with a default, a range or a list of choices, a unit and a label.

    The type comes from the default: bool, int, float, or str (then `choices` is required,
    as (value, label) pairs or a callable returning them, for choices read from data).
    `log=True` asks controls for a logarithmic scale. A text parameter with `free_text`
    (a function that raises ValueError for text it refuses) also takes any typed text that
    function accepts; its choices are then examples.
    """

    def __init__(
        self,
        default: Any,
        *,
        label: str,
        unit: str = "",
        minimum: float | None = None,
        maximum: float | None = None,
        step: float | None = None,
        choices: Choices | None = None,
        log: bool = False,
        help: str = "",
        free_text: Callable[[str], object] | None = None,
    ) -> None:
        self.default = default
        self.label = label
        self.unit = unit
        self.minimum = minimum
        self.maximum = maximum
        self.step = step
        self._choices = choices
        self.log = log
        self.help = help
        self.free_text = free_text
        self.name = ""
        if isinstance(default, bool):
            self.kind = bool
        elif isinstance(default, int):
            self.kind = int
        elif isinstance(default, float):
            self.kind = float
        elif isinstance(default, str):
            if choices is None:
                raise TypeError(f"{label}: a text parameter needs choices")
            self.kind = str
        else:
            raise TypeError(f"{label}: unsupported default {default!r}")
        if self.kind in (int, float) and (minimum is None or maximum is None):
            raise TypeError(f"{label}: a numeric parameter needs a minimum and a maximum")

    def __set_name__(self, owner: type, name: str) -> None:
        # A parameter called "batch" would hide FigureModel.batch(), and so on.
        for base in owner.__mro__[1:]:
            taken = vars(base).get(name)
            if taken is not None and not isinstance(taken, Parameter):
                raise TypeError(f"{owner.__name__}.{name}: the name is taken by "
                                f"{base.__name__}; choose another parameter name")
        self.name = name

    def __get__(self, instance: FigureModel | None, owner: type) -> Any:
        if instance is None:
            return self
        return instance.get(self.name)

    def __set__(self, instance: FigureModel, value: Any) -> None:
        instance.set(self.name, value)

    # --- choices -------------------------------------------------------------------------
    @property
    def choices(self) -> list[tuple[str, str]]:
        raw = self._choices() if callable(self._choices) else self._choices
        return list(raw or [])

    def choice_values(self) -> list[str]:
        return [value for value, _ in self.choices]

    def choice_label(self, value: str) -> str:
        return dict(self.choices).get(value, value)

    # --- validation ----------------------------------------------------------------------
    def coerce(self, value: Any) -> Any:
        """The nearest allowed value; raises ValueError only for a value of the wrong kind."""
        if self.kind is bool:
            if isinstance(value, str):
                return self._parse_bool(value)
            return bool(value)
        if self.kind is str:
            value = str(value)
            if value not in self.choice_values():
                if self.free_text is None:
                    raise ValueError(self.allowed())
                value = value.strip()
                self.free_text(value)  # raises ValueError with the reason
            return value
        number = float(value)
        if math.isnan(number):
            raise ValueError(self.allowed())
        number = min(max(number, self.minimum), self.maximum)
        if self.step:
            number = self.minimum + round((number - self.minimum) / self.step) * self.step
            number = min(number, self.maximum)
        if self.kind is int:
            return int(round(number))
        return float(number)

    def parse(self, text: str) -> Any:
        """Strict conversion of typed text (command line): out-of-range is an error."""
        if self.kind is bool:
            return self._parse_bool(text)
        if self.kind is str:
            if self.free_text is not None:
                return self.coerce(text)
            if text not in self.choice_values():
                raise ValueError(f"'{text}' is not a choice; {self.allowed()}")
            return text
        try:
            number = float(text)
        except ValueError:
            raise ValueError(f"'{text}' is not a number; {self.allowed()}") from None
        if self.kind is int and not number.is_integer():
            raise ValueError(f"'{text}' is not a whole number; {self.allowed()}")
        if not (self.minimum <= number <= self.maximum):
            raise ValueError(f"{text} is out of range; {self.allowed()}")
        if self.step and self.kind is int and (number - self.minimum) % self.step:
            raise ValueError(f"{text} is not on a step; {self.allowed()}")
        return self.coerce(number)

    def allowed(self) -> str:
        if self.kind is bool:
            return "allowed: true or false"
        if self.kind is str:
            if self.free_text is not None:
                return "allowed: " + (self.free_text.__doc__ or "text").strip().split("\n")[0]
            return "allowed: " + ", ".join(self.choice_values())
        kind = "a whole number" if self.kind is int else "a number"
        step = f" in steps of {_plain(self.step)}" if self.step and self.step != 1 else ""
        top = with_unit(_plain(self.maximum), self.unit)
        return f"allowed: {kind} from {_plain(self.minimum)} to {top}{step}"

    def _parse_bool(self, text: str) -> bool:
        lowered = text.strip().lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"'{text}' is not true or false")


def _plain(number: float) -> str:
    return format_g(number) if abs(number) < 1e6 else format_value(round(number))


HIDDEN = "press Reveal"  # the text of a predict-first answer not revealed yet


@dataclass(frozen=True)
class Readout:
    """One thing a figure shows, typed for machines and written for people.

    `value` is a number or a bool, never text (`--readout` hands it to scripts as it is);
    the text is formatted from it by `format_value` with `unit`, `digits` significant
    digits or `decimals` places. A count out of a total has both numbers (`value` 1,
    `total` 64: "1 of 64"). A name (a level, a phase, a winner) is `name` text with no
    value. `shown` replaces the formatted text where the figure writes the number
    otherwise ("2⁻⁷", "0x3F80", "yes, default"), or says why there is none (infinity, not
    defined: value None); tests/test_readout_contract.py holds every number in it to
    `value` or `total`. `hidden` marks a predict-first answer the window still hides."""

    label: str
    value: float | int | bool | None = None
    unit: str = ""
    digits: int = 3
    decimals: int | None = None
    total: float | int | None = None
    shown: str = ""
    name: str = ""
    hidden: bool = False

    def __post_init__(self) -> None:
        for field in ("value", "total"):
            number = getattr(self, field)
            if hasattr(number, "item"):  # numpy's scalar: Python's (np.bool_ reads yes/no)
                object.__setattr__(self, field, number.item())
        if isinstance(self.value, str):
            raise TypeError(f"{self.label}: a readout's value is a number, a bool or None; "
                            f"give the text {self.value!r} as name= or shown=")
        if self.value is None and not (self.shown or self.name):
            raise TypeError(f"{self.label}: a readout without a value needs name= or shown=")
        if self.name and self.value is not None:
            raise TypeError(f"{self.label}: a name has no value")

    @property
    def text(self) -> str:
        """What the window shows."""
        return HIDDEN if self.hidden else self.revealed_text

    @property
    def revealed_text(self) -> str:
        """The text, a predict-first answer included (what `--readout` gives)."""
        if self.name or self.shown:
            return self.name or self.shown
        if self.total is not None:
            count = format_value(self.value, "", self.digits, self.decimals)
            return f"{count} of {format_value(self.total, self.unit, self.digits, self.decimals)}"
        return format_value(self.value, self.unit, self.digits, self.decimals)

    def json(self) -> dict[str, Any]:
        """The readout for machines: value (none for a name; null for infinity and what
        is not defined), unit, text, total when there is one, hidden when it is."""
        entry = {} if self.name else {"value": _json_number(self.value)}
        entry |= {"unit": self.unit, "text": self.revealed_text}
        if self.total is not None:
            entry["total"] = _json_number(self.total)
        if self.hidden:
            entry["hidden"] = True
        return entry


def _json_number(value: float | int | bool | None) -> float | int | bool | None:
    """A number for JSON, which has no infinity or NaN: those are None."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


SI_PREFIXES = ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
TIME_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))


def axis_time_unit(top_seconds: float) -> tuple[float, str]:
    """(seconds per unit, unit) for a time axis up to `top_seconds`: the largest time unit
    with the axis top at 1 or more, or the next larger one where the rounded-up top would
    reach 1,000 (its ticks would need a thousands separator)."""
    larger = TIME_UNITS[0]
    for factor, unit in TIME_UNITS:
        if top_seconds >= factor:
            return larger if nice_ceiling(top_seconds / factor) >= 1000 else (factor, unit)
        larger = (factor, unit)
    return TIME_UNITS[-1]


def si_readout(label: str, value: float, unit: str) -> Readout:
    """A readout in the SI multiple that keeps 1 to 999 before the unit (GFLOP, MB)."""
    value = float(value)
    for factor, prefix in SI_PREFIXES:
        if abs(value) >= factor:
            return Readout(label, value / factor, prefix + unit)
    return Readout(label, value, unit)


def time_readout(label: str, seconds: float, digits: int = 3) -> Readout:
    """A duration in s, ms, µs or ns, whichever keeps 1 to 999 before the unit; none at
    all in seconds ("0 s": "0 ns" reads as a measured sliver beside times in µs)."""
    seconds = float(seconds)
    if seconds == 0:
        return Readout(label, 0.0, "s", digits)
    for factor, unit in TIME_UNITS:
        if abs(seconds) >= factor:
            return Readout(label, seconds / factor, unit, digits)
    return Readout(label, seconds / 1e-9, "ns", digits)


def kept_digits(readout: Readout) -> Readout:
    """`readout` with its significant digits kept where they are zeros ("12.0 ms" beside
    "33.0 ms", "1.00 µs" beside "0.500 µs"): format_value drops them from a float that
    happens to be whole."""
    value = readout.value
    if not isinstance(value, float) or not value or not math.isfinite(value):
        return readout
    rounded = float(f"{value:.{max(readout.digits - 1, 0)}e}")  # 0.9996 has 1's places
    places = max(readout.digits - 1 - math.floor(math.log10(abs(rounded))), 0)
    return Readout(readout.label, value, readout.unit, decimals=places)


# Past a minute a time reads in minutes, hours or days ("17.0 days", not "1,465,287 s");
# below a nanosecond (one FLOP at a PFLOP/s) in ps or fs, as the plots' axes write it.
LONG_TIME_UNITS = ((86_400.0, "days"), (3_600.0, "h"), (60.0, "min"))
SHORT_TIME_UNITS = ((1e-12, "ps"), (1e-15, "fs"))


def long_time_unit(seconds: float) -> tuple[float, str] | None:
    """The (seconds per unit, unit) a duration of a minute or more is written in."""
    for factor, unit in LONG_TIME_UNITS:
        if seconds >= factor:
            return factor, unit
    return None


def duration_readout(label: str, seconds: float) -> Readout:
    """`time_readout` (ns to s) from a nanosecond to a minute, then minutes, hours or
    days; below a nanosecond picoseconds or femtoseconds."""
    seconds = float(seconds)
    unit = long_time_unit(seconds)
    if unit is not None:
        return Readout(label, seconds / unit[0], unit[1])
    if 0 < seconds < 1e-9:
        for factor, name in SHORT_TIME_UNITS:
            if seconds >= factor or factor == SHORT_TIME_UNITS[-1][0]:
                return Readout(label, seconds / factor, name)
    return time_readout(label, seconds)


def duration_text(seconds: float) -> str:
    """A duration as `duration_readout` writes it: "309 ms", "36.9 min", "17.0 days"."""
    return duration_readout("", seconds).text


def si_text(value: float, unit: str) -> str:
    """A number in the SI multiple that keeps 1 to 999 before the unit: "80 GB"."""
    return si_readout("", value, unit).text


def time_text(seconds: float, digits: int = 3) -> str:
    """A duration as its readout writes it: "309 ms", "4.20 µs"."""
    return time_readout("", seconds, digits).text


MINUS = "\u2212"  # the true minus sign: every number shown uses it, never a hyphen
_SUPERSCRIPTS = str.maketrans("-\u22120123456789", "⁻⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def superscript(exponent: int | str) -> str:
    """An integer as superscript digits (an exponent): -5 -> ⁻⁵."""
    return str(exponent).translate(_SUPERSCRIPTS)


def decimal_places(step: float) -> int:
    """Places after the point that a step needs: 0.05 -> 2, 0.5 -> 1, 2 -> 0."""
    text = format_g(abs(step), 12)
    return len(text.split(".")[1]) if "." in text else 0


def signed(text: str) -> str:
    """A number formatted by Python with its minus signs made true minus signs."""
    return text.replace("-", MINUS)


def _scientific(mantissa: str, exponent: int) -> str:
    """mantissa × 10ⁿ, the way the figures write a very large or small number."""
    if mantissa.lstrip("-") == "1":  # 10⁻⁸, not 1×10⁻⁸
        return signed(mantissa[:-1]) + "10" + superscript(exponent)
    return f"{signed(mantissa)}×10{superscript(exponent)}"


FINE_STEPS = (1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0)  # for bars: the longest fills the axis


def nice_ceiling(value: float, steps: tuple[float, ...] = (1.0, 2.0, 5.0)) -> float:
    """The smallest 1, 2 or 5 (or one of `steps`) times a power of ten at or above value
    (axis limits that move in steps, so the axis does not jitter while a slider moves)."""
    if not value > 0 or not math.isfinite(value):
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    for step in (*steps, 10.0):
        if step * power >= value * (1 - 1e-12):
            return step * power
    return 10.0 * power


def format_g(value: float, digits: int = 6) -> str:
    """A number as Python's `g` format writes it (at most `digits` significant digits,
    no trailing zeros), but with a true minus sign and ×10ⁿ instead of e+NN."""
    if not math.isfinite(value):
        return format_value(value)
    text = f"{value:.{digits}g}"
    if "e" in text:
        mantissa, exponent = text.split("e")
        return _scientific(mantissa, int(exponent))
    return signed(text)


def format_value(value: float | int | str, unit: str = "", digits: int = 3,
                 decimals: int | None = None) -> str:
    """Human text for a number: thousands separators for integers, `digits` significant
    digits otherwise (×10ⁿ beyond 10⁷ and below 10⁻³), a true minus sign, and the unit
    after a space (singular after exactly 1: "1 warp", "2 warps"); a ratio (a unit that
    starts with ×: "×", "× d") has two decimals from 0.1 to 100, and `digits` significant
    ones below 0.1 (1/64 reads 0.0156×, not 0.02×). `decimals` fixes the places after
    the point instead (a slider in steps of 0.05 reads 0.50, never 0.5000)."""
    if (unit.startswith("×") and decimals is None and isinstance(value, float)
            and not 0 < abs(value) < 0.1):
        decimals = 2 if abs(value) < 100 else 0  # every ratio alike: 1.00×, 1.43×, 13.86×
    if isinstance(value, str):
        body = value
    elif isinstance(value, bool):
        body = "yes" if value else "no"
    elif decimals is not None and math.isfinite(value):
        body = signed(f"{value:,.{decimals}f}")
    elif isinstance(value, int) or (isinstance(value, float) and value.is_integer()
                                     and abs(value) < 1e15):
        body = signed(f"{int(value):,}")
    elif not math.isfinite(value):
        body = "∞" if value > 0 else (MINUS + "∞" if value < 0 else "NaN")
    elif value != 0 and (abs(value) >= 1e7 or abs(value) < 1e-3):
        mantissa, exponent = f"{value:.{max(digits - 1, 0)}e}".split("e")
        body = _scientific(mantissa, int(exponent))
    else:
        # Places from the magnitude after rounding: 0.9996 is "1.00", not "1.000".
        rounded = float(f"{value:.{max(digits - 1, 0)}e}")
        decimals = max(digits - 1 - int(math.floor(math.log10(abs(rounded)))), 0) if value else 0
        body = signed(f"{value:,.{decimals}f}")
    return with_unit(body, singular(unit) if body == "1" else unit)


def with_unit(number: str, unit: str) -> str:
    """A written number and its unit, as every number is written: after a space (10 σ),
    but % and × right after the number (12%, 92.3% of time, 64×)."""
    if not unit:
        return number
    tight = unit in ("%", "×") or unit.startswith("% ")
    return f"{number}{'' if tight else ' '}{unit}"


def singular(word: str) -> str:
    """The singular of a plural count word ("warps" -> "warp", "GPUs" -> "GPU",
    "batches" -> "batch"); a unit that is no plural ("ms", "GB/s", "%") stays as it is."""
    if len(word) < 3 or not word.endswith("s") or word.endswith(("ss", "us")) or not all(
            c.isalpha() or c == "-" for c in word):
        return word
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "xes", "sses")):
        return word[:-2]
    return word[:-1]


def plural(count: float, word: str, many: str = "") -> str:
    """A count and its word, singular after exactly 1: plural(1, "wave") -> "1 wave",
    plural(2, "wave") -> "2 waves", plural(3, "batch", "batches") -> "3 batches"."""
    return f"{format_value(count)} {word if count == 1 else many or word + 's'}"


# Each model class's parameters, found once (FigureModel.parameters).
_PARAMETERS: dict[type, dict[str, Parameter]] = {}


class FigureModel(QObject):
    """State and physics of one figure. Subclasses declare Parameters and implement
    `compute()` (pure, returns a frozen dataclass) and `readouts()`."""

    changed = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._values = {name: p.default for name, p in self.parameters().items()}
        self._outputs: Any = None
        self._batch_depth = 0
        self._pending_change = False

    @classmethod
    def parameters(cls) -> dict[str, Parameter]:
        found = _PARAMETERS.get(cls)
        if found is None:  # walking the classes took 0.1 ms, on every set()
            found = _PARAMETERS[cls] = {}
            for klass in reversed(cls.__mro__):
                for name, attr in vars(klass).items():
                    if isinstance(attr, Parameter):
                        found[name] = attr
        return dict(found)

    @classmethod
    def parameter(cls, name: str) -> Parameter:
        try:
            return cls.parameters()[name]
        except KeyError:
            known = ", ".join(cls.parameters())
            raise KeyError(f"unknown parameter '{name}'; known: {known}") from None

    def get(self, name: str) -> Any:
        return self._values[name]

    def values(self) -> dict[str, Any]:
        return dict(self._values)

    def set(self, name: str, value: Any) -> bool:
        """Set one parameter (clamped). Returns True when the value changed."""
        new = self.parameter(name).coerce(value)
        if new == self._values[name]:
            return False
        self._values[name] = new
        self.parameter_changed(name)
        self._notify()
        return True

    def parameter_changed(self, name: str) -> None:
        """Hook for subclasses that keep derived state (a stepper rewinds, for example)."""

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Set several parameters and emit `changed` once."""
        self._batch_depth += 1
        try:
            yield
        finally:
            self._batch_depth -= 1
            if self._batch_depth == 0 and self._pending_change:
                self._pending_change = False
                self.changed.emit()

    def reset(self) -> None:
        with self.batch():
            for name, param in self.parameters().items():
                self.set(name, param.default)
            self.reset_state()
            self._notify()

    def reset_state(self) -> None:
        """Hook: restore state that is not a parameter (time, step, random draws)."""

    def _notify(self) -> None:
        self._outputs = None
        if self._batch_depth:
            self._pending_change = True
        else:
            self.changed.emit()

    @property
    def out(self) -> Any:
        if self._outputs is None:
            self._outputs = self.compute()
        return self._outputs

    def compute(self) -> Any:
        raise NotImplementedError

    def readouts(self) -> dict[str, Readout]:
        raise NotImplementedError

    def trace(self) -> Trace | None:
        """The figure's timeline as a schedule with its lanes (a figure drawn with the
        timeline helper overrides this): what File > Export > Trace and `--trace` save."""
        return None


class PredictFirstModel(FigureModel):
    """A figure whose answer the learner predicts before seeing it.

    The subclass declares its guess as a parameter and names it in `guess_parameter`;
    `revealed` is set by the Reveal button (`PredictReveal`) and cleared when the guess,
    or a parameter in `hidden_again_by`, changes. A readout that gives the answer away
    goes through `answer(readout)`: the window shows "press Reveal" until it is revealed,
    `--readout` gives the value with "hidden": true. `answer_text()` is the sentence shown
    beside the guess once revealed. An animated one names its animation class first
    (`class M(AnimatedModel, PredictFirstModel)`): Qt takes the signals of the first base."""

    guess_parameter = ""
    hidden_again_by: tuple[str, ...] = ()

    revealed = Parameter(False, label="Answer revealed",
                         help="Set by the Reveal button; a new guess hides the answer")

    def parameter_changed(self, name: str) -> None:
        if name == self.guess_parameter or name in self.hidden_again_by:
            self.set("revealed", False)
        super().parameter_changed(name)

    def answer(self, readout: Readout) -> Readout:
        return readout if self.revealed else replace(readout, hidden=True)

    def answer_text(self) -> str:
        raise NotImplementedError

    @staticmethod
    def how_close(guess: float, answer: float) -> str:
        """A guess against the answer, as a factor: "spot on" within 25%."""
        ratio = guess / answer
        if 0.8 <= ratio <= 1.25:
            return "spot on"
        return f"{ratio:,.1f}× too high" if ratio > 1 else f"{1 / ratio:,.1f}× too low"

    @staticmethod
    def how_close_in_points(guess: float, answer: float) -> str:
        """A guessed percentage against the answer, in percentage points (a share can be
        0, where a factor means nothing): "spot on" within 5 points."""
        points = guess - answer
        if abs(points) < 5.0:
            return "spot on"
        return f"{abs(points):.0f} points too {'high' if points > 0 else 'low'}"


END = "end"  # `step=end`: the last step of an animation, however many it has
UNCOUNTED_STEP_LIMIT = 1000  # the most presses of Next `go_to_step` makes when uncounted
MARK_TOLERANCE = 1e-9  # marks closer than this share of a timeline are one stop


class AnimatedModel(FigureModel):
    """A figure that moves with time: Play/Pause, Step, Rewind and a speed factor.

    Subclasses implement `advance_by(dt)` (seconds of figure time; return False when the
    animation reached its end) and `step_once()`; `reset_state()` rewinds.

    Any animated figure opens at a step (`--set step=N`, `step=end`, a playlist's
    `6.3 step=end`): `steps` counts the presses of Next (Step) from a rewound start to
    the end, `current_step` those that lead to where it is, and `go_to_step(n)` goes
    there. A subclass gives `steps` and `current_step`; `place_at_step(n)` rewinds and
    presses Next n times unless the subclass jumps there directly. A figure that cannot
    count its steps in advance (a simulation that runs until it stops) gives None as
    `steps`: step=N then presses Next N times, and step=end until it finishes, at most
    UNCOUNTED_STEP_LIMIT times either way.
    """

    playing_changed = Signal(bool)

    speed = Parameter(1.0, label="Speed", unit="×", minimum=0.25, maximum=4.0, step=0.25,
                      help="How fast Play runs")

    def __init__(self, parent: QObject | None = None) -> None:
        self._playing = False
        super().__init__(parent)

    @property
    def playing(self) -> bool:
        return self._playing

    def set_playing(self, playing: bool) -> None:
        if playing and self.finished:
            self.rewind()
        if playing != self._playing:
            self._playing = playing
            self.playing_changed.emit(playing)

    def toggle_playing(self) -> None:
        self.set_playing(not self._playing)

    def advance(self, dt: float) -> None:
        """Called by the app clock with wall seconds since the last frame."""
        if not self._playing:
            return
        if not self.advance_by(dt * self.speed):
            self.set_playing(False)
        self._notify()

    def step(self) -> None:
        self.set_playing(False)
        self.step_once()
        self._notify()

    def rewind(self) -> None:
        self.reset_state()
        self._notify()

    def reset(self) -> None:
        self.set_playing(False)
        super().reset()

    @property
    def finished(self) -> bool:
        return False

    def advance_by(self, dt: float) -> bool:
        raise NotImplementedError

    def step_once(self) -> None:
        raise NotImplementedError

    # --- opening at a step ---------------------------------------------------------------
    @property
    def steps(self) -> int | None:
        """Presses of Next from a rewound start to the end (None: not known in advance)."""
        raise NotImplementedError

    @property
    def current_step(self) -> int:
        """Presses of Next from a rewound start that lead here (after Play: those passed)."""
        raise NotImplementedError

    def go_to_step(self, step: int | str) -> None:
        """Pause where `step` presses of Next from a rewound start lead; END (or a number
        past the last step: the figure may have fewer steps than when it was checked)
        is the end."""
        steps = self.steps
        last = UNCOUNTED_STEP_LIMIT if steps is None else steps
        self.set_playing(False)
        with self.batch():
            self.place_at_step(last if step == END else max(0, min(int(step), last)))
            self._notify()

    def place_at_step(self, n: int) -> None:
        """Go to step n (0 to `steps`): rewind and press Next n times, stopping at the end.
        A subclass that knows where its steps land jumps there instead."""
        self.rewind()
        for _ in range(n):
            if self.finished:
                break
            self.step_once()

    def finish(self) -> None:
        """Jump to the end."""
        self.go_to_step(END)

    def parse_step(self, text: str) -> int | str:
        """Typed `step=` text checked against the figure as it is set: a whole number from
        0 to `steps`, or END; ValueError saying what is allowed otherwise."""
        last = self.steps
        allowed = (f"allowed: a whole number from 0 to {format_value(last)}, or {END}"
                   if last is not None else
                   f"allowed: a whole number from 0 to {format_value(UNCOUNTED_STEP_LIMIT)}"
                   f" (presses of Next; this figure cannot count its steps), or {END}")
        word = text.strip().lower()
        if word == END:
            return END
        try:
            number = int(word)
        except ValueError:
            raise ValueError(f"'{text}' is not a step; {allowed}") from None
        if not 0 <= number <= (UNCOUNTED_STEP_LIMIT if last is None else last):
            raise ValueError(f"{text} is out of range; {allowed}")
        return number


class SteppedModel(AnimatedModel):
    """An animation made of whole steps (a block, a tile, a product): Step adds one, Play
    adds one every `step_seconds` of figure time, a huge dt jumps to the end. Subclasses
    give `total_steps` and read `steps_done`; a rewound figure shows `first_step` of them.
    Changing a parameter other than the speed (or a predict-first guess or Reveal) rewinds
    (override `parameter_changed` to narrow that)."""

    step_seconds = 1.0
    first_step = 0

    def __init__(self, parent: QObject | None = None) -> None:
        self._step = 0
        self._t = 0.0
        super().__init__(parent)
        self._place(self.first_step)

    @property
    def total_steps(self) -> int:
        raise NotImplementedError

    @property
    def steps_done(self) -> int:
        return min(self._step, self.total_steps)

    @property
    def steps(self) -> int:
        return max(self.total_steps - self.first_step, 0)

    @property
    def current_step(self) -> int:
        return max(self.steps_done - self.first_step, 0)

    @property
    def finished(self) -> bool:
        return self._step >= self.total_steps

    @property
    def step_progress(self) -> float:
        """How far Play has gone into the next step (0 to 1): views move things that are
        in flight with it. 0 after Step, Rewind and at the end."""
        if self.finished:
            return 0.0
        return min(max(self._t / self.step_seconds - self._step, 0.0), 1.0)

    def parameter_changed(self, name: str) -> None:
        # The speed, and a predict-first figure's guess and Reveal, leave the animation
        # where it is: the learner guesses, reveals, and watches on.
        if name not in ("speed", "revealed", getattr(self, "guess_parameter", "")):
            self.reset_state()
        super().parameter_changed(name)

    def reset_state(self) -> None:
        self._place(self.first_step)

    def advance_by(self, dt: float) -> bool:
        total, per = self.total_steps, self.step_seconds
        self._t = min(total * per, self._t + max(0.0, dt))
        self._step = min(total, int(self._t / per + 1e-9))
        self._outputs = None
        return self._step < total

    def step_once(self) -> None:
        self._place(min(self.total_steps, self._step + 1))

    def place_at_step(self, n: int) -> None:
        self._place(min(self.first_step + n, self.total_steps))

    def _place(self, step: int) -> None:
        self._step = step
        # Step 0 needs no step_seconds, which some figures compute from their outputs.
        self._t = step * self.step_seconds if step else 0.0
        self._outputs = None


@dataclass(frozen=True)
class Stops:
    """Where Next stops on a timeline from 0 to `end`: each distinct mark inside it in
    time order, then the end (marks closer than MARK_TOLERANCE of the timeline to each
    other, to 0 or to the end are one stop: rounding makes 0.033 and 0.033000000000000015)."""

    positions: tuple[float, ...]

    @classmethod
    def of(cls, marks: Iterable[float], end: float) -> Stops:
        tolerance = MARK_TOLERANCE * end
        kept: list[float] = []
        for mark in sorted(float(m) for m in marks):
            if (kept[-1] if kept else 0.0) + tolerance < mark < end - tolerance:
                kept.append(mark)
        return cls((*kept, float(end)))

    def __len__(self) -> int:
        return len(self.positions)

    def passed(self, t: float) -> int:
        """How many stops lie at or before time t."""
        return bisect.bisect_right(self.positions, t + MARK_TOLERANCE * self.positions[-1])

    def at(self, n: int) -> float:
        """The time step n leads to: 0 for none, the end for all."""
        return self.positions[min(n, len(self)) - 1] if n > 0 else 0.0


class PlayheadModel(AnimatedModel):
    """An animation that draws a fixed timeline up to a moving playhead: Play sweeps it
    from 0 to `horizon` in `play_seconds` of figure time, Step jumps to the next of
    `step_marks()`, Rewind goes back to 0. It opens with the whole timeline drawn.
    Subclasses give `horizon` (in the timeline's unit) and `step_marks()`; step n is the
    n-th mark (`Stops`)."""

    play_seconds = 8.0

    def __init__(self, parent: QObject | None = None) -> None:
        self._progress = 1.0
        super().__init__(parent)

    @property
    def horizon(self) -> float:
        raise NotImplementedError

    def step_marks(self) -> Sequence[float]:
        raise NotImplementedError

    @property
    def progress(self) -> float:
        """The playhead as a share of the horizon, 0 to 1."""
        return self._progress

    @property
    def t(self) -> float:
        return self._progress * self.horizon

    def reset_state(self) -> None:
        self._progress = 1.0

    def rewind(self) -> None:
        self._progress = 0.0
        self._notify()

    @property
    def finished(self) -> bool:
        return self._progress >= 1.0

    def advance_by(self, dt: float) -> bool:
        self._progress = min(1.0, self._progress + max(0.0, float(dt)) / self.play_seconds)
        return self._progress < 1.0

    def stops(self) -> Stops:
        return Stops.of(self.step_marks(), self.horizon)

    @property
    def steps(self) -> int:
        return len(self.stops())

    @property
    def current_step(self) -> int:
        return self.steps if self.finished else self.stops().passed(self.t)

    def step_once(self) -> None:
        self.place_at_step(self.current_step + 1)

    def place_at_step(self, n: int) -> None:
        stops = self.stops()
        if n <= 0:
            self._progress = 0.0
        elif n >= len(stops):  # the end is 1 exactly, also for a horizon of 0
            self._progress = 1.0
        else:
            self._progress = stops.at(n) / self.horizon
