"""Catalog-wide: every text a figure shows follows one number style and reads as English.

Every figure at its defaults and with every control at both ends (and every button
pressed once): the labels, buttons, readouts, tables, messages, axis ticks and titles,
legends and plot texts must not say "1 warps" or "wave(s)", must use a true minus sign
(U+2212) before a number, ×10ⁿ instead of e+NN, and super- and subscripts instead of
`^` and `_`. Text a user types (the examples of a typed-value field) is input syntax
and is left out.
"""

from __future__ import annotations

import html
import re

import pytest
from PySide6.QtWidgets import QAbstractButton, QComboBox, QLabel

from gpuviz import catalog
from gpuviz.core.axis import Axis
from gpuviz.core.model import format_g, format_value, plural
from gpuviz.core.widgets import ExpressionEntry, TextPanel, TextTable
from tests import figure_driver as drive

FIGURES = catalog.all_figures()
IDS = [spec.number for spec in FIGURES]

COUNT_WORDS = (
    "warps", "threads", "blocks", "tiles", "SMs", "waves", "elements", "bytes", "rows",
    "columns", "ranks", "nodes", "heads", "chunks", "stages", "micro-batches", "batches",
    "requests", "experts", "cycles", "iterations", "passes", "kernels", "streams", "links",
    "hops", "bits", "values", "entries", "sectors", "transactions", "instructions", "banks",
    "parameters", "copies", "messages", "shards", "replicas", "lanes", "cells", "slots",
    "GPUs", "devices", "weights", "tokens", "sequences", "seqs", "steps", "layers", "units",
    "buckets", "terms", "codes", "groups", "channels", "keys", "queries", "times",
    "binades", "gradients",
)
CHECKS = {
    "a plural after 1": re.compile(
        rf"(?<![\d.,−/×])\b1 (?:{'|'.join(map(re.escape, COUNT_WORDS))})\b"),
    "(s) for a plural": re.compile(r"\b(?!diag\()\w+\(s\)"),  # diag(s) is maths
    # A hyphen before a digit where it means minus: at the start, after a space, an
    # opening bracket or an operator. Not in ranges ("1-2"), names ("E4M3", "ZeRO-3").
    "a hyphen as minus": re.compile(r"(?:^|[\s(\[=:,;/×*+<>≈~])-\.?\d"),
    "an e+NN exponent": re.compile(r"\d\.?[eE][+\-−]?\d"),
    "^ for a power": re.compile(r"\^"),
    "_ for a subscript": re.compile(r"_"),
}
# Ticks write thousands with k (SI), never K: "10k", not "10K" (nor K for 1024).
KILO = re.compile(r"\d\s?K\b")
# Names, not numbers or maths: bit patterns (0x3E00), repositories cited as sources.
NAMES = re.compile(r"\b0x[0-9A-Fa-f]+\b|\S+/\S*_\S*")
TAG = re.compile(r"<[^>]+>")


def plain(text: str) -> str:
    return html.unescape(TAG.sub("", text.replace("<br>", "\n")))


def axis_texts(axis: Axis) -> list[str]:
    """The axis's title and the strings of its labelled ticks at the current range."""
    texts = [plain(axis.labelString())] if axis.label.isVisible() and axis.labelText else []
    if not axis.style["showValues"]:
        return texts
    if axis._tickLevels is not None:
        return texts + [text for level in axis._tickLevels for _, text in level]
    levels = axis.tickValues(axis.range[0], axis.range[1], axis.length_in_pixels())
    for spacing, values in levels[:axis.style["maxTextLevel"] + 1]:
        texts += axis.tickStrings(values, axis.autoSIPrefixScale * axis.scale, spacing)
    return texts


def shown_texts(page) -> list[str]:  # noqa: ANN001
    """Every text the page shows now, one line each."""
    typed = [entry.combo for entry in page.findChildren(ExpressionEntry)]
    texts = [plain(w.text()) for w in page.findChildren(QLabel)
             if w.isVisibleTo(page) and w.text()]
    texts += [w.text() for w in page.findChildren(QAbstractButton)
              if w.isVisibleTo(page) and w.text()]
    texts += [w.itemText(i) for w in page.findChildren(QComboBox) if w not in typed
              for i in range(w.count())]
    texts += [w._document.toPlainText() for w in page.findChildren(TextPanel)
              if w.isVisibleTo(page)]
    texts += [w.text().replace("\t", "  ") for w in page.findChildren(TextTable)
              if w.isVisibleTo(page)]
    texts += page.view.readouts.texts().values()
    texts += [plain(text) for text, _ in page.view.text_items() if not text.startswith("<")]
    texts += tick_texts(page)
    return [line for text in texts for line in text.split("\n") if line]


