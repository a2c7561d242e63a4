"""Help > Keyboard shortcuts: a two-column table, key | what it does, sized to its rows."""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)


class ShortcutsDialog(QDialog):
    """`rows` are (what it does, keys) pairs. The table takes the application font, so it
    grows with the look (projector, text size); Esc or Close closes it."""

    def __init__(self, rows: Iterable[tuple[str, str]], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        rows = list(rows)
        self.table = QTableWidget(len(rows), 2)
        self.table.setHorizontalHeaderLabels(["Key", "What it does"])
        self.table.setAccessibleName("Keyboard shortcuts")
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.table.setSelectionMode(QAbstractItemView.NoSelection)
        self.table.setFocusPolicy(Qt.NoFocus)
        self.table.setWordWrap(False)
        self.table.setShowGrid(False)
        self.table.setAlternatingRowColors(True)
        for row, (what, keys) in enumerate(rows):
            key_item = QTableWidgetItem(keys)
            bold = key_item.font()
            bold.setBold(True)
            key_item.setFont(bold)
            self.table.setItem(row, 0, key_item)
            self.table.setItem(row, 1, QTableWidgetItem(what))
        header = self.table.horizontalHeader()
        header.setDefaultAlignment(Qt.AlignLeft | Qt.AlignVCenter)
        header.setSectionResizeMode(1, QHeaderView.Stretch)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        buttons = QDialogButtonBox(QDialogButtonBox.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table)
        layout.addWidget(buttons)
        self._fit_table()

    def _fit_table(self) -> None:
        """The table as large as its rows and columns (no scroll bar while it fits)."""
        table = self.table
        table.resizeRowsToContents()
        header = table.horizontalHeader()
        # Each column as wide as its widest cell, and a gap of two characters after each.
        gap = 2 * table.fontMetrics().averageCharWidth()
        widths = [max(table.sizeHintForColumn(c), header.sectionSizeHint(c)) + gap
                  for c in range(table.columnCount())]
        table.setColumnWidth(0, widths[0])  # the last column stretches to the rest
        frame = 2 * table.frameWidth()
        width = sum(widths) + frame
        # Room for the vertical scroll bar, in case the rows are taller than the screen.
        width += table.style().pixelMetric(table.style().PixelMetric.PM_ScrollBarExtent)
        height = (table.horizontalHeader().sizeHint().height()
                  + sum(table.rowHeight(r) for r in range(table.rowCount())) + frame)
        table.setMinimumWidth(width)
        table.setMinimumHeight(min(height, self._screen_height() * 2 // 3))

    def _screen_height(self) -> int:
        screen = self.screen()
        return screen.availableGeometry().height() if screen is not None else 800
