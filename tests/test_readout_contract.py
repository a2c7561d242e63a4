"""Catalog-wide: every readout is typed for machines and its text matches its numbers.

`--readout` hands a figure's readouts to scripts, so a readout's `value` is a number, a
bool or None, never text; the text the window shows is made from it. Every figure is
checked at its defaults, with all its parameters at their minimum and at their maximum,
with each parameter alone at either end, at seeded random settings, and (animated
figures) a few steps in and at the end. Every number written in a readout's text must
be its `value` or its `total`, rounded as shown.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Iterator

import numpy as np
import pytest

from gpuviz import catalog
from gpuviz.core.model import (
    HIDDEN,
    AnimatedModel,
    FigureModel,
    Parameter,
    PredictFirstModel,
    Readout,
    singular,
)

FIGURES = catalog.all_figures()
IDS = [spec.number for spec in FIGURES]
RANDOM_SETTINGS = 3
# Readouts whose text carries numbers beside their value, and why.
TEXT_WITH_OTHER_NUMBERS = {
    ("1.4", "latency"): "one latency in ns (the value) and in the cycles it was measured in",
    ("3.2", "output_tile"): "a tile's place, (row, column): a name made of two indices",
    ("4.2", "phase"): "a phase's name numbers the passes of standard attention",
    ("5.2", "stall"): "where the naive sum stops: after how many terms, at what sum (the "
                      "value), or not within the most terms shown",
    ("11.5", "shape"): "a matrix's shape, k × m: a name made of two sizes",
}

SUPERSCRIPT_DIGITS = "⁰¹²³⁴⁵⁶⁷⁸⁹"
FROM_SUPERSCRIPT = str.maketrans("⁻" + SUPERSCRIPT_DIGITS, "-0123456789")
_SUP = f"[⁻{SUPERSCRIPT_DIGITS}]+"
# A number as the figures write it: 4,096, −0.0039, 3.39×10³⁸, 2⁻⁷, 10⁻⁸, 0x3F80, ∞, cut
# short 3.4028…×10³⁸ (a % or a unit may follow). Digits inside a name (BF16, E4M3, L2,
# H100) are no number.
NUMBER = re.compile(
    rf"(?<![\w.])(?P<minus>[−-])?(?:"
    rf"(?P<hex>0x[0-9A-Fa-f]+)"
    rf"|(?P<base>\d+)(?P<power>{_SUP})"
    rf"|(?P<mantissa>(?:\d{{1,3}}(?:,\d{{3}})+|\d+)(?:\.(?P<places>\d+))?)(?P<cut>…)?"
    rf"(?:×10(?P<exp>{_SUP}))?"
    rf"|(?P<inf>∞))(?![\w])")


def numbers_in(text: str) -> list[tuple[float, float]]:
    """Each number written in `text`, with how far the exact value may be from it: half
    a unit of its last digit shown (rounded), or a whole one (cut short, …)."""
    found = []
    for m in NUMBER.finditer(text):
        sign = -1.0 if m["minus"] else 1.0
        if m["hex"]:
            found.append((sign * int(m["hex"], 16), 0.0))
        elif m["power"]:
            number = int(m["base"]) ** float(m["power"].translate(FROM_SUPERSCRIPT))
            found.append((sign * number, 1e-12 * number))
        elif m["inf"]:
            found.append((sign * math.inf, 0.0))
        else:
            scale = 10.0 ** int(m["exp"].translate(FROM_SUPERSCRIPT)) if m["exp"] else 1.0
            places = len(m["places"] or "")
            number = float(m["mantissa"].replace(",", "")) * scale
            last_digit = 10.0 ** -places * scale
            found.append((sign * number, last_digit if m["cut"] else 0.5 * last_digit))
    return found


def test_numbers_are_read_as_written():
    assert numbers_in("1 of 64") == [(1, 0.5), (64, 0.5)]
    assert numbers_in("4,096 × −0.25 ms, 12%") == [(4096, 0.5), (-0.25, 0.005), (12, 0.5)]
    assert numbers_in("3.39×10³⁸")[0] == (pytest.approx(3.39e38), pytest.approx(0.005e38))
    assert numbers_in("2⁻⁷ = 10⁻⁸?")[0][0] == 2 ** -7 and numbers_in("10⁻⁸")[0][0] == 1e-8
    assert numbers_in("0x3F80, −∞") == [(0x3F80, 0.0), (-math.inf, 0.0)]
    assert numbers_in("3.40…×10³⁸")[0] == (pytest.approx(3.4e38), pytest.approx(0.01e38))
    assert numbers_in("BF16 in, FP32 sum on an H100, L2, E4M3") == []


def _ends(param: Parameter) -> tuple[object, object]:
    if param.kind is bool:
        return False, True
    if param.kind is str:
        values = param.choice_values()
        return values[0], values[-1]
    return param.minimum, param.maximum


def _random_value(param: Parameter, rng: random.Random) -> object:
    if param.kind is bool:
        return rng.random() < 0.5
    if param.kind is str:
        return rng.choice(param.choice_values())
    if param.log and param.minimum > 0:
        return math.exp(rng.uniform(math.log(param.minimum), math.log(param.maximum)))
    return rng.uniform(param.minimum, param.maximum)


def settings(model: FigureModel) -> Iterator[tuple[str, dict[str, object]]]:
    params = model.parameters()
    yield "defaults", {}
    yield "all at minimum", {name: _ends(p)[0] for name, p in params.items()}
    yield "all at maximum", {name: _ends(p)[1] for name, p in params.items()}
    for name, param in params.items():
        low, high = _ends(param)
        yield f"{name}={low}", {name: low}
        yield f"{name}={high}", {name: high}
    for seed in range(RANDOM_SETTINGS):
        rng = random.Random(seed)
        yield f"random {seed}", {name: _random_value(p, rng) for name, p in params.items()}


def states(spec: catalog.FigureSpec) -> Iterator[tuple[str, FigureModel]]:
    """The figure's model at every setting (a fresh one each), and an animated figure
    also three steps in and at the end."""
    for name, values in settings(spec.make_model()):
        model = spec.make_model()
        with model.batch():
            for key, value in values.items():
                model.set(key, value)
        yield name, model
        if isinstance(model, AnimatedModel):
            for _ in range(3):
                model.step_once()
            yield f"{name}, 3 steps", model
            model.advance_by(1e12)
            yield f"{name}, at the end", model


def _is_number(x: object) -> bool:
    return isinstance(x, int | float | np.integer | np.floating) and not isinstance(x, bool)


def _shows(number: float, half_ulp: float, exact: object) -> bool:
    if not _is_number(exact) or not math.isfinite(exact):
        return False
    return abs(float(exact) - number) <= half_ulp * (1 + 1e-9) + 1e-12 * abs(number)


def written_number(readout: Readout) -> str:
    """The readout's text without its unit: a unit may hold a number ("of n/4 each")."""
    text = readout.text
    for unit in (readout.unit, singular(readout.unit)):
        if unit and text.endswith(unit):
            return text.removesuffix(unit)
    return text


