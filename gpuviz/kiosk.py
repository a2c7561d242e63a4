"""Kiosk mode: gpuviz on a museum or lab-open-day screen that visitors cannot break.

`gpuviz --kiosk [--lessons 1-4] [--idle-reset 120] [--config kiosk.toml]` opens full
screen with no menus, no file dialogs and no export; Ctrl+Q, Alt+F4, Esc and F11 do
nothing. The operator leaves with Ctrl+Alt+Shift+Q (then the PIN, when one is set).

`--figure L.F` picks the figure it starts at (one of the chosen lessons; default: their
first), and `--set step=N` or `step=end` the step an animated one opens at. After
`idle_reset` seconds without input a countdown offers "Keep exploring" or "Start over";
starting over resets every figure to its defaults and goes back to the figure and step
it started at. With `attract` > 0 the kiosk then steps through the figures every
`attract` seconds (playing the animated ones) until someone touches it.

The TOML file holds the same settings, at top level or in a [kiosk] table:

    lessons = "1-4"        # or [1, 2, 3, 4]; default: every lesson
    idle_reset = 120       # seconds without input before the countdown; 0 = never
    countdown = 15         # seconds the countdown lasts
    attract = 20           # seconds per figure of the attract loop; 0 = off
    pin = "4711"           # asked when the operator leaves; default: none
    theme = "projector"    # system, dark, light or projector
    figure = "6.3"         # where it starts (and starts over); --figure wins
    step = "end"           # an animated start figure's step: a number or "end"

The kiosk wraps the main window from outside (gpuviz.app composes them): it keeps only
the window's browsing actions, covers the screen (gpuviz.screen) and refuses to close.
"""

from __future__ import annotations

