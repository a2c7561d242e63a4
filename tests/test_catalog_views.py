"""Catalog-wide tests: every figure, no code per figure."""

from __future__ import annotations

import itertools
import json
import random

import pytest
from PySide6.QtGui import QImage

from gpuviz import app as cli
from gpuviz import catalog
from tests import figure_driver as drive

FIGURES = catalog.all_figures()
IDS = [spec.number for spec in FIGURES]
MONKEY_ACTIONS = 2000


@pytest.fixture(params=FIGURES, ids=IDS)
def page(request, themed, qtbot):
    page = drive.build_page(request.param)
    qtbot.addWidget(page)
    yield page
    drive.pause(page)


def test_catalog_is_consistent():
    numbers = [spec.number for spec in FIGURES]
    assert len(numbers) == len(set(numbers))
    for lesson in catalog.LESSONS:
        # Lesson L's figures are L.1, L.2, ... in order; one may be built before an
        # earlier one (13.2 and 13.3 before 13.1), so numbers may skip but never go back.
        minors = []
        for spec in lesson.figures:
            major, minor = spec.number.split(".")
            assert major == str(lesson.number), spec.number
            minors.append(int(minor))
            assert "Try this" in spec.caption, spec.number
        assert minors == sorted(minors) and minors[:1] != [0], lesson.number


def test_screenshot_is_not_blank_and_a_full_refresh_changes_nothing(page):
    image = page.grab().toImage().convertToFormat(QImage.Format_RGB32)
    assert image.width() == 1280 and image.height() == 800
    colours = {image.pixel(x, y) for x in range(0, 1280, 7) for y in range(0, 800, 7)}
    assert len(colours) > 20, "the figure looks blank"
    drive.check_readouts(page)
    # What a page shows may not depend on how many refreshes it had (a view that set a
    # timeline's range after its boxes outlined them by the wrong span until the next).
    page.view.apply_look()  # forgets what needs_update remembered, then refreshes all
    drive.settle()
    again = page.grab().toImage().convertToFormat(QImage.Format_RGB32)
    assert again == image, "a second full refresh changed the figure"


@pytest.mark.parametrize("spec", FIGURES, ids=IDS)
def test_projector_look_fits_a_1280x800_screen(spec, qapp, qtbot):
    """Lecture mode shows the page alone, full screen: at 1280x800 with the projector's
    big type it must not need more height than the screen has."""
    from gpuviz import theme

    theme.apply("projector", qapp)
    try:
        page = drive.build_page(spec)
        qtbot.addWidget(page)
        assert page.minimumSizeHint().height() <= 800
        assert (page.width(), page.height()) == (1280, 800)
        drive.pause(page)
    finally:
        theme.apply("dark", qapp)


def test_every_control_to_both_ends_and_back(page):
    seen = {tuple(drive.readout_texts(page).values())}
    for slider in drive.sliders(page):
        start = slider.value()
        for position in (slider.minimum(), slider.maximum(), start):
            slider.setValue(position)
            drive.settle()
            drive.check_readouts(page)
            seen.add(tuple(drive.readout_texts(page).values()))
    for combo in drive.combos(page):
        start = combo.currentIndex()
        for index in [*range(combo.count()), start]:
            combo.setCurrentIndex(index)
            drive.settle()
            drive.check_readouts(page)
            seen.add(tuple(drive.readout_texts(page).values()))
    for box in drive.checkboxes(page):
        for _ in range(2):
            box.click()
            drive.settle()
            drive.check_readouts(page)
            seen.add(tuple(drive.readout_texts(page).values()))
    for button in drive.buttons(page):
        if button.isEnabled():
            button.click()
            drive.pause(page)
            drive.settle()
            drive.check_readouts(page)
            seen.add(tuple(drive.readout_texts(page).values()))
    assert len(seen) > 1, "no control changed any readout"


def test_typed_numbers_at_their_ends_with_the_sliders_at_every_corner(page):
    """A typed number at either end of its range, with every slider at either end: a
    combination no slider reaches alone (13.3 at the least step time, one chip and the
    most tokens drew a bar 10^12 pixels long, which crashed the painter)."""
    entries = drive.number_entries(page)
    if not entries:
        pytest.skip("no typed numbers")
    sliders = drive.sliders(page)[:6]  # 64 corners at most
    for corner in itertools.product(*[(s.minimum(), s.maximum()) for s in sliders]):
        for slider, position in zip(sliders, corner, strict=True):
            slider.setValue(position)
        for entry in entries:
            for end in (entry.param.minimum, entry.param.maximum):
                drive.type_number(entry, f"{end:g}")
                drive.settle()  # a shown page paints here
                drive.check_readouts(page)


def test_reset_restores_defaults(page):
    defaults = page.model.values()
    for slider in drive.sliders(page):
        slider.setValue(slider.maximum())
    drive.settle()
    page.reset_button.click()
    drive.settle()
    assert page.model.values() == defaults


def test_animated_figures_play_to_the_end(page):
    model = page.model
    if not hasattr(model, "advance"):
        pytest.skip("not animated")
    assert page.spec.animated
    model.set_playing(True)
    for _ in range(20):
        model.advance(0.05)
    model.advance(1e9)  # reduced motion jumps to the end
    drive.settle()
    assert not model.playing
    drive.check_readouts(page)


def test_monkey(themed, qtbot):
    rng = random.Random(20261202)
    pages = {spec.number: drive.build_page(spec) for spec in FIGURES}
    for page in pages.values():
        qtbot.addWidget(page)
    for _ in range(MONKEY_ACTIONS):
        page = pages[rng.choice(IDS)]
        drive.random_action(page, rng)
        drive.check_readouts(page)


@pytest.mark.parametrize("spec", FIGURES, ids=IDS)
def test_readout_round_trips_every_parameter(spec, capsys):
    model = spec.make_model()
    for name, param in model.parameters().items():
        if param.kind is str:
            value = param.choice_values()[-1]
        elif param.kind is bool:
            value = not param.default
        else:
            value = param.maximum if param.default != param.maximum else param.minimum
            value = param.coerce(value)
        text = str(value).lower() if param.kind is bool else f"{value}"
        assert cli.main(["--figure", spec.number, "--set", f"{name}={text}", "--readout"]) == 0
        printed = json.loads(capsys.readouterr().out)
        assert printed["figure"] == spec.number
        assert printed["parameters"][name] == value
        model.set(name, value)
        assert set(printed["readouts"]) == set(model.readouts())
        model.reset()
