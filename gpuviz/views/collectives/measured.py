"""What File > Open measurements adds to 7.3 and 7.4: the measured dots' look and the
buttons that apply the fit or drop the measurements (`models.collectives.MeasuredFigure`)."""

from __future__ import annotations

import numpy as np
from PySide6.QtWidgets import QHBoxLayout, QPushButton, QWidget

from gpuviz import theme
from gpuviz.core.plots import Dots
from gpuviz.models.collectives import MEASURED_POINTS, MeasuredFigure

MEASURED_LABEL = "nccl-tests, measured"
MEASURED_DOT = 8  # px: smaller than the figures' 11 px markers of the model
MEASURED_ROLE = "text"  # a colour no curve of 7.3 or 7.4 has


def measured_dots(view) -> Dots:  # noqa: ANN001 - a PlotItem or ViewBox
    """Room for every dot a measurement can have, made once; `set_measured` fills it."""
    dots = Dots(view, MEASURED_POINTS, MEASURED_DOT, theme.color(MEASURED_ROLE))
    dots.setZValue(5)  # over the model's curves
    return dots


def set_measured(dots: Dots, xs: np.ndarray, ys: np.ndarray) -> None:
    """Show these points (fewer than the room: the rest hidden)."""
    hidden = np.full(MEASURED_POINTS - len(xs), np.nan)
    dots.set_points(np.concatenate([xs, hidden]), np.concatenate([ys, hidden]))


class MeasurementButtons(QWidget):
    """Apply fit and Clear measurements, shown while the figure has measurements."""

    def __init__(self, model: MeasuredFigure, apply_tip: str) -> None:
        super().__init__()
        self.model = model
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        self.apply = QPushButton("Apply fit")
        self.apply.setToolTip(apply_tip)
        self.apply.clicked.connect(model.apply_fit)
        self.clear = QPushButton("Clear measurements")
        self.clear.setToolTip("Drop the measured dots and the fit")
        self.clear.clicked.connect(model.clear_measurements)
        for button in (self.apply, self.clear):
            row.addWidget(button)
        self.sync()

    def sync(self) -> None:
        self.setVisible(self.model.measured is not None)
