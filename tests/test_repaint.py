"""What the window shows after a change is what a full render of the figure shows: the
framework repaints only what changed (CellGrid's changed cells, one window repaint per
refresh), and nothing it leaves out may stay on the screen."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QImage

from gpuviz import catalog

ANIMATED = [spec for spec in catalog.all_figures() if spec.animated]
SWEPT = [spec for spec in catalog.all_figures()
         if spec.number in ("2.1", "2.3", "4.5", "6.4", "6.5", "8.2")]


def _shown_and_rendered(qapp, page) -> tuple[QImage, QImage]:  # noqa: ANN001
    # The offscreen screen grabs the window's backing store: what was painted so far.
    shown = qapp.primaryScreen().grabWindow(page.winId()).toImage()
    rendered = page.grab().toImage()
    return (shown.convertToFormat(QImage.Format_RGB32),
            rendered.convertToFormat(QImage.Format_RGB32))


def _page(spec, qapp):  # noqa: ANN001
    from gpuviz.core.figure_view import FigurePage

    model = spec.make_model()
    page = FigurePage(spec, model, spec.make_view(model))
    page.resize(1280, 800)
    page.show()
    for _ in range(3):
        qapp.processEvents()
    return model, page


@pytest.mark.parametrize("spec", ANIMATED, ids=[spec.number for spec in ANIMATED])
def test_each_step_of_an_animation_leaves_the_window_as_a_full_render(spec, themed):
    model, page = _page(spec, themed)
    for step in range(8):
        model.step()
        themed.processEvents()
        shown, rendered = _shown_and_rendered(themed, page)
        assert shown == rendered, f"step {step + 1} left stale pixels"
    page.close()


@pytest.mark.parametrize("spec", SWEPT, ids=[spec.number for spec in SWEPT])
def test_each_slider_change_leaves_the_window_as_a_full_render(spec, themed):
    from PySide6.QtWidgets import QSlider

    _, page = _page(spec, themed)
    for slider in page.findChildren(QSlider)[:2]:
        low, high = slider.minimum(), slider.maximum()
        for position in (low + (high - low) * i // 6 for i in range(7)):
            slider.setValue(position)
            themed.processEvents()
            shown, rendered = _shown_and_rendered(themed, page)
            assert shown == rendered, f"{slider.accessibleName()} at {position}: stale pixels"
    page.close()


@pytest.mark.parametrize(("number", "plots"), [("8.2", 2), ("1.1", 1)])
def test_a_change_repaints_a_figure_in_one_window_repaint(themed, number, plots):
    from PySide6.QtCore import QEvent, QObject
    from PySide6.QtWidgets import QGraphicsView, QSlider

    class Count(QObject):
        def __init__(self) -> None:
            super().__init__()
            self.events: list[tuple[QObject, QEvent.Type]] = []

        def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
            if event.type() in (QEvent.Paint, QEvent.UpdateRequest):
                self.events.append((watched, event.type()))
            return False

    spec = next(spec for spec in catalog.all_figures() if spec.number == number)
    _, page = _page(spec, themed)
    viewports = [view.viewport() for view in page.findChildren(QGraphicsView)]
    assert len(viewports) == plots
    count = Count()
    for watched in [page, *viewports]:
        watched.installEventFilter(count)
    slider = page.findChildren(QSlider)[0]
    slider.setValue(slider.value() + (slider.maximum() - slider.minimum()) // 10)
    themed.processEvents()
    # The plots changed: each is painted once, in the window's one repaint of the change
    # (each scene used to repaint and flush the window on its own, after the repaint the
    # slider had asked for).
    assert [kind for watched, kind in count.events
            if watched is page and kind == QEvent.UpdateRequest] == [QEvent.UpdateRequest]
    for viewport in viewports:
        assert [kind for watched, kind in count.events if watched is viewport] == [QEvent.Paint]
    page.close()


def test_choice_buttons_stay_put_while_a_count_on_them_keeps_its_digits(themed):
    """1.1's level buttons show counts: a new count of as many digits does not share the
    row out again (that moved the buttons and repainted each at its new size)."""
    spec = next(spec for spec in catalog.all_figures() if spec.number == "1.1")
    model, page = _page(spec, themed)
    buttons = list(page.view.levels.buttons.values())
    model.set("problem_size", 28510)
    themed.processEvents()
    texts, places = [b.text() for b in buttons], [b.geometry() for b in buttons]
    model.set("problem_size", 46238)  # 112 blocks, then 181
    themed.processEvents()
    assert [b.text() for b in buttons] != texts
    assert [b.geometry() for b in buttons] == places
    page.close()


def test_a_checked_choice_button_paints_as_its_style_sheet_did(themed):
    """Choice buttons carry no style sheet (setting one on each choice restyled the button
    and repainted the page's caption too); the checked one paints the pixels the sheet
    `QPushButton:checked {background-color; color; border: 1px solid}` gave, and the row
    stays one height."""
    from PySide6.QtWidgets import QPushButton

    from gpuviz import theme

    spec = next(spec for spec in catalog.all_figures() if spec.number == "1.1")
    _, page = _page(spec, themed)
    levels = page.view.levels
    selected = theme.color("compute")
    sheet = (f"QPushButton:checked {{ background-color: {selected.name()}; "
             f"color: {theme.readable_on(selected).name()}; "
             f"border: 1px solid {selected.name()}; }}")
    for clicked in list(levels.buttons.values())[:2]:
        clicked.click()
        themed.processEvents()
        assert not any(b.styleSheet() for b in [levels, *levels.buttons.values()])
        assert [b.isChecked() for b in levels.buttons.values()] == [
            b is clicked for b in levels.buttons.values()]
        styled = QPushButton(clicked.text())
        styled.setCheckable(True)
        styled.setChecked(True)
        styled.setStyleSheet(sheet)
        styled.setFont(clicked.font())
        styled.setFixedSize(clicked.size())
        assert (styled.grab().toImage().convertToFormat(QImage.Format_RGB32)
                == clicked.grab().toImage().convertToFormat(QImage.Format_RGB32))
        assert len({b.geometry().height() for b in levels.buttons.values()}) == 1
    page.close()


def test_a_choice_repaints_its_buttons_not_the_page(themed):
    """13.1's case buttons: a click repaints the buttons, the plot and the readouts that
    changed, never the page beneath them (its caption)."""
    from PySide6.QtCore import QEvent, QObject

    spec = next(spec for spec in catalog.all_figures() if spec.number == "13.1")
    _, page = _page(spec, themed)

    class Painted(QObject):
        count = 0

        def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
            self.count += event.type() == QEvent.Paint
            return False

    painted = Painted()
    for widget in (page, page.caption):
        widget.installEventFilter(painted)
    for button in page.view.cases.buttons.values():
        button.click()
        themed.processEvents()
    assert painted.count == 0
    page.close()


@pytest.mark.parametrize("number", ["6.5", "1.1"])
def test_each_switch_leaves_the_window_as_a_full_render(number, themed):
    """6.5's fixes repaint the rows of its table that changed; 1.1's level buttons."""
    from PySide6.QtWidgets import QAbstractButton

    spec = next(spec for spec in catalog.all_figures() if spec.number == number)
    _, page = _page(spec, themed)
    buttons = [button for button in page.findChildren(QAbstractButton)
               if button.isCheckable() and button.isVisible()]
    assert buttons
    for button in buttons:
        button.click()
        themed.processEvents()
        shown, rendered = _shown_and_rendered(themed, page)
        assert shown == rendered, f"{button.text()!r}: stale pixels"
    page.close()


PLACED = [spec for spec in catalog.all_figures()
          if spec.number in ("2.1", "2.2", "4.3", "4.4", "6.5")]


@pytest.mark.parametrize("spec", PLACED, ids=[spec.number for spec in PLACED])
def test_a_change_places_its_labels_once_for_the_range_it_paints(spec, themed, monkeypatch):
    """Labels are placed once per change, for the view's new range: a view that placed
    them in its refresh placed them for the old range, and the paint placed them all again."""
    from PySide6.QtWidgets import QComboBox, QSlider

    from gpuviz.core.text import PlacedTextLayer

    placed: list[PlacedTextLayer] = []  # a layer each time all its labels are placed
    layout = PlacedTextLayer._layout

    def counted_layout(self, transform, area):  # noqa: ANN001, ANN202
        full = layout(self, transform, area)
        if full:
            placed.append(self)
        return full

    monkeypatch.setattr(PlacedTextLayer, "_layout", counted_layout)
    _, page = _page(spec, themed)
    changes = [lambda s=slider, p=position: s.setValue(p)
               for slider in page.findChildren(QSlider)[:2]
               for position in (slider.minimum()
                                + (slider.maximum() - slider.minimum()) * i // 12
                                for i in range(13))]
    changes += [lambda c=combo, i=index: c.setCurrentIndex(i)
                for combo in page.findChildren(QComboBox)[:1] for index in range(combo.count())]
    try:
        for number, change in enumerate(changes):
            placed.clear()
            change()
            themed.processEvents()
            again = [layer for layer in set(placed) if placed.count(layer) > 1]
            assert not again, f"change {number}: {len(again)} layers placed twice"
    finally:
        page.close()
