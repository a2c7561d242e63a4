"""A window over the whole screen, with or without a window manager (kiosk, lecture mode).

`showFullScreen()` alone only asks the window manager; on an X session without one (X
started straight into the app) nobody answers and the window keeps its size in a corner.
So the cover also makes the window frameless and on top and gives it the screen's
geometry itself, again whenever the screen's geometry changes (a new resolution) or the
window moves to another screen.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QScreen
from PySide6.QtWidgets import QWidget

COVER_FLAGS = Qt.FramelessWindowHint | Qt.WindowStaysOnTopHint


class ScreenCover(QObject):
    """Puts `window` over its whole screen (`cover`) and back (`uncover`)."""

    def __init__(self, window: QWidget) -> None:
        super().__init__(window)
        self.window = window
        self.active = False
        self._flags = window.windowFlags()
        self._screen: QScreen | None = None
        self._handle = None  # the QWindow whose screenChanged we follow

    def cover(self) -> None:
        w = self.window
        if not self.active:
            self._flags = w.windowFlags()
        self.active = True
        if (w.windowFlags() & COVER_FLAGS) != COVER_FLAGS:
            w.setWindowFlags(self._flags | COVER_FLAGS)  # hides the window: shown below
        self._fit()
        w.showFullScreen()
        self._fit()  # a platform that answered showFullScreen may have moved it
        w.raise_()
        w.activateWindow()  # with no window manager nobody else gives it the keyboard
        handle = w.windowHandle()
        if handle is not None and handle is not self._handle:
            self._handle = handle
            handle.screenChanged.connect(self._follow)
        self._follow(w.screen())

    def uncover(self) -> None:
        """Back to the window's own flags; it is hidden by that, the caller shows it."""
        if not self.active:
            return
        self.active = False
        self._follow(None)
        self.window.setWindowFlags(self._flags)

    def _follow(self, screen: QScreen | None) -> None:
        if self._screen is not None:
            self._screen.geometryChanged.disconnect(self._fit)
        self._screen = screen if self.active else None
        if self._screen is not None:
            self._screen.geometryChanged.connect(self._fit)
            self._fit()

    def _fit(self, *_changed: object) -> None:
        w = self.window
        screen = w.screen()
        if not self.active or screen is None:
            return
        if w.geometry() != screen.geometry():
            w.setGeometry(screen.geometry())  # Qt drops the full-screen state for this:
        if w.isVisible() and not w.isFullScreen():
            w.setWindowState(w.windowState() | Qt.WindowFullScreen)  # ask for it again
