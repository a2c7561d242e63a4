"""One repaint of the window per refresh, however many plots a figure has."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QCoreApplication, QEvent, QObject
from PySide6.QtWidgets import QGraphicsScene, QWidget

from gpuviz.core.text import place_pending_labels


class _HeldRepaint(QObject):
    """An event filter on a window that keeps back its repaint (UpdateRequest) and notes
    that one was asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = False

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        if event.type() == QEvent.UpdateRequest:
            self.asked = True
            return True
        return False


_HELD = _HeldRepaint()


def repaint_together(widget: QWidget, scenes: Sequence[QGraphicsScene]) -> None:
    """Hand what changed in every scene of `scenes` (the plots of the figure in `widget`)
    to its view now, then repaint the window once.

    Each scene does so in a pass of the event loop of its own, and its view then repaints
    and flushes the whole window at once (QGraphicsView sends the window's pending
    UpdateRequest, for a prompt repaint): a figure with n plots repainted the window n
    times per change, its controls in the first pass. A figure with one plot repainted it
    twice: the repaint a moved slider asked for comes before the scene's pass (events
    posted while the event loop runs wait behind those already queued). Here the scenes'
    requests are held back while they all run, and one repaint follows."""
    # Layouts the refresh changed (a wider tick label) first, as Qt would before painting.
    QCoreApplication.sendPostedEvents(None, QEvent.LayoutRequest)
    for scene in scenes:
        scene.prepareForPaint()
    place_pending_labels()  # text layers repaint the labels that changed, not the plot
    if not scenes or not widget.isVisible():
        return
    window = widget.window()
    _HELD.asked = False
    window.installEventFilter(_HELD)
    try:
        for scene in scenes:  # the scene's queued calls that hand its changes to its view
            QCoreApplication.sendPostedEvents(scene, QEvent.MetaCall)
    finally:
        window.removeEventFilter(_HELD)
    if _HELD.asked:  # the window's repaint manager waits for this request: repaint now
        QCoreApplication.sendEvent(window, QEvent(QEvent.UpdateRequest))
