"""Figure 5.3: the steps of mixed-precision training as a loop of boxes, each filled with
the colour of the number format it works in."""

from __future__ import annotations

import html

import numpy as np

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.plots import CellGrid, curve, diagram_widget, pen
from gpuviz.core.widgets import TextPanel
from gpuviz.models.mixed_precision import FP8, FP32, HALF, SCALING
from gpuviz.views.mixed_precision import KIND_LABEL, KIND_ROLE

BOX_W, BOX_H = 0.86, 1.05  # in slots (one slot per box of the top row)
TOP, BOTTOM = 0.0, 1.75  # row tops
LEGEND_Y = 3.05
ARROW_HEAD = 0.06


def _layout(count: int) -> tuple[list[tuple[float, float]], int]:
    """Box positions (left, top): the forward half left to right on the top row, the
    backward half right to left under it, ending under the master weights."""
    top = max(1, min((count + 1) // 2, count - 1))
    bottom = count - top
    last = top - 1
    places = [(float(i), TOP) for i in range(top)]
    for j in range(bottom):
        x = last * (1 - j / (bottom - 1)) if bottom > 1 else 0.0
        places.append((x, BOTTOM))
    return places, top


class TrainingStepView(FigureView):
    def build(self) -> None:
        self.controls.add("recipe")
        self._step_combo = self.controls.add("step_shown").combo

        widget, box = diagram_widget()
        box.setAspectLocked(False)
        self.box = box
        self.boxes = CellGrid(font_size=11)
        self.boxes.clicked.connect(self._on_click)
        self.arrows = curve(box, pen("text", 1.5))
        box.addItem(self.boxes)
        self.legend = CellGrid(font_size=10)
        box.addItem(self.legend)
        widget.setToolTip("Pick a step to see the reason for its number format")
        self._keys: list[str] = []
        self._slots = 0
        self.add_plot(widget, 3)

        self.why = TextPanel(5.5, accessible_name="The reason for the chosen step's format")
        self.add_plot(self.why, 0)

    def _on_click(self, index: int) -> None:
        if 0 <= index < len(self._keys):
            self.model.set("step_shown", self._keys[index])

    def refresh(self) -> None:
        out = self.model.out
        steps = out.steps
        places, top = _layout(len(steps))
        if top != self._slots:
            self._slots = top
            self.box.setRange(xRange=(-0.1, top - 1 + BOX_W + 0.1),
                              yRange=(-0.1, LEGEND_Y + 0.4), padding=0)
        self._keys = [s.key for s in steps]
        if self.needs_update("recipe", self.model.recipe):
            self._offer_steps(steps)
        rects = np.array([(x, y, BOX_W, BOX_H) for x, y in places])
        fills = [theme.color(KIND_ROLE[s.kind]) for s in steps]
        outlines = [theme.color("text") if s is out.selected else None for s in steps]
        texts = [f"{s.title}\n{s.format_text}" for s in steps]
        self.boxes.set_cells(rects, fills, outlines, texts, outline_width=3.5)
        self.arrows.set_data(*self._arrow_path(places, top))
        kinds = (FP32, HALF, FP8, SCALING)
        width = (top - 1 + BOX_W) / len(kinds)
        self.legend.set_cells(
            np.array([(i * width, LEGEND_Y, width * 0.92, 0.3) for i in range(len(kinds))]),
            [theme.color(KIND_ROLE[k]) for k in kinds], texts=[KIND_LABEL[k] for k in kinds])
        step = out.selected
        title = html.escape(f"{step.title}: {step.format_text}".replace("\n", " "))
        self.why.setText(f"<b>{title}</b><br>{html.escape(step.why)}")
        self.message.show_message(self.model.comment())

    def _offer_steps(self, steps: list) -> None:
        """The selector offers the recipe's steps only, named as their boxes are."""
        titles = {s.key: s.title.replace("\n", " ") for s in steps}
        combo = self._step_combo
        items = combo.model()
        for i in range(combo.count()):
            key = combo.itemData(i)
            if key in titles:
                combo.setItemText(i, titles[key])
            combo.view().setRowHidden(i, key not in titles)
            item = items.item(i) if hasattr(items, "item") else None
            if item is not None:
                item.setEnabled(key in titles)

    @staticmethod
    def _arrow_path(places: list[tuple[float, float]], top: int
                    ) -> tuple[list[float], list[float]]:
        """Arrows between consecutive boxes and from the last one back to the first, as
        one path (NaN separates the pieces)."""
        xs: list[float] = []
        ys: list[float] = []

        def arrow(x0: float, y0: float, x1: float, y1: float) -> None:
            xs.extend([x0, x1, np.nan])
            ys.extend([y0, y1, np.nan])
            if x1 != x0:  # a horizontal head
                d = ARROW_HEAD if x1 > x0 else -ARROW_HEAD
                xs.extend([x1 - d, x1, x1 - d, np.nan])
                ys.extend([y1 - 2 * ARROW_HEAD, y1, y1 + 2 * ARROW_HEAD, np.nan])
            else:
                d = 2 * ARROW_HEAD if y1 > y0 else -2 * ARROW_HEAD
                xs.extend([x1 - ARROW_HEAD, x1, x1 + ARROW_HEAD, np.nan])
                ys.extend([y1 - d, y1, y1 - d, np.nan])

        middle = BOX_H / 2
        for i in range(len(places) - 1):
            (x0, y0), (x1, y1) = places[i], places[i + 1]
            if i + 1 == top:  # down from the end of the top row
                arrow(x0 + BOX_W / 2, y0 + BOX_H, x1 + BOX_W / 2, y1)
            elif y0 == TOP:
                arrow(x0 + BOX_W, y0 + middle, x1, y1 + middle)
            else:
                arrow(x0, y0 + middle, x1 + BOX_W, y1 + middle)
        (x0, y0), (x1, y1) = places[-1], places[0]
        arrow(x0 + BOX_W / 2, y0, x1 + BOX_W / 2, y1 + BOX_H)  # the update, back up
        return xs, ys

