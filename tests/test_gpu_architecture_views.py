"""Lesson 1 figures as drawn: 1.2's lanes on the shared Timeline and its messages."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPointF

from gpuviz import catalog, theme
from tests import figure_driver as drive

SPECS = {spec.number: spec for spec in catalog.all_figures()}


@pytest.fixture
def build(qapp, qtbot):
    def make(number: str, **values):  # noqa: ANN202
        theme.apply("dark", qapp)
        page = drive.build_page(SPECS[number])
        qtbot.addWidget(page)
        with page.model.batch():
            for name, value in values.items():
                page.model.set(name, value)
        drive.settle()
        return page

    return make


def test_warp_lanes_on_the_timeline_cut_at_the_playhead(build):
    page = build("1.2", warps=4)
    view, model = page.view, page.model
    timeline = view.timeline
    assert timeline._lanes == ("Warp 1", "Warp 2", "Warp 3", "Warp 4", "Scheduler")
    bars = model.out.bars
    assert len(timeline.boxes._array) == len(bars.lane)
    # The scheduler idles 60% of the horizon: shaded on its lane (lane 4), behind.
    idle = timeline.idle._array
    assert np.all(idle[:, 1] + idle[:, 3] / 2 == 4)
    assert idle[:, 2].sum() == pytest.approx(0.6 * model.out.horizon)
    assert not timeline.playhead.isVisible()  # opens fully drawn

    model.rewind()
    model.advance_by(0.25 * 8.0)  # a quarter of the way: 100 of 400 cycles
    drive.settle()
    rects = timeline.boxes._array
    assert rects[:, 0].max() < 100 and (rects[:, 0] + rects[:, 2]).max() == pytest.approx(100)
    assert timeline.playhead.isVisible()


def test_click_reads_a_bar(build):
    page = build("1.2", warps=2)
    view = page.view
    view.timeline._clicked_at(QPointF(15.0, 1.0))  # warp 2's first burst: cycles 10-20
    assert view.message.text() == "Warp 2 issues, cycles 10 to 20."
    view.timeline._clicked_at(QPointF(15.0, 2.0))
    assert view.message.text() == "Scheduler: warp 2 issues, cycles 10 to 20."
    view.timeline._clicked_at(QPointF(50.0, 0.0))
    assert view.message.text() == "Warp 1 waits for memory, cycles 10 to 100."


@pytest.mark.parametrize("warps", [1, 4, 16])
def test_past_sixteen_warps_says_what_sixteen_leave_idle(build, warps):
    page = build("1.2", warps=warps, memory_latency=700)
    text = page.view.message.text()
    assert "Add warps" not in text
    # 16 warps of 10 cycles in every 710: 1 - 160/710 = 77.5% idle.
    assert "even 16" in text.lower() and "77.5%" in text and "71 warps" in text
    assert " 1 warps" not in text


def test_below_the_slider_limit_asks_for_more_warps(build):
    text = build("1.2", warps=4).view.message.text()
    assert "Add warps: 10 are needed to hide 90 cycles" in text
