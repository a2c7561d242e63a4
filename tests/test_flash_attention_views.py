"""Lesson 4 figures as drawn: what the learner is told to watch is on the canvas (4.1's
state and naive row, 4.2's HBM counters and loop order), and text that cannot fit is
left out rather than clipped (4.5's unit counts)."""

from __future__ import annotations

import pytest

from gpuviz import catalog, theme
from tests import figure_driver as drive

SPECS = {spec.number: spec for spec in catalog.all_figures()}


@pytest.fixture
def build(qapp, qtbot):
    def make(number: str, look: str = "dark", size: tuple[int, int] = (1280, 800),
             **values):  # noqa: ANN202
        theme.apply(look, qapp)
        page = drive.build_page(SPECS[number], size)
        qtbot.addWidget(page)
        with page.model.batch():
            for name, value in values.items():
                page.model.set(name, value)
        drive.settle()
        return page

    yield make
    theme.apply("dark", qapp)


def _cell_texts(grid) -> list[str]:  # noqa: ANN001
    return [text.text() for text in grid._text_list]


def test_online_softmax_draws_state_and_naive_overflow(build):
    page = build("4.1", huge_score=True)
    view = page.view
    assert _cell_texts(view.state_cells) == ["m = −∞", "l = 0", "o = 0"]
    for _ in range(3):  # the huge score sits in block 3
        page.model.step()
        drive.settle()
    assert _cell_texts(view.state_cells)[0] == "m = 1,000"
    naive = _cell_texts(view.naive_cells)[0]
    assert "Σ eˣ = inf" in naive and "o = NaN" in naive
    # The state is the largest text of the diagram.
    assert view.state_cells._font.pointSizeF() > view.cells._font.pointSizeF()


def test_online_softmax_causal_mask_shows_masked_first_block(build):
    page = build("4.1", causal=True)
    page.model.step()
    drive.settle()
    view = page.view
    assert _cell_texts(view.state_cells) == ["m = −∞", "l = 0", "o = 0"]
    assert "entirely masked" in view.message.text()
    assert _cell_texts(view.cells).count("−∞") == 6  # keys 10 to 15


@pytest.mark.parametrize("order", ["fa2", "fa1"])
def test_tiling_counters_on_the_canvas_follow_the_readouts(build, order):
    page = build("4.2", loop_order=order)
    for _ in range(10):
        page.model.step()
    drive.settle()
    s = page.model.out
    text = page.view.counters.text()
    assert f"{s.reads:,} read" in text and f"{s.writes:,} written" in text
    source = "FlashAttention-1" if order == "fa1" else "FlashAttention-2"
    assert source in page.view.message.text()
    page.model.finish()
    drive.settle()
    assert page.model.readouts()["phase"].text == "finished"


def test_split_kv_counts_that_cannot_fit_are_left_out(build):
    page = build("4.5", "projector", (1280, 800), splits=64, batch_size=256)
    grid = page.view.sms
    page.grab()
    assert grid._fit_texts  # texts that do not fit their cell are left out
    # "993" is wider than a cell here: nothing is drawn over the cells' edges.
    from PySide6.QtGui import QFontMetricsF

    width = QFontMetricsF(grid._font).horizontalAdvance("993")
    view = page.view.box
    cell = grid._array[0, 2] / view.viewPixelSize()[0]
    assert width > cell
