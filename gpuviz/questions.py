"""Worked questions: three to five per lesson, each answered by a number a figure computes.

A lesson's questions live in resources/questions/<lesson text's name>.toml, one
`[[question]]` table each:

    id = "occupancy"                  # unique in its lesson
    figure = "1.3"
    settings = ["threads_per_block=1024", "step=end"]   # as --set and playlists take them
    ask = "..."                       # Markdown, our own words
    readout = "occupancy"             # the figure's readout key that answers it
    unit = "%"                        # the unit the learner types (a multiple of the readout's)
    relative = 0.02                   # or absolute = 0.5 (in `unit`): the tolerance
    working = "... {occupancy} ..."   # Markdown; {key} is that readout's text at the settings,
                                      # or that parameter's value

A lesson's text ends with its questions (`lesson_section`: the question and its figure,
never the answer), each with links the window follows (`linked_question`): `question:KEY`
opens it in the Questions panel, `setup:KEY` opens its figure at its settings.

Nothing in a file is an answer: `answer()` builds the figure's model headless at the
settings and reads its typed readout, so a model change cannot leave a wrong answer or a
wrong working behind.
"""

from __future__ import annotations

import math
import re
import string
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuviz import catalog
from gpuviz.core.model import MINUS, format_g, format_value, singular, with_unit
from gpuviz.figure_settings import SettingsError, make_model, parse_settings
from gpuviz.paths import resource

FIELDS = {"id": str, "figure": str, "settings": list, "ask": str, "readout": str,
          "unit": str, "working": str}
# SI prefixes a typed unit may carry (the app writes µs, ms, MB, GB, TFLOP/s...).
PREFIXES = {"n": 1e-9, "µ": 1e-6, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
            "P": 1e15, "E": 1e18}
UNIT_SPELLINGS = {"us": "µs", "μs": "µs", "x": "×", "X": "×", "percent": "%"}
# The links of a lesson text's Questions section: open the question in the panel, or set
# its figure up.
ANSWER_LINK, SETUP_LINK = "question", "setup"
SECTION_HEADING, SECTION_ANCHOR = "Questions", "questions"
NUMBER = re.compile(r"^\s*([-+]?(?:\d[\d,]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(.*?)\s*$")


class QuestionError(ValueError):
    """A questions file (or question) we refuse: the file, the field and what is expected."""


@dataclass(frozen=True)
class Question:
    lesson: int
    id: str
    figure: str
    settings: tuple[str, ...]
    ask: str
    readout: str
    unit: str
    relative: float | None  # exactly one of relative and absolute
    absolute: float | None
    working: str  # a template: {key} is a readout's text or a parameter's value
    source: str  # the file, for messages

    @property
    def key(self) -> str:
        """Unique across lessons: how progress remembers it."""
        return f"{self.lesson}-{self.id}"

    def where_text(self) -> str:
        """Figure 1.3, its title; threads_per_block=1024, ..."""
        spec = catalog.figure(self.figure)
        return f"Figure {spec.number}, {spec.title}; {', '.join(self.settings) or 'its defaults'}"

    def link(self, kind: str) -> str:
        """The URL of a lesson text's link to this question (ANSWER_LINK or SETUP_LINK)."""
        return f"{kind}:{self.key}"

    def tolerance_text(self) -> str:
        if self.relative is not None:
            return f"within {format_g(self.relative * 100)}%"
        if self.unit == "%":  # an absolute tolerance of a share is in points
            return f"within ±{format_g(self.absolute)} percentage points"
        return f"within ±{with_unit(format_g(self.absolute), self.unit)}"


@dataclass(frozen=True)
class Answered:
    """A question with what the model computes at its settings."""

    question: Question
    value: float  # in question.unit
    working: str  # Markdown, numbers filled in

    @property
    def text(self) -> str:
        return format_value(self.value, self.question.unit)

    def check(self, typed: str) -> Verdict:
        """The learner's answer, with its unit (or none: then the question's unit)."""
        q = self.question
        try:
            number, unit = parse_quantity(typed)
        except QuestionError as error:
            return Verdict(False, str(error))
        try:
            given = convert(number, unit or q.unit, q.unit)
        except QuestionError:
            return Verdict(False, f"'{unit}' is not a unit of this answer: give it in "
                                  f"{q.unit} (or a multiple of it).")
        allowed = (abs(self.value) * q.relative if q.relative is not None else q.absolute)
        if abs(given - self.value) <= allowed * (1 + 1e-9):
            return Verdict(True, f"Right: {self.text}.")
        return Verdict(False, f"Not quite: {format_value(given, q.unit)} is not "
                              f"{q.tolerance_text()} of the answer. Try again, or open the "
                              "figure with Set it up.")

    def json(self) -> dict[str, Any]:
        q = self.question
        tolerance = ({"relative": q.relative} if q.relative is not None
                     else {"absolute": q.absolute, "unit": q.unit})
        return {"id": q.id, "figure": q.figure, "settings": list(q.settings),
                "readout": q.readout, "answer": self.value, "unit": q.unit,
                "text": self.text, "tolerance": tolerance}


