"""The one animation clock: steps the visible figure's model at the display rate.

A precise QTimer fires about every 16 ms; each tick passes the measured wall time since
the previous tick (capped, so a stall does not make the animation jump) to the model.
It runs only while the shown figure is playing, and stops when the figure is hidden.
"""

from __future__ import annotations

import time
import weakref

from PySide6.QtCore import QObject, Qt, QTimer

from gpuviz.core.model import AnimatedModel

FRAME_INTERVAL_MS = 16
MAX_DT_S = 0.1


# Every clock, so tests can check that none is left running.
CLOCKS: weakref.WeakSet[AppClock] = weakref.WeakSet()


class AppClock(QObject):
    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        CLOCKS.add(self)
        self._timer = QTimer(self)
        self._timer.setTimerType(Qt.PreciseTimer)
        self._timer.setInterval(FRAME_INTERVAL_MS)
        self._timer.timeout.connect(self._tick)
        self._model: AnimatedModel | None = None
        self._last = 0.0
        self.reduced_motion = False

    def follow(self, model: object | None) -> None:
        """Drive `model` (the visible figure's), or nothing when it is not animated."""
        if self._model is not None:
            self._model.playing_changed.disconnect(self._on_playing)
        self._model = model if isinstance(model, AnimatedModel) else None
        if self._model is not None:
            self._model.playing_changed.connect(self._on_playing)
        self._on_playing(self._model is not None and self._model.playing)

    def stop(self) -> None:
        if self._model is not None:
            self._model.set_playing(False)
        self.follow(None)

    @property
    def running(self) -> bool:
        return self._timer.isActive()

    def _on_playing(self, playing: bool) -> None:
        if playing:
            self._last = time.perf_counter()
            self._timer.start()
        else:
            self._timer.stop()

    def _tick(self) -> None:
        now = time.perf_counter()
        dt = min(now - self._last, MAX_DT_S)
        self._last = now
        if self._model is None:
            self._timer.stop()
            return
        if self.reduced_motion:
            dt = 1e9  # jump straight to the end state
        self._model.advance(dt)
