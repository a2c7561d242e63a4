"""A horizontal slider's groove and handle, copied from pixmaps instead of drawn by the
style each time.

Fusion draws both with antialiased gradients on every paint: 0.29 ms for the groove of a
905 px slider of the projector look at 2560x1440 and 0.15 ms for its handle, paid on every
change while a slider is dragged. The groove depends on the value only through a clip: the
filled part (the highlight up to the handle) is drawn whole and cut at the handle. So the
groove is drawn once at the least value (no fill) and once at the greatest (filled), and a
paint copies the filled pixmap left of the cut and the empty one right of it; the handle is
drawn once and copied where it is. The pixels are Fusion's, to a level of rounding
(tests/test_slider_pictures.py compares them at every value).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

from PySide6.QtCore import QPoint, QRect, QRectF, QSize, Qt
from PySide6.QtGui import QPainter, QPixmap, QTransform
from PySide6.QtWidgets import QStyle, QStyleOptionSlider, QWidget

KEPT = 16  # pictures kept (size, ratio, palette, state): a few sliders in a few states
FILL_PAST_HANDLE = 2  # px past the handle's left edge: where Fusion cuts the fill
HANDLE_MARGIN = 4  # px around the handle's rectangle kept with it (its outline and shadow)

Draw = Callable[[QStyle.ComplexControl, QStyleOptionSlider, QPainter, QWidget | None], None]


class SliderPictures:
    def __init__(self) -> None:
        self._kept: OrderedDict[tuple, tuple[QPixmap, ...]] = OrderedDict()

    @staticmethod
    def takes(option: QStyleOptionSlider, painter: QPainter) -> bool:
        """Horizontal, left to right, with a groove to draw, on a painter that only
        scales and moves (a right-to-left slider is drawn upside down, and fills from the
        right: the style draws it, as it draws a turned or stretched one)."""
        transform = painter.deviceTransform()
        return bool(option.subControls & QStyle.SC_SliderGroove) and (
            option.orientation == Qt.Horizontal and not option.upsideDown
            and option.maximum > option.minimum and not option.rect.isEmpty()
            and transform.type().value <= QTransform.TxScale.value
            and transform.m11() == transform.m22() > 0)

    def draw(self, draw: Draw, handle: QRect, option: QStyleOptionSlider,
             painter: QPainter, widget: QWidget | None) -> QStyleOptionSlider:
        """Paint the groove and handle of `option` (`draw` is the style's own
        drawComplexControl, `handle` the handle's rectangle in the option's coordinates);
        returns the option with what is left for the style to draw (tick marks)."""
        # Device pixels per pixel: the paint device's ratio, or the scale of a render()
        # into an image of another ratio (the device is then the widget).
        ratio = painter.deviceTransform().m11()
        rect = option.rect
        key = (rect.width(), rect.height(), handle.width(), handle.height(), ratio,
               option.palette.cacheKey(), option.state.value, option.activeSubControls.value,
               option.tickPosition.value)
        pixmaps = self._kept.get(key)
        if pixmaps is None:
            pixmaps = (*(self._render_groove(draw, option, position, ratio, widget)
                         for position in (option.minimum, option.maximum)),
                       self._render_handle(draw, option, handle, ratio, widget))
            self._kept[key] = pixmaps
            if len(self._kept) > KEPT:
                self._kept.popitem(last=False)
        else:
            self._kept.move_to_end(key)
        empty, filled, knob = pixmaps
        cut = min(max(handle.left() - rect.left() + FILL_PAST_HANDLE, 0), rect.width())
        width, height = rect.width(), rect.height()
        if cut:
            painter.drawPixmap(QRectF(rect.left(), rect.top(), cut, height), filled,
                               QRectF(0, 0, cut * ratio, height * ratio))
        if cut < width:
            painter.drawPixmap(QRectF(rect.left() + cut, rect.top(), width - cut, height),
                               empty, QRectF(cut * ratio, 0, (width - cut) * ratio,
                                             height * ratio))
        if option.subControls & QStyle.SC_SliderHandle:
            painter.drawPixmap(handle.topLeft() - QPoint(HANDLE_MARGIN, HANDLE_MARGIN), knob)
        rest = QStyleOptionSlider(option)
        rest.subControls &= ~(QStyle.SC_SliderGroove | QStyle.SC_SliderHandle)
        return rest

    @staticmethod
    def _render_handle(draw: Draw, option: QStyleOptionSlider, handle: QRect, ratio: float,
                       widget: QWidget | None) -> QPixmap:
        """The handle alone, HANDLE_MARGIN from the pixmap's top left corner."""
        knob = QStyleOptionSlider(option)
        knob.subControls = QStyle.SC_SliderHandle
        knob.rect = option.rect.translated(QPoint(HANDLE_MARGIN, HANDLE_MARGIN)
                                           - handle.topLeft())
        # Fusion draws a handle that comes with its groove half a pixel lower right than
        # one drawn alone (the groove leaves its painter so translated, Qt 6.11).
        return _drawn(draw, knob, handle.size() + QSize(2, 2) * HANDLE_MARGIN, ratio, widget,
                      shift=0.5)

    @staticmethod
    def _render_groove(draw: Draw, option: QStyleOptionSlider, position: int, ratio: float,
                       widget: QWidget | None) -> QPixmap:
        groove = QStyleOptionSlider(option)
        groove.subControls = QStyle.SC_SliderGroove
        groove.sliderPosition = groove.sliderValue = position
        groove.rect = option.rect.translated(-option.rect.topLeft())
        return _drawn(draw, groove, option.rect.size(), ratio, widget)


def _drawn(draw: Draw, option: QStyleOptionSlider, size: QSize, ratio: float,
           widget: QWidget | None, shift: float = 0.0) -> QPixmap:
    pixmap = QPixmap(round(size.width() * ratio), round(size.height() * ratio))
    pixmap.setDevicePixelRatio(ratio)
    pixmap.fill(Qt.transparent)
    painter = QPainter(pixmap)
    painter.translate(shift, shift)
    draw(QStyle.CC_Slider, option, painter, widget)
    painter.end()
    return pixmap

