"""Colours by meaning, pens and fonts. Views ask for a role ("compute", "memory"), never
for a colour, so the projector look changes the palette and not the views."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontDatabase, QPalette
from PySide6.QtWidgets import QApplication, QProxyStyle, QStyle

from gpuviz.theme.slider_pictures import SliderPictures

# Okabe & Ito (2008), the colour-blind-safe categorical list, for ranks and series.
OKABE_ITO = ("#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7",
             "#999999")


@dataclass(frozen=True, eq=False)
class Theme:
    name: str
    background: str
    panel: str
    text: str
    muted: str
    grid: str
    roles: dict[str, str]
    line_scale: float = 1.0
    font_scale: float = 1.0
    # Drawn text and lines grow with the figure page from the design size (see fit_to).
    grows: bool = False
    series: tuple[str, ...] = field(default=OKABE_ITO)


# The meanings every figure shares (see the design): work is blue, idle hardware violet,
# memory/HBM orange, on-chip storage yellow, network aqua, highlight or warning magenta.
#
# Colour-vision safety (issue 19): hue alone fails for red-green colour blindness (blue and
# violet simulate to the same colour) and on projectors that wash saturation out, so every
# pair of roles a figure sets against each other (CONTRASTING_PAIRS) also differs by at least
# MIN_LIGHTNESS_STEP in CIE L*, and by at least MIN_SIMULATED_DELTA_E (CIE76) under full-
# severity protanopia and deuteranopia simulation (Machado et al. 2009); tests/test_palette.py
# checks every look. The lightness order is the same in both light looks, mirrored in the
# dark one, so busy work stands out from the background and idle hardware recedes:
#   light looks: compute 29 < memory, compute_light, network ~50 < highlight 72 < idle 75
#                < onchip 78;
#   dark look:   idle 42, highlight 43 < memory, network 64 < compute_light 68
#                < compute 86, onchip 87.
# Idle and wasted cells are hatched as well (core.plots.HATCH), so they survive greyscale.
MIN_LIGHTNESS_STEP = 20.0
MIN_SIMULATED_DELTA_E = 20.0

# Roles drawn next to each other to tell two things apart: a figure that sets a new pair
# against each other adds it here, and the palette test holds it to the limits above.
CONTRASTING_PAIRS = (
    ("compute", "idle"),            # busy vs idle SMs, warps and slots
    ("compute_light", "idle"),      # alternating blocks vs unused slots (1.3)
    ("memory", "onchip"),           # HBM vs on-chip storage and traffic
    ("compute", "network"),         # compute vs interconnect
    ("memory", "highlight"),        # memory vs the selected or over-the-limit item
    ("memory", "idle"),             # waiting on memory vs idle
    ("network", "idle"),            # waiting on the network vs idle
    ("compute", "memory"),          # compute- vs memory-bound, issuing vs waiting
    ("compute", "highlight"),       # compute vs the selected or conflicting item
    ("onchip", "neutral"),          # on-chip tile vs untouched data
)

DARK = Theme(
    name="dark",
    background="#16181d",
    panel="#1f2229",
    text="#e8e8ea",
    muted="#9aa0ab",
    grid="#3a3f4a",
    roles={
        "compute": "#b9dbff",
        "compute_light": "#48adf6",
        "idle": "#6051c6",
        "memory": "#f17b0c",
        "memory_light": "#ffc78f",
        "onchip": "#fbd915",
        "network": "#0aada6",
        "highlight": "#c40178",
        "neutral": "#969696",
    },
)

LIGHT = Theme(
    name="light",
    background="#ffffff",
    panel="#f3f4f6",
    text="#1b1d22",
    muted="#5b606b",
    grid="#d5d8de",
    roles={
        "compute": "#034485",
        "compute_light": "#027cc4",
        "idle": "#c5adf2",
        "memory": "#bf5a01",
        "memory_light": "#f9ba78",
        "onchip": "#e1bf00",
        "network": "#018882",
        "highlight": "#ff86e3",
        "neutral": "#848484",
    },
)

# For projectors: white background, dark text, saturated colours, thick lines, big type.
PROJECTOR = Theme(
    name="projector",
    background="#ffffff",
    panel="#ffffff",
    text="#000000",
    muted="#333333",
    grid="#bbbbbb",
    roles={
        "compute": "#034086",
        "compute_light": "#077bc7",
        "idle": "#c5acf8",
        "memory": "#c55501",
        "memory_light": "#feb162",
        "onchip": "#ddbc02",
        "network": "#018880",
        "highlight": "#fe80e2",
        "neutral": "#7c7c7c",
    },
    line_scale=2.0,
    font_scale=1.5,
    grows=True,
)

THEMES = {t.name: t for t in (DARK, LIGHT, PROJECTOR)}
_current = DARK
_text_scale = 1.0

# The page size the figures are designed for (a 1280x800 screen in lecture mode); a look
# that `grows` scales everything drawn by how much larger the figure's page is (the smaller
# of the two ratios, so it still fits).
DESIGN_SIZE = (1280, 800)
MAX_SCREEN_SCALE = 3.0
# Below the design size a look that grows shrinks too, down to the 1024x768 projector
# (1024 / 1280): a projector throws its picture on the same screen whatever its pixel
# count, so 16 px there reads as 20 px does at 1280x800, and the layout is the design's.
MIN_SCREEN_SCALE = 0.8
# In a look that grows, no drawn text is smaller than this (points before the scales): at
# 1920x1080 it is 20 px;
MIN_GROWING_POINTS = 7.5
# and no text at all is smaller than this, at any page size (widget text is 16 px at
# MIN_SCREEN_SCALE).
MIN_GROWING_PIXELS = 16.0
_screen_scale = 1.0
_page_size: tuple[int, int] | None = None


class LookSignals(QObject):
    """`changed` is emitted after the look changed (theme, text size, or the page-size
    scale of a look that grows): shared widgets and FigureView re-measure and rescale what
    they drew, in place."""

    changed = Signal()


look = LookSignals()


def current() -> Theme:
    return _current


def color(role: str, alpha: int = 255) -> QColor:
    """The colour of a role ("compute", "memory", ...) or of a theme field ("text")."""
    return QColor(_color(_current, role, alpha))


@functools.cache
def _color(theme: Theme, role: str, alpha: int) -> QColor:
    qcolor = QColor(theme.roles.get(role) or getattr(theme, role))
    qcolor.setAlpha(alpha)
    return qcolor


def text_color(role: str, contrast: float = 4.5) -> QColor:
    """The colour of a role for text: the role's own colour when it reads on the
    background (WCAG contrast ratio `contrast`), else the same hue, as saturated, made darker
    (or lighter, on a dark background) until it does: a pale magenta warning on white
    becomes a deep magenta one."""
    return QColor(_text_color(_current, role, contrast))


@functools.cache
def _text_color(theme: Theme, role: str, contrast: float) -> QColor:
    colour = QColor(theme.roles.get(role) or getattr(theme, role))
    back = _luminance(QColor(theme.background))
    hue, saturation, lightness, _ = colour.getHslF()
    target = 1.0 if back < 0.18 else 0.0  # towards white on dark backgrounds
    for step in range(21):
        t = step / 20
        candidate = QColor.fromHslF(max(hue, 0.0), saturation,
                                    (1 - t) * lightness + t * target)
        lum = _luminance(candidate)
        if (max(lum, back) + 0.05) / (min(lum, back) + 0.05) >= contrast:
            return candidate
    return QColor(theme.text)


def _luminance(qcolor: QColor) -> float:
    """WCAG relative luminance."""
    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    return (0.2126 * linear(qcolor.redF()) + 0.7152 * linear(qcolor.greenF())
            + 0.0722 * linear(qcolor.blueF()))


def readable_on(fill: QColor) -> QColor:
    """The theme's text or background colour, whichever reads better on `fill` (an opaque
    colour): dark text on pale cells, light text on dark ones, in every look."""
    text, back = QColor(_current.text), QColor(_current.background)
    return text if abs(_luma(text) - _luma(fill)) >= abs(_luma(back) - _luma(fill)) else back


def _luma(qcolor: QColor) -> float:
    return 0.299 * qcolor.redF() + 0.587 * qcolor.greenF() + 0.114 * qcolor.blueF()


def ui_scale() -> float:
    """How much larger than normal text and the widths that hold it are drawn."""
    return _current.font_scale * _text_scale * _screen_scale


def screen_scale() -> float:
    """How much the look has grown with the figure page (1 unless the look `grows`)."""
    return _screen_scale


def font_factor() -> float:
    """What `font()` multiplies a point size by (drawn text)."""
    return _current.font_scale * _screen_scale


def line_factor() -> float:
    """What `line_width()` multiplies a width by."""
    return _current.line_scale * _screen_scale


def series(index: int) -> QColor:
    return QColor(_current.series[index % len(_current.series)])


def line_width(base: float = 2.0) -> float:
    return base * line_factor()


def font(point_size: float = 10.0, bold: bool = False, mono: bool = False) -> QFont:
    """The look's font at `point_size`; `mono`: the system's fixed-width family (source
    code, whose indentation must line up)."""
    points = point_size * font_factor()
    if _current.grows:
        points = max(max(point_size, MIN_GROWING_POINTS) * font_factor(),
                     MIN_GROWING_PIXELS * 72 / 96)
    qfont = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont) if mono else QFont()
    qfont.setPointSizeF(points)
    qfont.setBold(bold)
    return qfont


def _scale_for(size: tuple[int, int] | None) -> float:
    if not _current.grows or size is None:
        return 1.0
    ratio = min(size[0] / DESIGN_SIZE[0], size[1] / DESIGN_SIZE[1])
    # In steps of 1/20: a window dragged a few pixels larger does not rescale everything.
    return max(MIN_SCREEN_SCALE, min(MAX_SCREEN_SCALE, math.floor(ratio * 20 + 1e-9) / 20))


def scale_for(width: int, height: int) -> float:
    """The scale `fit_to(width, height)` would set in the current look."""
    return _scale_for((int(width), int(height)))


def fit_to(width: int, height: int) -> bool:
    """Tell the theme the size of the page that shows a figure (FigurePage does, on
    resize). In a look that grows, text and lines scale with it from DESIGN_SIZE (down to
    MIN_SCREEN_SCALE, up to MAX_SCREEN_SCALE); when the scale changes, the application
    font follows and `look.changed` is emitted. Returns whether the scale changed."""
    global _page_size, _screen_scale
    _page_size = (int(width), int(height))
    scale = _scale_for(_page_size)
    if scale == _screen_scale:
        return False
    _screen_scale = scale
    _apply_font(QApplication.instance())
    look.changed.emit()
    return True


class _ScaledStyle(QProxyStyle):
    """The platform style with check boxes, radio buttons and slider handles
    as much larger than the style's own as the text is (a 24 px font beside a 13 px box
    is hard to hit and to see in a lecture hall).

    It also draws button panels, combo boxes and spin boxes with the application's own
    palette where a widget's has the same colours. Under a palette of our own Qt gives
    every widget a copy of it with a key of its own, and Fusion keys the pixmaps it
    draws those panels into by that key: each new button left about 270 bytes behind
    for good, a combo box 800, a spin box 900 (measured), so a kiosk that rebuilds its
    figures all day grew by about 4 MB an hour (issue 36). Sharing the application's
    palette, the same panels share their pixmaps.

    Horizontal sliders are copied from pixmaps of Fusion's own drawing (`SliderPictures`):
    Fusion drew a dragged slider again on every change, 0.3 ms at lecture-hall sizes.
    An exception raised here would crash PySide 6.11 as it prints it: keep this simple."""

    SHARED_PALETTE_PRIMITIVES = frozenset({QStyle.PE_PanelButtonCommand,
                                           QStyle.PE_PanelButtonTool})
    SHARED_PALETTE_CONTROLS = frozenset({QStyle.CC_ComboBox, QStyle.CC_SpinBox})

    SCALED = frozenset({
        QStyle.PM_IndicatorWidth, QStyle.PM_IndicatorHeight,
        QStyle.PM_ExclusiveIndicatorWidth, QStyle.PM_ExclusiveIndicatorHeight,
        QStyle.PM_SliderLength, QStyle.PM_SliderThickness,
        QStyle.PM_SliderControlThickness,
    })

    def __init__(self) -> None:
        super().__init__()
        self.factor = 1.0
        self.sliders = SliderPictures()

    def pixelMetric(self, metric, option=None, widget=None) -> int:  # noqa: ANN001, N802
        value = super().pixelMetric(metric, option, widget)
        if self.factor > 1.0 and metric in self.SCALED:
            return round(value * self.factor)
        return value

    def drawPrimitive(self, element, option, painter, widget=None) -> None:  # noqa: ANN001, N802
        if element in self.SHARED_PALETTE_PRIMITIVES:
            option = _with_shared_palette(option)
        super().drawPrimitive(element, option, painter, widget)

    def drawComplexControl(self, control, option, painter, widget=None) -> None:  # noqa: ANN001, N802
        if control in self.SHARED_PALETTE_CONTROLS:
            option = _with_shared_palette(option)
        elif control == QStyle.CC_Slider and self.sliders.takes(option, painter):
            handle = self.subControlRect(control, option, QStyle.SC_SliderHandle, widget)
            option = self.sliders.draw(super().drawComplexControl, handle, option, painter,
                                       widget)
            if not option.subControls:
                return
        super().drawComplexControl(control, option, painter, widget)


def _with_shared_palette(option):  # noqa: ANN001, ANN202 - a QStyleOption subclass
    """`option` with the application's palette (its colour group kept) when its own has
    the same colours under another key; else `option` itself."""
    shared = QApplication.palette()
    own = option.palette
    if own.cacheKey() == shared.cacheKey() or own != shared:
        return option
    copy = type(option)(option)
    palette = QPalette(shared)  # the same key: a copy shares the palette's data
    palette.setCurrentColorGroup(own.currentColorGroup())
    copy.palette = palette
    return copy


def _apply_font(app: QApplication | None) -> None:
    if app is None:
        return
    points = 10.0 * _current.font_scale * _text_scale * _screen_scale
    base = QFont(app.font())
    base.setPointSizeF(points)
    if base != app.font():
        app.setFont(base)
    style = app.style()
    if not isinstance(style, _ScaledStyle):
        style = _ScaledStyle()
        app.setStyle(style)
    style.factor = points / 10.0


def apply(name: str, app: QApplication | None = None, text_scale: float = 1.0) -> Theme:
    """Make `name` the current theme: Qt palette and base font, then `look.changed`. Plots
    read colours when they are built (gpuviz.core.plots), so a new look's colours need a
    rebuilt view; sizes (fonts, pens) follow in place (FigureView.apply_look)."""
    global _current, _text_scale, _screen_scale
    _current = THEMES.get(name, DARK)
    _text_scale = text_scale
    _screen_scale = _scale_for(_page_size)
    app = app or QApplication.instance()
    if app is not None:
        palette = QPalette()
        bg, panel, text = QColor(_current.background), QColor(_current.panel), QColor(
            _current.text)
        for role, value in (
            (QPalette.Window, panel), (QPalette.Base, bg), (QPalette.AlternateBase, panel),
            (QPalette.Text, text), (QPalette.WindowText, text), (QPalette.ButtonText, text),
            (QPalette.Button, panel), (QPalette.ToolTipBase, panel), (QPalette.ToolTipText, text),
            (QPalette.Highlight, QColor(_current.roles["compute"])),
            (QPalette.HighlightedText, readable_on(QColor(_current.roles["compute"]))),
            (QPalette.PlaceholderText, QColor(_current.muted)),
            # Links (a lesson's questions) in a readable blue: Qt's own is dark on dark.
            (QPalette.Link, text_color("compute")), (QPalette.LinkVisited, text_color("compute")),
        ):
            palette.setColor(role, value)
        palette.setColor(QPalette.Disabled, QPalette.Text, QColor(_current.muted))
        palette.setColor(QPalette.Disabled, QPalette.WindowText, QColor(_current.muted))
        palette.setColor(QPalette.Disabled, QPalette.ButtonText, QColor(_current.muted))
        app.setPalette(palette)
        _apply_font(app)
    look.changed.emit()
    return _current


def resolve(name: str, app: QApplication | None = None) -> str:
    """A theme name; "system" follows the desktop's light or dark preference."""
    if name in THEMES:
        return name
    app = app or QApplication.instance()
    if app is not None and app.styleHints().colorScheme() == Qt.ColorScheme.Light:
        return LIGHT.name
    return DARK.name
