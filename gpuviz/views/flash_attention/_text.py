"""Text items are re-laid out on every setText (about a millisecond each on a busy
machine), so the lesson-4 views only touch them when the text really changes."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtGui import QColor

from gpuviz.core.widgets import MessageLabel


def set_text(item: pg.TextItem, text: str, color: QColor | None = None) -> None:
    key = (text, color.rgba() if color is not None else None)
    if getattr(item, "_shown", None) == key:
        return
    item._shown = key
    if color is not None:
        item.setColor(color)
    item.setText(text)


def show_message(label: MessageLabel, text: str, warn: bool = False) -> None:
    """MessageLabel.show_message restyles the label (a stylesheet re-polish) every call."""
    if getattr(label, "_shown", None) == (text, warn):
        return
    label._shown = (text, warn)
    label.show_message(text, warn)
