"""Play/Pause, Step, Rewind and speed for an animated figure."""

from __future__ import annotations

from PySide6.QtCore import QSignalBlocker
from PySide6.QtWidgets import QHBoxLayout, QPushButton, QWidget

from gpuviz.core.model import AnimatedModel
from gpuviz.core.widgets.controls import Combo


class TimeControls(QWidget):
    """Play/Pause, Step, Rewind and speed for an AnimatedModel."""

    SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0)

    def __init__(self, model: AnimatedModel, parent: QWidget | None = None,
                 step_label: str = "Step") -> None:
        super().__init__(parent)
        self.model = model
        self.play = QPushButton("Play")
        self.play.setToolTip("Play or pause the animation (Space)")
        self.play.clicked.connect(model.toggle_playing)
        self.step = QPushButton(step_label)
        self.step.setToolTip("Advance by one step")
        self.step.clicked.connect(model.step)
        self.rewind = QPushButton("Rewind")
        self.rewind.setToolTip("Back to the start, keeping the settings")
        self.rewind.clicked.connect(model.rewind)
        self.speed = Combo()
        self.speed.setToolTip("Animation speed")
        self.speed.setAccessibleName("Speed")
        for factor in self.SPEEDS:
            self.speed.addItem(f"{factor:g}×", factor)
        self.speed.currentIndexChanged.connect(
            lambda i: model.set("speed", self.speed.itemData(i)) if i >= 0 else None)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 2, 0, 2)
        for widget in (self.play, self.step, self.rewind, self.speed):
            layout.addWidget(widget)
        model.playing_changed.connect(self.sync)
        self.sync()

    def sync(self, *_: object) -> None:
        self.play.setText("Pause" if self.model.playing else "Play")
        with QSignalBlocker(self.speed):
            index = self.speed.findData(self.model.speed)
            self.speed.setCurrentIndex(index if index >= 0 else self.SPEEDS.index(1.0))
