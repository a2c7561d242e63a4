"""Sliders copied from pixmaps (gpuviz.theme.slider_pictures) look as the style draws
them, at every value, in both looks, at device pixel ratios 1 and 2: to a level of one
in a colour channel, where a translucent edge blended once differs in its rounding from
one blended in two steps."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage, QPainter
from PySide6.QtWidgets import QSlider, QStyle, QStyleOptionSlider

from gpuviz import theme
from gpuviz.theme.slider_pictures import SliderPictures


def _render(slider: QSlider, ratio: float) -> np.ndarray:
    image = QImage(slider.size() * ratio, QImage.Format_ARGB32_Premultiplied)
    image.setDevicePixelRatio(ratio)
    image.fill(theme.color("panel"))
    slider.render(image)
    bits = np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), -1)
    return bits[:, :image.width() * 4].astype(int)


@pytest.mark.parametrize("look", ["dark", "projector"])
@pytest.mark.parametrize("ratio", [1.0, 2.0])
@pytest.mark.parametrize("width", [90, 333, 905])
def test_a_slider_from_pixmaps_is_the_slider_the_style_draws(qapp, monkeypatch, look,
                                                             ratio, width):
    theme.apply(look, qapp)
    slider = QSlider(Qt.Horizontal)
    slider.resize(width, 40)
    slider.setRange(-7, 93)
    try:
        for enabled in (True, False):
            slider.setEnabled(enabled)
            for value in range(-7, 94, 3):
                slider.setValue(value)
                with monkeypatch.context() as patch:
                    patch.setattr(SliderPictures, "takes", staticmethod(lambda *_: False))
                    drawn = _render(slider, ratio)
                copied = _render(slider, ratio)
                assert np.abs(copied - drawn).max() <= 1, (enabled, value)
    finally:
        theme.apply("dark", qapp)


def test_right_to_left_turned_and_stretched_sliders_are_left_to_the_style(qapp):
    slider = QSlider(Qt.Horizontal)
    slider.resize(200, 30)
    option = QStyleOptionSlider()
    image = QImage(10, 10, QImage.Format_ARGB32_Premultiplied)
    painter = QPainter(image)
    try:
        slider.initStyleOption(option)
        option.subControls = QStyle.SC_SliderGroove | QStyle.SC_SliderHandle
        assert SliderPictures.takes(option, painter)
        painter.scale(2, 1)
        assert not SliderPictures.takes(option, painter)
        painter.resetTransform()
        painter.rotate(90)
        assert not SliderPictures.takes(option, painter)
        painter.resetTransform()
        slider.setLayoutDirection(Qt.RightToLeft)
        slider.initStyleOption(option)
        option.subControls = QStyle.SC_SliderGroove | QStyle.SC_SliderHandle
        assert not SliderPictures.takes(option, painter)
    finally:
        painter.end()