def tick_texts(page) -> list[str]:  # noqa: ANN001
    return [text for scene in page.view._scenes for item in scene.items()
            if isinstance(item, Axis) and item.isVisible() for text in axis_texts(item)]


def input_syntax(page) -> list[str]:  # noqa: ANN001
    """What a user may type into a typed-value field (its examples), quoted in captions."""
    return [entry.combo.itemText(i) for entry in page.findChildren(ExpressionEntry)
            for i in range(entry.combo.count())]


def states(page):  # noqa: ANN001, ANN201
    """Defaults, every slider at both ends, every combo entry, every check box toggled,
    every button pressed: yields a name for each state."""
    yield "defaults"
    for i, slider in enumerate(drive.sliders(page)):
        start = slider.value()
        for position in (slider.minimum(), slider.maximum()):
            slider.setValue(position)
            drive.settle()
            yield f"slider {i} at {position}"
        slider.setValue(start)
    for combo in drive.combos(page):
        start = combo.currentIndex()
        for index in range(combo.count()):
            combo.setCurrentIndex(index)
            drive.settle()
            yield f"{combo.accessibleName() or 'combo'} = {combo.itemText(index)}"
        combo.setCurrentIndex(start)
    for box in drive.checkboxes(page):
        for _ in range(2):
            box.click()
            drive.settle()
            yield f"{box.text()} = {box.isChecked()}"
    for button in drive.buttons(page):
        if button.isEnabled():
            button.click()
            drive.pause(page)
            drive.settle()
            yield f"after {button.text()!r}"


def problems(line: str, typed: list[str]) -> list[str]:
    for example in typed:
        line = line.replace(example, "")
    line = NAMES.sub("", line)
    return [name for name, pattern in CHECKS.items() if pattern.search(line)]


@pytest.mark.parametrize("spec", FIGURES, ids=IDS)
def test_every_shown_text_follows_the_number_style(spec, themed, qtbot):
    page = drive.build_page(spec)
    qtbot.addWidget(page)
    typed = input_syntax(page)
    found: dict[str, str] = {}
    for state in states(page):
        for line in shown_texts(page):
            for name in problems(line, typed):
                found.setdefault(f"{name}: {line[:120]!r}", state)
        for tick in tick_texts(page):
            if KILO.search(tick):
                found.setdefault(f"K for thousand on an axis: {tick!r}", state)
    drive.pause(page)
    assert not found, "\n".join(f"{problem} ({state})" for problem, state in found.items())


def test_axis_titles_are_sentence_case(themed, qtbot):
    """Every axis title starts with a capital (or a symbol) and puts its unit in
    parentheses: "Arithmetic intensity (FLOP/byte)"."""
    wrong = []
    for spec in FIGURES:
        page = drive.build_page(spec)
        qtbot.addWidget(page)
        for scene in page.view._scenes:
            for item in scene.items():
                if isinstance(item, Axis) and item.labelText and item.label.isVisible():
                    title = plain(item.labelText)
                    if title[0].islower() and not title.startswith("log"):  # log₂ |g|
                        wrong.append(f"{spec.number}: {title!r}")
        drive.pause(page)
        page.close()
    assert not wrong, "\n".join(wrong)


def test_the_checks_catch_what_they_should():
    assert problems("1 warps", []) == ["a plural after 1"]
    assert problems("21 warps, 1.5 tokens", []) == []
    assert problems("2 wave(s)", []) == ["(s) for a plural"]
    assert problems("x = -0.1", []) == ["a hyphen as minus"]
    assert problems("layers 1-2, ZeRO-3, fp8-e4m3, L2", []) == []
    assert problems("1.2e-05", []) == ["an e+NN exponent"]
    assert problems("pattern 0x3E00, source markdewing/AI_kernels", []) == []
    assert problems("(X diag(s)⁻¹)", []) == []
    assert KILO.search("16K") and not KILO.search("16k") and not KILO.search("16 KB")
    assert problems("type 1e-8", ["1e-8"]) == []
    for text in (format_value(-0.1), format_value(1.2e-5), format_g(-3e9), plural(1, "warp")):
        assert problems(text, []) == [], text