def problems(readout: Readout, other_numbers: bool = False) -> list[str]:
    value, total = readout.value, readout.total
    found = []
    if not (value is None or isinstance(value, bool | np.bool_) or _is_number(value)):
        found.append(f"value {value!r} is no number, bool or None")
    elif _is_number(value) and not math.isfinite(value):
        found.append(f"value {value!r}: infinity and not-a-number are None with a text")
    if total is not None and not (_is_number(total) and math.isfinite(total)):
        found.append(f"total {total!r} is no finite number")
    text = readout.text
    if not text:
        found.append("empty text")
    if readout.hidden:
        return found + ([] if text == HIDDEN else [f"hidden, but shows {text!r}"])
    if other_numbers:
        return found
    for number, half_ulp in numbers_in(written_number(readout)):
        if math.isinf(number):
            if value is not None:
                found.append(f"text {text!r} shows ∞ but the value is {value!r}")
        elif not (_shows(number, half_ulp, value) or _shows(number, half_ulp, total)):
            found.append(f"text {text!r} shows {number:g}, which is not the value "
                         f"{value!r}" + (f" nor the total {total!r}" if total is not None
                                         else ""))
    return found


def test_every_declared_exception_is_a_readout():
    for number, key in TEXT_WITH_OTHER_NUMBERS:
        assert key in catalog.figure(number).make_model().readouts()


@pytest.mark.parametrize("spec", FIGURES, ids=IDS)
def test_readouts_are_typed_and_their_text_shows_their_numbers(spec):
    failures = []
    for setting, model in states(spec):
        for key, readout in model.readouts().items():
            other_numbers = (spec.number, key) in TEXT_WITH_OTHER_NUMBERS
            failures += [f"{spec.number} {key} ({setting}): {p}"
                         for p in problems(readout, other_numbers)]
    assert not failures, "\n".join(dict.fromkeys(failures))


def test_readout_shapes_and_their_json():
    assert Readout("Step", 1, total=4096).json() == {
        "value": 1, "unit": "", "text": "1 of 4,096", "total": 4096}
    assert Readout("Level", name="HBM").json() == {"unit": "", "text": "HBM"}
    assert Readout("Ratio", None, "×", shown="—").json() == {
        "value": None, "unit": "×", "text": "—"}
    assert Readout("Fits", np.bool_(False)).json() == {"value": False, "unit": "",
                                                      "text": "no"}
    hidden = Readout("B*", np.float64(345.1), "tokens", hidden=True)
    assert hidden.text == HIDDEN
    assert hidden.json() == {"value": 345.1, "unit": "tokens", "text": "345 tokens",
                             "hidden": True}
    for wrong in ({"value": "80 GB"}, {"value": None}, {"value": 1, "name": "x"}):
        with pytest.raises(TypeError):
            Readout("Size", **wrong)


class Guess(PredictFirstModel):
    guess = Parameter(10, label="Guess", minimum=1, maximum=100)
    size = Parameter(1, label="Size", minimum=1, maximum=9)
    other = Parameter(1, label="Other", minimum=1, maximum=9)
    guess_parameter = "guess"
    hidden_again_by = ("size",)

    def compute(self) -> float:
        return 4.0 * self.size

    def readouts(self) -> dict[str, Readout]:
        return {"answer": self.answer(Readout("Answer", self.out))}


def test_predict_first_hides_the_answer_until_revealed_and_again_on_a_new_guess():
    model = Guess()
    assert model.readouts()["answer"].hidden and model.readouts()["answer"].value == 4.0
    model.revealed = True
    assert model.readouts()["answer"].text == "4"
    model.other = 5
    assert model.revealed
    for name, value in (("guess", 12), ("size", 2)):
        model.revealed = True
        model.set(name, value)
        assert not model.revealed and model.readouts()["answer"].text == HIDDEN
    assert Guess.how_close(11, 10) == "spot on"
    assert Guess.how_close(30, 10) == "3.0× too high"
    assert Guess.how_close(2, 10) == "5.0× too low"
    assert Guess.how_close(50_000_000, 10) == "5,000,000.0× too high"


@pytest.mark.parametrize("spec", [s for s in FIGURES if s.animated], ids=lambda s: s.number)
def test_an_animated_figure_has_the_signal_of_its_animation(spec):
    # Qt builds a class's signals from its first base: PredictFirstModel first loses them.
    model = spec.make_model()
    assert model.metaObject().indexOfSignal("playing_changed(bool)") >= 0
