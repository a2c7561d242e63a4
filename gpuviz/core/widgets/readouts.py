"""The panel of a figure's readouts: label, value and unit per row, updated in place."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QPoint, Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QFormLayout, QFrame, QLabel, QMenu, QWidget

from gpuviz import theme
from gpuviz.core.model import FigureModel
from gpuviz.core.widgets.controls import CONTROL_COLUMN_WIDTH, fix_size


class ReadoutPanel(QFrame):
    """Label: value unit, for every readout of the model, updated in place.

    The values are plain labels, copied through the context menu or the main window's
    Copy readouts (Ctrl+Alt+C): a mouse-selectable
    label rebuilds a text document on every new value (~0.3 ms each, measured)."""

    def __init__(self, model: FigureModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        self.setFrameShape(QFrame.StyledPanel)
        self.setContextMenuPolicy(Qt.CustomContextMenu)
        self.customContextMenuRequested.connect(self._show_copy_menu)
        self.form = QFormLayout(self)
        self.form.setContentsMargins(8, 6, 8, 6)
        self.form.setHorizontalSpacing(12)
        self.form.setVerticalSpacing(1)
        self.rows: dict[str, tuple[QLabel, QLabel]] = {}
        self.shown: dict[str, str | None] = {}
        self.name_width = self.value_width = 0
        # The values end at the panel's right edge, with or without the column's scroll
        # bar: the widths follow the panel's own (see resizeEvent), which may shrink.
        self._panel_width = int(CONTROL_COLUMN_WIDTH * theme.ui_scale())
        self.setMinimumWidth(1)
        self._names: list[str] = []
        # Readouts the figure's comment already states in a sentence (a view sets it in
        # build): left out of the panel where a lecture screen has no room for both;
        # `--readout` and the questions still have them.
        self.left_out: frozenset[str] = frozenset()
        self.sync()

    def sync(self) -> None:
        readouts = {key: readout for key, readout in self.model.readouts().items()
                    if key not in self.left_out}
        if list(readouts) != list(self.rows):
            self._build_rows(readouts)
        names = [readout.label for readout in readouts.values()]
        if names != self._names:
            self._names = names
            needed = max((self.fontMetrics().horizontalAdvance(name) for name in names),
                         default=0) + 2
            if needed > self.name_width:  # grow for a longer name, never shrink
                self._set_column_widths(needed)
        for (key, readout), label in zip(readouts.items(), names, strict=True):
            name, value = self.rows[key]
            if name.text() != label:
                name.setText(label)
            text = readout.text
            if self.shown[key] != text:
                self.shown[key] = text
                shortened = value.fontMetrics().elidedText(text, Qt.ElideRight,
                                                           self.value_width)
                value.setText(shortened)
                tip = text if shortened != text else ""  # the full text, when shortened
                if value.toolTip() != tip:
                    value.setToolTip(tip)

    def _build_rows(self, readouts: dict[str, object]) -> None:
        while self.form.rowCount():
            self.form.removeRow(0)
        self.rows, self.shown, self.name_width, self._names = {}, {}, 0, []
        for key in readouts:
            name, value = QLabel(), QLabel()
            for label in (name, value):
                label.setTextFormat(Qt.PlainText)
                # Opaque: a new value repaints its label alone, not the panel beneath.
                label.setAutoFillBackground(True)
            value.setAlignment(Qt.AlignRight | Qt.AlignVCenter)
            self.form.addRow(name, value)
            self.rows[key] = (name, value)
            self.shown[key] = None

    def _set_column_widths(self, name_width: int) -> None:
        """Fixed-size labels: a new value or name then repaints its label alone instead
        of laying out the column again."""
        margins = self.form.contentsMargins()
        self.name_width = name_width
        self.value_width = max(60, self._panel_width - 2 * self.frameWidth()
                               - name_width - self.form.horizontalSpacing()
                               - margins.left() - margins.right() - 4)
        for name, value in self.rows.values():
            fix_size(name, name_width)
            fix_size(value, self.value_width)
        for key in self.shown:
            self.shown[key] = None  # elide again at the new width

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802
        super().changeEvent(event)
        if event.type() == QEvent.FontChange and self.rows:
            # A new look or text size: measure the names again, from nothing.
            self.name_width, self._names = 0, []
            for key in self.shown:
                self.shown[key] = None
            self.sync()

    def resizeEvent(self, event: object) -> None:  # noqa: N802
        super().resizeEvent(event)
        if self.width() != self._panel_width:
            self._panel_width = self.width()
            if self.name_width:
                self._set_column_widths(self.name_width)
                self.sync()

    def texts(self) -> dict[str, str]:
        return {key: text or "" for key, text in self.shown.items()}

    def row_text(self, key: str) -> str:
        return f"{self.rows[key][0].text()}\t{self.shown[key]}"

    def _show_copy_menu(self, position: QPoint) -> None:
        menu = QMenu(self)
        under_mouse = self.childAt(position)
        for key, (name, value) in self.rows.items():
            if under_mouse in (name, value):
                menu.addAction(f"Copy {name.text()}", lambda key=key: QGuiApplication
                               .clipboard().setText(self.row_text(key)))
        menu.addAction("Copy all readouts", self.copy_all)
        menu.exec(self.mapToGlobal(position))

    def copy_all(self) -> None:
        """Every readout as "label<TAB>value unit" lines on the clipboard."""
        QGuiApplication.clipboard().setText("\n".join(self.row_text(key) for key in self.rows))
