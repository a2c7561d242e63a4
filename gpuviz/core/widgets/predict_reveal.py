"""The predict-first panel: a guess, a Reveal button, and the answer beside the guess."""

from __future__ import annotations

from PySide6.QtWidgets import QFrame, QLabel, QPushButton, QVBoxLayout, QWidget

from gpuviz import theme
from gpuviz.core.model import PredictFirstModel
from gpuviz.core.widgets.controls import CONTROL_COLUMN_WIDTH, control_for
from gpuviz.core.widgets.panels import MessageLabel


class PredictReveal(QFrame):
    """Predict first: the learner sets a guess (the model's `guess_parameter`), presses
    Reveal (its `revealed` parameter), and sees guess and answer side by side. The model
    clears `revealed` whenever the guess changes, so a new guess hides the answer again."""

    def __init__(self, model: PredictFirstModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        self.setFrameShape(QFrame.StyledPanel)
        self.guess = control_for(model, model.guess_parameter)
        self.button = QPushButton("Reveal")
        self.button.setToolTip("Show the answer next to your guess")
        self.button.clicked.connect(lambda: model.set("revealed", True))
        self.result = MessageLabel(
            width=lambda: int((CONTROL_COLUMN_WIDTH - 40) * theme.ui_scale()))
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("<b>Predict first</b>"))
        layout.addWidget(self.guess)
        layout.addWidget(self.button)
        layout.addWidget(self.result)
        self.sync()

    def sync(self) -> None:
        self.guess.sync()
        shown = self.model.revealed
        self.button.setEnabled(not shown)
        self.result.show_message(self.model.answer_text() if shown else
                                 "Set your guess, then press Reveal.")
