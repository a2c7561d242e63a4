"""The tour: six short steps, each a bubble that points at one part of the window (the
sidebar, a slider, the readouts, Play and Next, Explain, predict first). Next and Back walk
it, Esc ends it. The app starts it once, on the first run (gpuviz.app), never in kiosk or
lecture mode; Help > Tour starts it again.

A step whose part the current figure lacks (Play on a still figure) opens the first figure
that has it, and the end of the tour goes back to the figure it started at. The tour is a
child of the window that covers it, so it follows the window's size and goes with it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, QPointF, QRect, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QKeyEvent, QPainter, QPainterPath, QPen, QPolygonF
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSlider,
    QVBoxLayout,
    QWidget,
)

from gpuviz import catalog, theme
from gpuviz.core.model import PredictFirstModel

if TYPE_CHECKING:
    from gpuviz.main_window import MainWindow

BUBBLE_WIDTH = 340  # px at normal text size
GAP = 14  # between the bubble and what it points at, px at normal text size
VEIL = QColor(0, 0, 0, 140)  # over the rest of the window


@dataclass(frozen=True)
class TourStep:
    title: str
    text: str
    target: Callable[[MainWindow], QWidget | None]  # the part pointed at, where shown
    shows_it: Callable[[catalog.FigureSpec], bool] | None = None  # a figure that has it


def _page(window: MainWindow):  # noqa: ANN202 - the FigurePage shown, if any
    return window.pages.get(window.current) if window.current else None


def _slider(window: MainWindow) -> QWidget | None:
    page = _page(window)
    if page is None:
        return None
    sliders = [s for s in page.view.controls.findChildren(QSlider) if s.isVisible()]
    return sliders[0].parentWidget() if sliders else page.view.controls


def _view_part(name: str) -> Callable[[MainWindow], QWidget | None]:
    def find(window: MainWindow) -> QWidget | None:
        page = _page(window)
        return getattr(page.view, name, None) if page is not None else None
    return find


def _explain(window: MainWindow) -> QWidget | None:
    page = _page(window)
    return page.explain_button if page is not None else None


def _predict(window: MainWindow) -> QWidget | None:
    from gpuviz.core.widgets.predict_reveal import PredictReveal

    page = _page(window)
    found = page.findChildren(PredictReveal) if page is not None else []
    return found[0] if found else None


def _predicts(spec: catalog.FigureSpec) -> bool:
    return isinstance(spec.make_model(), PredictFirstModel)


STEPS = (
    TourStep("Lessons and figures",
             "The 13 lessons, each with its figures. Pick one here, or walk them with "
             "PageDown and PageUp. The number after a lesson counts its questions you have "
             "answered (F2 opens them).", lambda w: w.tree),
    TourStep("Change a setting",
             "Every figure is an experiment: drag a slider or pick a GPU or a model, and "
             "the picture and the numbers follow at once.", _slider),
    TourStep("Read the numbers",
             "The readouts: each number the figure computes, from a formula or a cited "
             "source. Ctrl+Alt+C copies them.", _view_part("readouts")),
    TourStep("Play and Next",
             "Figures that move have Play, and a Next button named for what a step is "
             "(Next burst, Next layer...) to go one step at a time. Rewind starts over.",
             _view_part("time_controls"), lambda spec: spec.animated),
    TourStep("Explain",
             "Explain (F1) opens the lesson text at this figure's section, beside it. "
             "Questions (F2), next to it, opens the lesson's worked questions.",
             _explain),
    TourStep("Predict first",
             "Some figures ask for your guess before they show the answer: set it, then "
             "press Reveal.", _predict, _predicts),
)


class Tour(QWidget):
    """The tour over `window`: a veil with a hole around the part of the step, and a
    bubble with the step's words and Back, Next (Done on the last) buttons."""

    ended = Signal()

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.window_ = window
        self.index = 0
        self.started_at = window.current
        self.target: QRect | None = None
        self.setAttribute(Qt.WA_NoSystemBackground)
        self.setFocusPolicy(Qt.StrongFocus)
        self.setAccessibleName("Tour")
        self.bubble = QFrame(self)
        self.bubble.setFrameShape(QFrame.StyledPanel)
        self.bubble.setAutoFillBackground(True)
        self.heading = QLabel()
        self.words = QLabel()
        self.words.setWordWrap(True)
        self.counter = QLabel()
        self.back = QPushButton("Back")
        self.back.clicked.connect(lambda: self.go(self.index - 1))
        self.next = QPushButton("Next")
        self.next.clicked.connect(self.forward)
        self.next.setDefault(True)
        close = QPushButton("End (Esc)")
        close.clicked.connect(self.end)
        buttons = QHBoxLayout()
        buttons.addWidget(self.counter, 1)
        for button in (close, self.back, self.next):
            buttons.addWidget(button)
        layout = QVBoxLayout(self.bubble)
        layout.addWidget(self.heading)
        layout.addWidget(self.words)
        layout.addLayout(buttons)
        window.installEventFilter(self)
        window.figure_shown.connect(self._place)

    @staticmethod
    def of(window: QWidget) -> Tour | None:
        """The tour shown over `window`, if any (an ended one is hidden, then deleted)."""
        tour = window.findChild(Tour)
        return tour if tour is not None and tour.isVisible() else None

    def start(self) -> None:
        self.setGeometry(self.window_.rect())
        self.show()
        self.raise_()
        self.go(0)

    def go(self, index: int) -> None:
        """Show step `index`, opening a figure that has its part where this one lacks it."""
        self.index = max(0, min(index, len(STEPS) - 1))
        step = STEPS[self.index]
        w = self.window_
        if step.shows_it is not None and w.current and not step.shows_it(
                catalog.figure(w.current)):
            found = next((n for n in w.sequence() if step.shows_it(catalog.figure(n))), None)
            if found is not None:
                w.show_figure(found)
        self.heading.setText(f"<b>{step.title}</b>")
        self.words.setText(step.text)
        self.counter.setText(f"{self.index + 1} of {len(STEPS)}")
        self.back.setEnabled(self.index > 0)
        self.next.setText("Done" if self.index == len(STEPS) - 1 else "Next")
        self._place()
        self.setFocus()

    def forward(self) -> None:
        if self.index == len(STEPS) - 1:
            self.end()
        else:
            self.go(self.index + 1)

    def end(self) -> None:
        """Close the tour, back at the figure it started at."""
        w = self.window_
        w.removeEventFilter(self)
        w.figure_shown.disconnect(self._place)
        self.hide()
        if self.started_at and w.current != self.started_at:
            w.show_figure(self.started_at)
        self.ended.emit()
        self.deleteLater()

    def _place(self, *_args: object) -> None:
        """Put the hole around the step's part and the bubble beside it (right of it where
        there is room, else left, else below)."""
        self.setGeometry(self.window_.rect())
        part = STEPS[self.index].target(self.window_)
        visible = part is not None and part.isVisible() and part.width() > 0
        self.target = (QRect(part.mapTo(self.window_, part.rect().topLeft()), part.size())
                       if visible else None)
        scale = theme.ui_scale()
        width = round(BUBBLE_WIDTH * scale)
        self.bubble.setFixedWidth(width)
        self.bubble.adjustSize()
        size, room, gap = self.bubble.size(), self.rect(), round(GAP * scale)
        if self.target is None:
            top_left = room.center() - QRect(0, 0, size.width(), size.height()).center()
        else:
            t = self.target
            if t.right() + gap + size.width() <= room.right():
                x = t.right() + gap
            elif t.left() - gap - size.width() >= 0:
                x = t.left() - gap - size.width()
            else:
                x = t.center().x() - size.width() // 2
            y = t.center().y() - size.height() // 2
            top_left = QRect(x, y, 0, 0).topLeft()
        x = min(max(top_left.x(), 0), room.width() - size.width())
        y = min(max(top_left.y(), 0), room.height() - size.height())
        self.bubble.move(x, y)
        self.update()

    def paintEvent(self, _event) -> None:  # noqa: ANN001, N802
        painter = QPainter(self)
        painter.setRenderHint(QPainter.Antialiasing)
        veil = QPainterPath()
        veil.addRect(QRectF(self.rect()))
        if self.target is not None:
            hole = QPainterPath()
            hole.addRoundedRect(QRectF(self.target).adjusted(-4, -4, 4, 4), 6, 6)
            veil = veil.subtracted(hole)
        painter.fillPath(veil, VEIL)
        if self.target is None:
            return
        ink = theme.color("text")  # a selected part is framed in the text colour
        painter.setPen(QPen(ink, 3 * theme.line_factor()))
        painter.drawRoundedRect(QRectF(self.target).adjusted(-4, -4, 4, 4), 6, 6)
        self._arrow(painter, ink)

    def _arrow(self, painter: QPainter, ink: QColor) -> None:
        """A line from the bubble's nearest edge to the part, with a head at the part."""
        bubble, target = QRectF(self.bubble.geometry()), QRectF(self.target)
        start = QPointF(bubble.left() if target.center().x() < bubble.left() else
                        bubble.right() if target.center().x() > bubble.right() else
                        bubble.center().x(), bubble.center().y())
        end = QPointF(min(max(start.x(), target.left()), target.right()),
                      min(max(start.y(), target.top()), target.bottom()))
        if (end - start).manhattanLength() < 8:
            return
        painter.drawLine(start, end)
        direction = end - start
        length = (direction.x() ** 2 + direction.y() ** 2) ** 0.5
        unit = direction / length
        normal = QPointF(-unit.y(), unit.x())
        head = 12 * theme.line_factor()
        painter.setBrush(ink)
        painter.drawPolygon(QPolygonF([end, end - unit * head + normal * head / 2,
                                       end - unit * head - normal * head / 2]))

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802
        key = event.key()
        if key == Qt.Key_Escape:
            self.end()
        elif key in (Qt.Key_Right, Qt.Key_Return, Qt.Key_Enter):
            self.forward()
        elif key == Qt.Key_Left:
            self.go(self.index - 1)
        else:
            super().keyPressEvent(event)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        if watched is self.window_ and event.type() in (QEvent.Resize, QEvent.LayoutRequest):
            self._place()
        return False
