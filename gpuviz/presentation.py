"""Lecture mode: the projector theme, full screen, no sidebar, and clicker keys.

Keys while presenting (a presentation clicker sends PageDown, PageUp, B or period):

* PageDown: the next step of an animated figure (`AnimatedModel.step()`); once it is at
  its end, the next figure. PageUp: one step back (the figure is rewound and replayed one
  step fewer); at its start, the previous figure.
* B or period: blank the screen to black, and back.
* Space: play or pause an animated figure.
* Esc or F5: leave lecture mode, back to the theme and layout from before.

A playlist (gpuviz.playlist) picks the figures and their order; an entry with a step
(`6.3 step=end`) opens its figure there, and PageUp walks back from it. The presenter
wraps the main window from outside, through its public methods (gpuviz.app composes
them); the window knows nothing of lecture mode.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QWidget

from gpuviz.core.model import AnimatedModel
from gpuviz.screen import ScreenCover
from gpuviz.tour import Tour

if TYPE_CHECKING:
    from gpuviz.main_window import MainWindow

PROJECTOR = "projector"
# The window's actions that lecture mode turns off while it lasts, and back on after.
WINDOW_ACTIONS_OFF = ("filter", "explain", "lesson", "full_screen", "tour")


class BlankScreen(QWidget):
    """A black cover over the whole window (the B key of a clicker)."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setAttribute(Qt.WA_StyledBackground, True)
        self.setStyleSheet("background-color: black;")
        self.setAccessibleName("Blank screen (press B to show the figure again)")
        self.hide()

    def cover(self) -> None:
        self.show()  # first: showing may lay the window out again, to another size
        self.raise_()
        self.setGeometry(self.parentWidget().rect())


class Presenter(QObject):
    """Lecture mode around a main window: enter/leave, clicker keys, blanking."""

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.window = window
        self.active = False
        self.blank = BlankScreen(window)
        self.screen_cover = ScreenCover(window)
        self._steps = 0  # PageDown steps taken in the current animated figure
        self._before: dict[str, object] = {}
        add = window.add_action
        add("present", "&Presentation (lecture mode)", self.toggle, "F5", menu="view",
            before="full_screen")
        add("leave_present", "Leave presentation", self.leave, "Esc", False)
        add("blank", "&Blank screen", self.toggle_blank, "B, .", False)
        add("play", "Play / pause", self.play_pause, "Space", False)
        window.figure_shown.connect(self._figure_shown)
        window.installEventFilter(self)

    @staticmethod
    def of(window: QWidget) -> Presenter | None:
        """The presenter wrapping `window`, if any."""
        return window.findChild(Presenter)

    # --- entering and leaving ------------------------------------------------------------
    def enter(self) -> None:
        if self.active:
            return
        w = self.window
        self.active = True
        self._before = {
            "sidebar": w.sidebar.isVisible(), "lesson": w.lesson_pane.isVisible(),
            "maximized": w.isMaximized(), "fullscreen": w.isFullScreen(),
            "geometry": w.saveGeometry(),
        }
        self._set_actions(True)
        w.stepper = self
        w.remember_layout = False  # the layout to keep is the one from before
        w.remember_progress = False  # a lecture's answers are no learner's progress
        tour = Tour.of(w)
        if tour is not None:
            tour.end()
        w.sidebar.hide()
        w.lesson_pane.hide()
        w.menuBar().hide()
        w.statusBar().hide()
        w.override_theme(PROJECTOR)
        self.screen_cover.cover()
        self._steps = self._playlist_steps()

    def leave(self) -> None:
        if not self.active:
            return
        w = self.window
        self.active = False
        self.blank.hide()
        before = self._before
        self._set_actions(False)
        w.stepper = None
        w.remember_layout = True
        w.remember_progress = w.remember
        w.override_theme(None)
        w.sidebar.setVisible(bool(before.get("sidebar", True)))
        w.menuBar().show()
        w.statusBar().show()
        if before.get("lesson"):
            w.explain()
        self.screen_cover.uncover()  # hides the window: shown again as it was before
        if before.get("fullscreen"):
            w.showFullScreen()
        elif before.get("maximized"):
            w.showMaximized()
        else:
            w.showNormal()
            if before.get("geometry") is not None:
                w.restoreGeometry(before["geometry"])

    def _set_actions(self, active: bool) -> None:
        for key in ("leave_present", "blank", "play"):
            self.window.actions[key].setEnabled(active)
        for key in WINDOW_ACTIONS_OFF:
            if key in self.window.actions:
                self.window.actions[key].setEnabled(not active)

    def toggle(self) -> None:
        self.leave() if self.active else self.enter()

    # --- clicker keys --------------------------------------------------------------------
    def _model(self) -> object | None:
        w = self.window
        return w.models.get(w.current) if w.current else None

    def forward(self) -> None:
        model = self._model()
        if isinstance(model, AnimatedModel) and not model.finished:
            model.step()
            self._steps += 1
            return
        if self.window.step_figure(1, wrap=False):
            self._arrived(forward=True)

    def back(self) -> None:
        model = self._model()
        if isinstance(model, AnimatedModel) and (self._steps > 0 or model.playing):
            # After Play the position is not a step count: go back to the start.
            self._steps = 0 if model.playing else self._steps - 1
            model.go_to_step(self._steps)
            return
        if self.window.step_figure(-1, wrap=False):
            self._arrived(forward=False)

    def _arrived(self, forward: bool) -> None:
        model = self._model()
        self._steps = self._playlist_steps()
        if forward and isinstance(model, AnimatedModel) and not self._steps:
            model.set_playing(False)
            model.rewind()

    def _playlist_steps(self) -> int:
        """The steps PageUp can take back in a figure its playlist entry opened at a step."""
        model = self._model()
        w = self.window
        if isinstance(model, AnimatedModel) and w.playlist_step(w.current) is not None:
            return model.current_step
        return 0

    def _figure_shown(self, _number: str) -> None:
        """Another figure by any route (or the same one rebuilt in a new look)."""
        self._steps = 0
        if self.blanked:
            self.blank.cover()  # over the page just built

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        if watched is self.window and event.type() == QEvent.Resize and self.blanked:
            self.blank.cover()
        return False

    def toggle_blank(self) -> None:
        if self.blank.isVisible():
            self.blank.hide()
        else:
            self.blank.cover()

    @property
    def blanked(self) -> bool:
        return self.blank.isVisible()

    def play_pause(self) -> None:
        model = self._model()
        if isinstance(model, AnimatedModel):
            model.toggle_playing()
