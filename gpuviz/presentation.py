"""Lecture mode: the projector theme, full screen, no sidebar, and clicker keys.

Keys while presenting (a presentation clicker sends PageDown, PageUp, B or period):

* PageDown: the next step of an animated figure (`AnimatedModel.step()`); once it is at
  its end, the next figure. PageUp: one step back (the figure is rewound and replayed one
  step fewer); at its start, the previous figure.
* B or period: blank the screen to black, and back.
* Space: play or pause an animated figure.
* Esc or F5: leave lecture mode, back to the theme and layout from before.

A playlist (a text file of figure numbers) picks the figures and their order.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QWidget

from gpuviz import catalog
from gpuviz.core.model import AnimatedModel

if TYPE_CHECKING:
    from gpuviz.main_window import MainWindow

PLAYLIST_SUFFIX = ".gpuviz-playlist"
MAX_PLAYLIST_BYTES = 100_000


class PlaylistError(ValueError):
    """A playlist we refuse, with the sentence that says why."""


def parse_playlist(text: str) -> list[str]:
    """Figure numbers from a playlist: JSON (a list, or {"figures": [...]}) or plain text
    with numbers separated by commas, spaces or new lines; `#` starts a comment.
    Every number must be a figure of the catalog; raises PlaylistError otherwise."""
    stripped = text.strip()
    if stripped.startswith(("[", "{")):
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError as error:
            raise PlaylistError(f"not valid JSON: {error.msg} (line {error.lineno})") from None
        if isinstance(data, dict):
            data = data.get("figures")
        if not isinstance(data, list) or not all(isinstance(x, str | int | float)
                                                 for x in data):
            raise PlaylistError('JSON playlist must be a list of figure numbers or '
                                '{"figures": [...]}')
        words = [str(x) for x in data]
    else:
        words = []
        for line in text.splitlines():
            words += line.split("#", 1)[0].replace(",", " ").split()
    if not words:
        raise PlaylistError("the playlist names no figures")
    known = {spec.number for spec in catalog.all_figures()}
    unknown = [word for word in words if word not in known]
    if unknown:
        raise PlaylistError(f"unknown figure {', '.join(repr(u) for u in unknown[:5])}; "
                            f"built figures: {', '.join(sorted(known, key=_sort_key))}")
    return words


def _sort_key(number: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in number.split("."))
    except ValueError:
        return (999,)


def read_playlist(path: Path) -> list[str]:
    try:
        if path.stat().st_size > MAX_PLAYLIST_BYTES:
            raise PlaylistError("the file is too large to be a playlist")
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise PlaylistError("the file is not text") from None
    except OSError as error:
        raise PlaylistError(error.strerror or str(error)) from None
    return parse_playlist(text)


def playlist_text(numbers: list[str]) -> str:
    return ("# gpuviz playlist: figure numbers in the order to show them\n"
            + "\n".join(numbers) + "\n")


def write_playlist(path: Path, numbers: list[str]) -> None:
    path.write_text(playlist_text(numbers), encoding="utf-8")


class BlankScreen(QWidget):
    """A black cover over the whole window (the B key of a clicker)."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setAttribute(Qt.WA_StyledBackground, True)
        self.setStyleSheet("background-color: black;")
        self.setAccessibleName("Blank screen (press B to show the figure again)")
        self.hide()

    def cover(self) -> None:
        self.setGeometry(self.parentWidget().rect())
        self.raise_()
        self.show()


class Presenter(QObject):
    """The lecture-mode half of the main window: enter/leave, clicker keys, blanking."""

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.window = window
        self.active = False
        self.blank = BlankScreen(window)
        self._steps = 0  # PageDown steps taken in the current animated figure
        self._before: dict[str, object] = {}

    # --- entering and leaving ------------------------------------------------------------
    def enter(self) -> None:
        if self.active:
            return
        w = self.window
        self.active = True
        self._before = {
            "theme": w.theme_preference, "sidebar": w.sidebar.isVisible(),
            "lesson": w.lesson_pane.isVisible(), "maximized": w.isMaximized(),
            "fullscreen": w.isFullScreen(), "geometry": w.saveGeometry(),
        }
        w.sidebar.hide()
        w.lesson_pane.hide()
        w.menuBar().hide()
        w.statusBar().hide()
        w.apply_theme("projector", remember=False)
        w.showFullScreen()
        self._steps = 0
        w.presentation_changed(True)

    def leave(self) -> None:
        if not self.active:
            return
        w = self.window
        self.active = False
        self.blank.hide()
        before = self._before
        w.apply_theme(str(before.get("theme", "system")), remember=False)
        w.sidebar.setVisible(bool(before.get("sidebar", True)))
        if not w.kiosk:
            w.menuBar().show()
            w.statusBar().show()
        if before.get("lesson"):
            w.explain()
        if not before.get("fullscreen") and not w.kiosk:
            w.showMaximized() if before.get("maximized") else w.showNormal()
            if not before.get("maximized") and before.get("geometry") is not None:
                w.restoreGeometry(before["geometry"])
        w.presentation_changed(False)

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
            model.set_playing(False)
            with model.batch():
                model.rewind()
                for _ in range(self._steps):
                    model.step()
            return
        if self.window.step_figure(-1, wrap=False):
            self._arrived(forward=False)

    def _arrived(self, forward: bool) -> None:
        model = self._model()
        self._steps = 0
        if forward and isinstance(model, AnimatedModel):
            model.set_playing(False)
            model.rewind()

    def figure_shown(self) -> None:
        """Called by the window when another figure is shown by any route."""
        self._steps = 0

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
