"""Edit > Preferences: theme, text size, reduced motion, and Restore defaults."""

from __future__ import annotations

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QWidget,
)

from gpuviz.state import TEXT_SCALES, THEME_CHOICES, Preferences

THEME_LABELS = {"system": "Follow the system", "dark": "Dark", "light": "Light",
                "projector": "Projector (white, big type, thick lines)"}


class PreferencesDialog(QDialog):
    def __init__(self, prefs: Preferences, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Preferences")
        self.theme = QComboBox()
        for name in THEME_CHOICES:
            self.theme.addItem(THEME_LABELS[name], name)
        self.theme.setToolTip("Colours of the window and the figures; the projector theme "
                              "is also what lecture mode (F5) uses")
        self.text_scale = QComboBox()
        for scale in TEXT_SCALES:
            self.text_scale.addItem(f"{scale:.0%}", scale)
        self.text_scale.setToolTip("Size of the text in the window, relative to normal")
        self.reduced_motion = QCheckBox("Reduce motion")
        self.reduced_motion.setToolTip("Animations jump straight to their end state "
                                       "instead of moving")
        buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel
                                   | QDialogButtonBox.RestoreDefaults)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        buttons.button(QDialogButtonBox.RestoreDefaults).clicked.connect(
            lambda: self.show_preferences(Preferences()))
        form = QFormLayout(self)
        form.addRow("&Theme:", self.theme)
        form.addRow("Text &size:", self.text_scale)
        form.addRow("", self.reduced_motion)
        form.addRow(buttons)
        self.show_preferences(prefs)

    def show_preferences(self, prefs: Preferences) -> None:
        self.theme.setCurrentIndex(max(self.theme.findData(prefs.theme), 0))
        index = min(range(len(TEXT_SCALES)),
                    key=lambda i: abs(TEXT_SCALES[i] - prefs.text_scale))
        self.text_scale.setCurrentIndex(index)
        self.reduced_motion.setChecked(prefs.reduced_motion)

    def preferences(self) -> Preferences:
        return Preferences(str(self.theme.currentData()), float(self.text_scale.currentData()),
                           self.reduced_motion.isChecked())