import math
import tomllib
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import shiboken6
from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import (
    QApplication,
    QFrame,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from gpuviz import catalog, theme
from gpuviz.screen import ScreenCover

if TYPE_CHECKING:
    from gpuviz.main_window import MainWindow

OPERATOR_EXIT_KEYS = "Ctrl+Alt+Shift+Q"
THEMES = ("system", "dark", "light", "projector")
LIMITS = {  # name: (minimum, maximum); 0 also allowed where noted in ZERO_ALLOWED
    "idle_reset": (1.0, 86_400.0),
    "countdown": (1.0, 600.0),
    "attract": (2.0, 3_600.0),
}
ZERO_ALLOWED = {"idle_reset", "attract"}
# The window's actions a visitor keeps: browsing and reading, no files, no quitting.
VISITOR_ACTIONS = ("next", "previous", "filter", "reset", "explain", "lesson", "questions")
MAX_CONFIG_BYTES = 100_000
ACTIVITY_EVENTS = {QEvent.KeyPress, QEvent.MouseButtonPress, QEvent.MouseMove,
                   QEvent.Wheel, QEvent.TouchBegin, QEvent.TouchUpdate, QEvent.TabletPress}


class KioskConfigError(ValueError):
    """A kiosk setting we refuse, with the sentence that says why."""


@dataclass(frozen=True)
class KioskConfig:
    lessons: tuple[int, ...] | None = None  # None: every lesson
    idle_reset: float = 120.0
    countdown: float = 15.0
    attract: float = 0.0
    pin: str | None = None
    theme: str | None = None
    figures: tuple[str, ...] = field(default=(), compare=False)
    start: str | None = None  # the figure it starts at and starts over at; None: the first
    step: int | str | None = None  # the step the start figure opens at (animated ones)

    def with_figures(self) -> KioskConfig:
        """The same config with `figures`: the built figures of the chosen lessons."""
        chosen = [spec.number for lesson in catalog.LESSONS
                  if self.lessons is None or lesson.number in self.lessons
                  for spec in lesson.figures]
        if not chosen:
            raise KioskConfigError("the chosen lessons have no figures yet")
        return replace(self, figures=tuple(chosen))

    def starting_at(self, number: str | None, step: int | str | None = None) -> KioskConfig:
        """The same config starting at figure `number`, which must be one it shows (None:
        the first), at `step` of its animation (checked at the figure's defaults, which
        is how the kiosk shows it)."""
        if number is not None and number not in self.figures:
            raise KioskConfigError(f"figure {number} is not in the chosen lessons")
        if step is not None:
            try:
                step = catalog.figure(number or self.figures[0]).parse_step(str(step))
            except ValueError as error:
                raise KioskConfigError(f"step: {error}") from None
        return replace(self, start=number, step=step)

    @property
    def first(self) -> str:
        return self.start or self.figures[0]


def parse_lessons(value: Any) -> tuple[int, ...]:
    """"1-4", "1,3,5-6", 3 or [1, 2] -> lesson numbers, each checked against the catalog."""
    known = {lesson.number for lesson in catalog.LESSONS}
    numbers: list[int] = []
    if isinstance(value, bool):
        raise KioskConfigError("lessons: expected text like '1-4' or a list of numbers")
    if isinstance(value, int):
        parts: list[Any] = [value]
    elif isinstance(value, list):
        parts = value
    elif isinstance(value, str):
        parts = [p.strip() for p in value.split(",") if p.strip()]
    else:
        raise KioskConfigError("lessons: expected text like '1-4' or a list of numbers")
    for part in parts:
        if isinstance(part, int) and not isinstance(part, bool):
            numbers.append(part)
            continue
        if not isinstance(part, str):
            raise KioskConfigError(f"lessons: {part!r} is not a lesson number")
        first, dash, last = part.partition("-")
        try:
            low = int(first)
            high = int(last) if dash else low
        except ValueError:
            raise KioskConfigError(f"lessons: '{part}' is not a number or a range like 1-4"
                                   ) from None
        if high < low:
            raise KioskConfigError(f"lessons: the range '{part}' is backwards")
        numbers.extend(range(low, high + 1))
    if not numbers:
        raise KioskConfigError("lessons: no lesson given")
    unknown = sorted(set(numbers) - known)
    if unknown:
        shown = ", ".join(map(str, unknown[:3])) + (" …" if len(unknown) > 3 else "")
        raise KioskConfigError(f"lessons: no lesson {shown}; "
                               f"lessons are {min(known)} to {max(known)}")
    return tuple(sorted(set(numbers)))


def _seconds(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise KioskConfigError(f"{name}: expected a number of seconds, got {value!r}")
    number = float(value)
    low, high = LIMITS[name]
    if number == 0 and name in ZERO_ALLOWED:
        return 0.0
    if not math.isfinite(number) or not low <= number <= high:
        zero = " (or 0 to turn it off)" if name in ZERO_ALLOWED else ""
        raise KioskConfigError(f"{name}: {value!r} is out of range; allowed: "
                               f"{low:g} to {high:g} seconds{zero}")
    return number


def config_from_mapping(data: dict[str, Any], base: KioskConfig | None = None) -> KioskConfig:
    if isinstance(data.get("kiosk"), dict):
        extra = set(data) - {"kiosk"}
        if extra:
            raise KioskConfigError(f"unknown setting {sorted(extra)[0]!r} outside [kiosk]")
        data = data["kiosk"]
    config = base or KioskConfig()
    allowed = {"lessons", "idle_reset", "countdown", "attract", "pin", "theme", "figure",
               "step"}
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise KioskConfigError(f"unknown setting '{unknown[0]}'; settings: "
                               f"{', '.join(sorted(allowed))}")
    changes: dict[str, Any] = {}
    if "lessons" in data:
        changes["lessons"] = parse_lessons(data["lessons"])
    for name in ("idle_reset", "countdown", "attract"):
        if name in data:
            changes[name] = _seconds(name, data[name])
    if "pin" in data:
        pin = data["pin"]
        if isinstance(pin, int) and not isinstance(pin, bool):
            pin = str(pin)
        if not isinstance(pin, str) or not 1 <= len(pin) <= 32 or pin != pin.strip():
            raise KioskConfigError("pin: expected text of 1 to 32 characters, no spaces "
                                   "around it")
        changes["pin"] = pin
    if "theme" in data:
        if data["theme"] not in THEMES:
            raise KioskConfigError(f"theme: {data['theme']!r} is not one of "
                                   f"{', '.join(THEMES)}")
        changes["theme"] = data["theme"]
    if "figure" in data:
        try:
            changes["start"] = catalog.figure(str(data["figure"])).number
        except KeyError as error:
            raise KioskConfigError(f"figure: {error.args[0]}") from None
    if "step" in data:  # checked against its figure once the lessons are known
        if isinstance(data["step"], bool) or not isinstance(data["step"], int | str):
            raise KioskConfigError(f"step: expected a number or \"end\", got {data['step']!r}")
        changes["step"] = data["step"]
    return replace(config, **changes)


def load_config(path: Path) -> KioskConfig:
    try:
        if path.stat().st_size > MAX_CONFIG_BYTES:
            raise KioskConfigError(f"{path}: too large for a kiosk configuration")
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise KioskConfigError(f"{path}: not valid TOML: {error}") from None
    except UnicodeDecodeError:
        raise KioskConfigError(f"{path}: not a text file") from None
    except OSError as error:
        raise KioskConfigError(f"{path}: {error.strerror or error}") from None
    try:
        return config_from_mapping(data)
    except KioskConfigError as error:
        raise KioskConfigError(f"{path}: {error}") from None


def live_qobjects() -> Counter[str]:
    """The QObjects alive now, by class: every widget, and the other QObjects made from
    Python (models, timers, layouts, scenes...), to check that a kiosk running all day
    keeps as many. Not by window.findChildren(QObject): that wraps every child Qt made
    itself (a scroll bar, a text document), and PySide keeps those wrappers after Qt
    deletes the child, so counting that way would itself leak a few hundred objects per
    attract loop."""
    widgets = QApplication.allWidgets()
    others = [wrapper for wrapper in shiboken6.getAllValidWrappers()
              if isinstance(wrapper, QObject) and not isinstance(wrapper, QWidget)
              and shiboken6.createdByPython(wrapper)]
    return Counter(type(obj).__name__ for obj in [*widgets, *others])


class Countdown(QWidget):
    """A dimmed cover over the window with a card: "Still there?", the seconds left,
    Keep exploring and Start over."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setAttribute(Qt.WA_StyledBackground, True)
        self.setObjectName("kioskCover")
        card = QFrame()
        card.setObjectName("kioskCard")
        self.title = QLabel("<b>Still there?</b>")
        self.title.setAlignment(Qt.AlignCenter)
        self.label = QLabel()
        self.label.setAlignment(Qt.AlignCenter)
        self.keep = QPushButton("Keep exploring")
        self.keep.setDefault(True)
        self.start_over = QPushButton("Start over")
        for button in (self.keep, self.start_over):
            button.setMinimumSize(180, 52)
        buttons = QHBoxLayout()
        buttons.setSpacing(16)
        buttons.addWidget(self.keep)
        buttons.addWidget(self.start_over)
        inner = QVBoxLayout(card)
        inner.setContentsMargins(32, 24, 32, 24)
        inner.setSpacing(14)
        inner.addWidget(self.title)
        inner.addWidget(self.label)
        inner.addLayout(buttons)
        outer = QVBoxLayout(self)
        outer.addStretch(1)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(card)
        row.addStretch(1)
        outer.addLayout(row)
        outer.addStretch(1)
        self._restyle()
        # Qt keeps the font a widget with a style sheet (and its children) had when the
        # sheet was set: set it again when the look (the lecture scale) changes.
        theme.look.changed.connect(self._restyle)
        self.hide()

    def _restyle(self) -> None:
        font = QApplication.font()
        font.setPointSizeF(font.pointSizeF() * 1.8)
        self.title.setFont(font)
        self.setStyleSheet("#kioskCover { background-color: rgba(0, 0, 0, 150); }"
                           "#kioskCard { background-color: palette(window); "
                           "border: 3px solid palette(highlight); border-radius: 10px; }")

    def set_seconds(self, seconds: int) -> None:
        unit = "second" if seconds == 1 else "seconds"
        self.label.setText(f"The figures go back to the start in {seconds} {unit}.")

    def pop_up(self) -> None:
        self.setGeometry(self.parentWidget().rect())
        self.raise_()
        self.show()
        self.keep.setFocus()


class Kiosk(QObject):
    """Kiosk mode around a main window: its few actions, the whole screen, idle detection,
    the countdown, starting over, the attract loop and the exit."""

    def __init__(self, window: MainWindow, config: KioskConfig) -> None:
        super().__init__(window)
        self.window = window
        self.config = config if config.figures else config.with_figures()
        self.operator_leaving = False
        window.keep_actions(VISITOR_ACTIONS)
        window.docks_float = False
        window.menuBar().hide()
        window.statusBar().clearMessage()  # the window's key hints are not a visitor's
        window.add_action("operator_exit", "Leave kiosk (operator)", self.request_exit,
                          OPERATOR_EXIT_KEYS)
        self.screen_cover = ScreenCover(window)
        self.countdown = Countdown(window)
        self.countdown.keep.clicked.connect(self.keep_exploring)
        self.countdown.start_over.clicked.connect(self.start_over)
        self.pin_dialog: QInputDialog | None = None
        self.remaining = 0
        self._last_mouse = None

        self.idle_timer = QTimer(self)
        self.idle_timer.setSingleShot(True)
        self.idle_timer.timeout.connect(self.show_countdown)
        self.tick_timer = QTimer(self)
        self.tick_timer.setInterval(1000)
        self.tick_timer.timeout.connect(self._tick)
        self.attract_timer = QTimer(self)
        self.attract_timer.timeout.connect(self._attract_step)
        app = QApplication.instance()
        if app is not None:
            app.installEventFilter(self)
        self.restart_idle()

    @staticmethod
    def of(window: QWidget) -> Kiosk | None:
        """The kiosk wrapping `window`, if any."""
        return window.findChild(Kiosk)

    def show(self) -> None:
        """The window over the whole screen."""
        self.screen_cover.cover()

    # --- idle ----------------------------------------------------------------------------
    def restart_idle(self) -> None:
        if self.config.idle_reset > 0:
            self.idle_timer.start(int(self.config.idle_reset * 1000))

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        kind = event.type()
        if watched is self.window:  # the application's filter sees the window's events too
            if kind == QEvent.Close and not self.operator_leaving:
                event.ignore()  # Alt+F4 and the window manager's close button do nothing
                return True
            if kind == QEvent.Resize and self.countdown.isVisible():
                self.countdown.pop_up()
        if kind in ACTIVITY_EVENTS and not self.countdown.isVisible():
            if kind == QEvent.MouseMove:
                # Showing another figure can make Qt send a move with the same position.
                position = event.globalPosition().toPoint()
                if position == self._last_mouse:
                    return False
                self._last_mouse = position
            self.attract_timer.stop()
            self.restart_idle()
        return False

    def show_countdown(self) -> None:
        if self.attract_timer.isActive():
            return
        self.remaining = max(int(math.ceil(self.config.countdown)), 1)
        self.countdown.set_seconds(self.remaining)
        self.countdown.pop_up()
        self.tick_timer.start()

    def _tick(self) -> None:
        self.remaining -= 1
        if self.remaining <= 0:
            self.start_over(attract=True)
        else:
            self.countdown.set_seconds(self.remaining)

    def keep_exploring(self) -> None:
        self.tick_timer.stop()
        self.countdown.hide()
        self.restart_idle()

    def start_over(self, attract: bool = False) -> None:
        """Every figure back to its defaults and the figure the kiosk started at shown."""
        self.tick_timer.stop()
        self.countdown.hide()
        self.window.reset_everything(self.config.first)
        self.go_to_start_step()
        if attract and self.config.attract > 0:
            self.attract_timer.start(int(self.config.attract * 1000))
            self._play_current()
        else:
            self.restart_idle()

    def go_to_start_step(self) -> None:
        """The figure it starts at to its step, if the config gives one."""
        if self.config.step is not None:
            self.window.model(self.config.first).go_to_step(self.config.step)

    # --- attract loop --------------------------------------------------------------------
    def _attract_step(self) -> None:
        self.window.step_figure(1)
        self._play_current()

    def _play_current(self) -> None:
        model = self.window.models.get(self.window.current or "")
        if model is not None and hasattr(model, "set_playing"):
            model.rewind()
            model.set_playing(True)

    @property
    def attracting(self) -> bool:
        return self.attract_timer.isActive()

    # --- leaving -------------------------------------------------------------------------
    def request_exit(self) -> None:
        """The operator chord: leave at once, or after the PIN."""
        if not self.config.pin:
            self.leave()
            return
        dialog = QInputDialog(self.window)
        dialog.setWindowTitle("Leave kiosk mode")
        dialog.setLabelText("Operator PIN:")
        dialog.setTextEchoMode(QLineEdit.Password)
        dialog.textValueSelected.connect(self._check_pin)
        self.pin_dialog = dialog
        dialog.open()

    def _check_pin(self, text: str) -> None:
        self.pin_dialog = None
        if text == self.config.pin:
            self.leave()
        else:
            self.window.statusBar().showMessage("Wrong PIN.", 3000)

    def leave(self) -> None:
        self.operator_leaving = True
        self.stop()
        self.window.close()

    def stop(self) -> None:
        for timer in (self.idle_timer, self.tick_timer, self.attract_timer):
            timer.stop()
        app = QApplication.instance()
        if app is not None:
            app.removeEventFilter(self)