@dataclass(frozen=True)
class Verdict:
    right: bool
    message: str


# --- units -------------------------------------------------------------------------------
def _plain_unit(unit: str) -> str:
    """The unit a number is in, without words after it ("% of time" is %)."""
    unit = unit.strip()
    unit = UNIT_SPELLINGS.get(unit, unit)
    if unit.startswith("% "):
        return "%"
    return unit


def _splits(unit: str) -> dict[str, float]:
    """The base units `unit` may be a multiple of, with the factor: "ms" -> {"ms": 1,
    "s": 1e-3}."""
    unit = _plain_unit(unit)
    found = {unit: 1.0, singular(unit): 1.0}
    for prefix, factor in PREFIXES.items():
        base = unit[len(prefix):]
        if unit.startswith(prefix) and base:
            found.setdefault(base, factor)
            found.setdefault(singular(base), factor)
    return found


def convert(value: float, unit: str, to: str) -> float:
    """`value` in `unit` as a number in `to`, if both are multiples of one unit (µs and
    ms, GB and MB, "% of time" and %, a count word in singular or plural)."""
    source, target = _splits(unit), _splits(to)
    for base, factor in source.items():
        if base in target:
            return value * factor / target[base]
    raise QuestionError(f"{unit} is not a multiple of {to}")


def parse_quantity(text: str) -> tuple[float, str]:
    """A typed answer: a number (commas between thousands, a true minus sign) and a unit
    after it, which may be empty: "4.9 ms", "186", "46.2 %", "2.8x"."""
    match = NUMBER.match(text.replace(MINUS, "-").replace("\u2009", " "))
    if not match:
        raise QuestionError(f"'{text.strip()}' does not start with a number; type it with "
                            "its unit, as in 4.9 ms")
    number = float(match.group(1).replace(",", ""))
    if not math.isfinite(number):
        raise QuestionError(f"'{text.strip()}' is not a finite number")
    return number, _plain_unit(match.group(2))


# --- files -------------------------------------------------------------------------------
def questions_path(lesson: catalog.Lesson) -> Path:
    return resource("questions", Path(lesson.text_file).with_suffix(".toml").name)


def lesson_numbers() -> list[int]:
    return [lesson.number for lesson in catalog.LESSONS]


def _lesson(number: int) -> catalog.Lesson:
    for lesson in catalog.LESSONS:
        if lesson.number == number:
            return lesson
    raise QuestionError(f"there is no lesson {number}; lessons: 1 to {len(catalog.LESSONS)}")


def load_questions(number: int) -> list[Question]:
    """Lesson `number`'s questions as written (no answers yet); a lesson without a file
    has none. A malformed file raises QuestionError naming the file, field and what is
    expected."""
    path = questions_path(_lesson(number))
    if not path.exists():
        return []
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise QuestionError(f"{path.name}: cannot be read as TOML ({error})") from None
    tables = data.get("question", [])
    if not isinstance(tables, list):
        raise QuestionError(f"{path.name}: 'question' must be [[question]] tables")
    questions = [_question(number, path.name, i, table) for i, table in enumerate(tables)]
    ids = [q.id for q in questions]
    if len(set(ids)) != len(ids):
        raise QuestionError(f"{path.name}: ids must be unique; repeated: "
                            f"{', '.join(sorted({i for i in ids if ids.count(i) > 1}))}")
    return questions


