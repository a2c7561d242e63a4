"""pyqtgraph pieces shared by the figures: themed plots and diagram canvases (`plot`),
the look's pens, fills and hatching (`look`), CellGrid (`cells`: any number of coloured
cells in a single paint() call), markers that Qt paints alone (`markers`: `text_item`,
`Dots`, `Segment`, `curve`, `lines`, `Area`) and the one legend style (`legend`). Their
setters do nothing when nothing changed, so a refresh repaints only what moved."""

from gpuviz.core.plots.cells import CellGrid, grid_rects, largest_layout
from gpuviz.core.plots.legend import Legend
from gpuviz.core.plots.look import (
    HATCH_ALPHA,
    HEAT_FLOOR,
    HEAT_LEVELS,
    UNTOUCHED_ALPHA,
    brush,
    composite,
    hatch_brush,
    hatched_by_default,
    heat_colors,
    opaque_blend,
    pen,
    untouched,
)
from gpuviz.core.plots.markers import (
    Area,
    Curve,
    Dots,
    Lines,
    Segment,
    curve,
    lines,
    markers_drawn_at,
    text_item,
)
from gpuviz.core.plots.plot import (
    AXIS_TITLE_POINTS,
    TICK_POINTS,
    GridPlotWidget,
    apply_look,
    diagram_widget,
    drawn_texts,
    plot_widget,
)
from gpuviz.core.plots.repaint import repaint_together

__all__ = [
    "AXIS_TITLE_POINTS", "HATCH_ALPHA", "HEAT_FLOOR", "HEAT_LEVELS", "TICK_POINTS",
    "UNTOUCHED_ALPHA", "Area", "CellGrid", "Curve", "Dots", "GridPlotWidget", "Legend",
    "Lines", "Segment", "apply_look", "brush", "composite", "curve", "diagram_widget",
    "drawn_texts", "grid_rects", "hatch_brush", "hatched_by_default", "heat_colors",
    "largest_layout", "lines", "markers_drawn_at", "opaque_blend", "pen", "plot_widget",
    "repaint_together", "text_item", "untouched",
]
