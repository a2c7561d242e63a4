"""Edit > Preferences: theme, text size, reduced motion, and Restore defaults; the user's
own GPUs and models, with Remove."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QWidget,
)

from gpuviz import imports
from gpuviz.state import TEXT_SCALES, THEME_CHOICES, Preferences

OWN_LIST_MAX_WIDTH = 760  # px: the list of the user's GPUs and models grows to this
THEME_LABELS = {"system": "Follow the system", "dark": "Dark", "light": "Light",
                "projector": "Projector (white, big type, thick lines)"}


class PreferencesDialog(QDialog):
    own_files_changed = Signal()  # a GPU or model of the user's was removed

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
        self.own = QListWidget()
        self.own.setMaximumHeight(6 * self.own.fontMetrics().height())
        self.own.setToolTip("Added with File > Add GPU… or Add model…, or dropped in the "
                            "folder below; every GPU and model selector lists them")
        self.remove = QPushButton("&Remove")
        self.remove.setToolTip("Take the selected GPU or model out of the selectors and "
                               "its copy out of the folder (your original file stays)")
        self.remove.clicked.connect(self.remove_selected)
        self.own.currentItemChanged.connect(
            lambda item, _old: self.remove.setEnabled(item is not None))
        folder = QLabel(str(imports.user_folder()))
        folder.setTextInteractionFlags(Qt.TextSelectableByMouse)
        folder.setToolTip("GPU files (*.toml) go in its gpus folder, model configs "
                          "(*.json) in its models folder; both are read at every start")
        form.addRow("Your GPUs and\nmodels:", self.own)
        form.addRow("", self.remove)
        form.addRow("Their folder:", folder)
        form.addRow(buttons)
        self.show_preferences(prefs)
        self.list_own_files()

    def list_own_files(self) -> None:
        self.own.clear()
        for entry in imports.user_entries():
            item = QListWidgetItem(entry.summary())
            item.setData(Qt.UserRole, (entry.kind, entry.id))
            self.own.addItem(item)
        if not self.own.count():
            self.own.addItem(QListWidgetItem("None yet"))
            self.own.item(0).setFlags(Qt.NoItemFlags)
        self.remove.setEnabled(False)
        # Wide enough for the longest line (a model's two counts), within reason.
        widest = max(self.own.fontMetrics().horizontalAdvance(self.own.item(row).text())
                     for row in range(self.own.count()))
        self.own.setMinimumWidth(min(widest + 3 * self.own.fontMetrics().height(),
                                     OWN_LIST_MAX_WIDTH))

    def remove_selected(self) -> None:
        item = self.own.currentItem()
        if item is None or item.data(Qt.UserRole) is None:
            return
        imports.remove(*item.data(Qt.UserRole))
        self.list_own_files()
        self.own_files_changed.emit()

    def show_preferences(self, prefs: Preferences) -> None:
        self.theme.setCurrentIndex(max(self.theme.findData(prefs.theme), 0))
        index = min(range(len(TEXT_SCALES)),
                    key=lambda i: abs(TEXT_SCALES[i] - prefs.text_scale))
        self.text_scale.setCurrentIndex(index)
        self.reduced_motion.setChecked(prefs.reduced_motion)

    def preferences(self) -> Preferences:
        return Preferences(str(self.theme.currentData()), float(self.text_scale.currentData()),
                           self.reduced_motion.isChecked())