def _question(lesson: int, source: str, index: int, table: Any) -> Question:
    where = f"{source}, question {index + 1}"
    if not isinstance(table, dict):
        raise QuestionError(f"{where}: expected a table")
    for name, kind in FIELDS.items():
        if not isinstance(table.get(name), kind):
            raise QuestionError(f"{where}: field '{name}' must be a {kind.__name__}")
    where = f"{source}, question '{table['id']}'"
    if not all(isinstance(s, str) for s in table["settings"]):
        raise QuestionError(f"{where}: field 'settings' must be a list of NAME=VALUE texts")
    tolerances = [n for n in ("relative", "absolute") if n in table]
    if len(tolerances) != 1 or not isinstance(table[tolerances[0]], int | float) or not (
            table[tolerances[0]] > 0):
        raise QuestionError(f"{where}: give one tolerance, relative = 0.02 or absolute = 0.5 "
                            "(a positive number)")
    return Question(lesson, table["id"], table["figure"], tuple(table["settings"]),
                    table["ask"], table["readout"], table["unit"],
                    table.get("relative"), table.get("absolute"), table["working"], source)


def answer(question: Question) -> Answered:
    """Build the figure's model headless at the question's settings and read the answer
    and the working's numbers from its readouts."""
    where = f"{question.source}, question '{question.id}'"
    try:
        spec = catalog.figure(question.figure)
    except KeyError:
        raise QuestionError(f"{where}: figure '{question.figure}' is not built") from None
    try:
        model = make_model(spec, parse_settings(spec, list(question.settings)))
    except SettingsError as error:
        raise QuestionError(f"{where}: settings: {error}") from None
    readouts = model.readouts()
    readout = readouts.get(question.readout)
    if readout is None or isinstance(readout.value, bool) or not isinstance(
            readout.value, int | float) or not math.isfinite(readout.value):
        raise QuestionError(f"{where}: readout '{question.readout}' of figure "
                            f"{spec.number} is not a number here; numbers: "
                            f"{', '.join(k for k, r in readouts.items() if _numeric(r))}")
    try:  # a bare count (no unit) is in whatever the question calls it ("SMs")
        value = convert(float(readout.value), readout.unit or question.unit, question.unit)
    except QuestionError:
        raise QuestionError(f"{where}: unit '{question.unit}' is not a multiple of the "
                            f"readout's unit '{readout.unit}'") from None
    fields = {name: format_value(model.get(name), p.unit) if p.kind in (int, float)
              else str(model.get(name)) for name, p in model.parameters().items()}
    fields |= {key: r.revealed_text for key, r in readouts.items()}
    names = {f for _, f, _, _ in string.Formatter().parse(question.working) if f}
    missing = sorted(names - set(fields))
    if missing:
        raise QuestionError(f"{where}: working: figure {spec.number} has no readout or "
                            f"parameter {', '.join(missing)}")
    return Answered(question, value, question.working.format_map(fields))


def _numeric(readout: Any) -> bool:
    return isinstance(readout.value, int | float) and not isinstance(readout.value, bool)


def answered(number: int) -> list[Answered]:
    return [answer(q) for q in load_questions(number)]


def questions_json(number: int) -> list[dict[str, Any]]:
    """`gpuviz --questions L`: lesson L's questions with the answers the models compute."""
    return [{"ask": a.question.ask, **a.json()} for a in answered(number)]


# --- the end of a lesson's text ------------------------------------------------------------
def lesson_section(number: int) -> str:
    """The Markdown section that ends lesson `number`'s text: each question as asked, with
    its figure and settings (never the answer) and its two links."""
    try:
        found = load_questions(number)
    except QuestionError as error:
        return f"## {SECTION_HEADING}\n\nThe questions could not be loaded: {error}.\n"
    if not found:
        return ""
    parts = [f"## {SECTION_HEADING}\n",
             "Worked questions on this lesson, each answered by a number one of its figures "
             "computes. *Answer it* opens the question in the Questions panel (F2), where "
             "you type your answer with its unit and can see the working; *Set it up* opens "
             "the figure at the question's settings.\n"]
    for index, q in enumerate(found, 1):
        parts.append(f"**{index}.** {q.ask.strip()}\n\n*{q.where_text()}.* "
                     f"[Answer\u00a0it]({q.link(ANSWER_LINK)}) · "  # no line inside a link
                     f"[Set\u00a0it\u00a0up]({q.link(SETUP_LINK)})\n")
    return "\n".join(parts)


def linked_question(url: str) -> tuple[str, Question] | None:
    """What a lesson text's link names: (ANSWER_LINK or SETUP_LINK, the question), or None
    for any other link (or a question no longer in its file)."""
    kind, _, key = url.partition(":")
    lesson, _, name = key.partition("-")
    if kind not in (ANSWER_LINK, SETUP_LINK) or not lesson.isdigit():
        return None
    try:
        found = load_questions(int(lesson))
    except QuestionError:
        return None
    return next(((kind, q) for q in found if q.id == name), None)
