"""Drive a built figure the way a person would: every control, both ends, every button.
Shared by the catalog-wide tests and the benchmark."""

from __future__ import annotations

import math
import random

from PySide6.QtWidgets import QApplication, QCheckBox, QComboBox, QPushButton, QSlider

from gpuviz.core.figure_view import FigurePage
from gpuviz.core.widgets.controls import NumberEntry


def build_page(spec, size=(1280, 800)) -> FigurePage:  # noqa: ANN001
    model = spec.make_model()
    page = FigurePage(spec, model, spec.make_view(model))
    page.resize(*size)
    page.show()
    settle()
    return page


def settle() -> None:
    app = QApplication.instance()
    for _ in range(2):
        app.processEvents()


def sliders(page: FigurePage) -> list[QSlider]:
    return page.findChildren(QSlider)


def combos(page: FigurePage) -> list[QComboBox]:
    return page.findChildren(QComboBox)


def checkboxes(page: FigurePage) -> list[QCheckBox]:
    return page.findChildren(QCheckBox)


def buttons(page: FigurePage) -> list[QPushButton]:
    # Explain needs the main window; it is tested there.
    return [b for b in page.findChildren(QPushButton) if b.text() != "Explain"]


def number_entries(page: FigurePage) -> list[NumberEntry]:
    return [entry for entry in page.findChildren(NumberEntry) if entry.isVisible()]


def type_number(entry: NumberEntry, text: str) -> None:
    """Type `text` into the field and press Enter, as a user does."""
    entry.edit.setText(text)
    entry.edit.editingFinished.emit()


def readout_texts(page: FigurePage) -> dict[str, str]:
    return page.view.readouts.texts()


def check_readouts(page: FigurePage) -> None:
    """Every readout is text or a finite number (inf/NaN only as deliberate text)."""
    for key, readout in page.model.readouts().items():
        value = readout.value
        if isinstance(value, float):
            assert math.isfinite(value), f"{page.spec.number} {key} = {value}"


def pause(page: FigurePage) -> None:
    if hasattr(page.model, "set_playing"):
        page.model.set_playing(False)


def random_action(page: FigurePage, rng: random.Random) -> None:
    """One random thing a user could do with this figure."""
    kind = rng.choice(("slider", "slider", "combo", "check", "button", "time", "typed"))
    if kind == "slider" and sliders(page):
        slider = rng.choice(sliders(page))
        slider.setValue(rng.choice((slider.minimum(), slider.maximum(),
                                    rng.randint(slider.minimum(), slider.maximum()))))
    elif kind == "combo" and combos(page):
        combo = rng.choice(combos(page))
        if combo.count():
            combo.setCurrentIndex(rng.randrange(combo.count()))
    elif kind == "check" and checkboxes(page):
        rng.choice(checkboxes(page)).click()
    elif kind == "button" and buttons(page):
        button = rng.choice(buttons(page))
        if button.isEnabled():
            button.click()
    elif kind == "typed" and number_entries(page):
        # A typed number may combine with the sliders into what no slider reaches (13.3's
        # step time at its least with the most tokens: an MFU of 10^11 %).
        entry = rng.choice(number_entries(page))
        low, high = entry.param.minimum, entry.param.maximum
        if low is not None and high is not None:
            type_number(entry, f"{rng.choice((low, high, rng.uniform(low, high))):g}")
    elif kind == "time" and hasattr(page.model, "advance"):
        page.model.set_playing(True)
        for _ in range(rng.randint(1, 5)):
            page.model.advance(rng.choice((0.016, 0.1, 1.0)))
    pause(page)
    settle()
