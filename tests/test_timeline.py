"""The shared timeline drawing helper (gpuviz.core.timeline)."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPointF

from gpuviz import theme
from gpuviz.core.plots import plot_widget
from gpuviz.core.schedule import Task, chain, schedule
from gpuviz.core.timeline import Timeline


def _timeline(qtbot, lanes=("compute", "network")):
    plot = plot_widget("Time", x_unit="s")
    qtbot.addWidget(plot)
    plot.resize(600, 200)
    return plot, Timeline(plot, lanes)


def _overlap_schedule():
    tasks = chain("compute", [2.0, 2.0, 2.0], "b", labels=["L3", "L2", "L1"])
    tasks += [Task(f"ar{i}", "network", 1.5, after=(f"b{i}",)) for i in range(3)]
    return schedule(tasks)


def test_schedule_becomes_boxes_on_lanes_and_idle_gaps(themed, qtbot):
    plot, timeline = _timeline(qtbot)
    result = _overlap_schedule()
    timeline.show_schedule(result, lambda task: theme.color(
        "compute" if task.resource == "compute" else "network"), idle_lanes=["compute"])
    rects = timeline.boxes._array
    assert rects.shape == (6, 4)
    assert rects[result.index("ar2")].tolist() == [6.0, 1 - 0.35, 1.5, 0.7]
    # The compute lane idles from 6 to 7.5 while the last all-reduce runs.
    assert timeline.idle._array.tolist() == [[6.0, -0.35, 1.5, 0.7]]


def test_playhead_cuts_the_boxes(themed, qtbot):
    plot, timeline = _timeline(qtbot)
    result = _overlap_schedule()
    timeline.show_schedule(result, lambda task: theme.color("compute"), until=3.0)
    widths = timeline.boxes._array[:, 2]
    assert widths.tolist() == [2.0, 1.0, 0.0, 1.0, 0.0, 0.0]
    timeline.set_playhead(3.0)
    assert timeline.playhead.isVisible()
    timeline.set_playhead(None)
    assert not timeline.playhead.isVisible()


def test_click_reads_the_task(themed, qtbot):
    plot, timeline = _timeline(qtbot)
    result = _overlap_schedule()
    timeline.show_schedule(result, lambda task: theme.color("compute"))
    hits = []
    timeline.clicked.connect(hits.append)
    assert timeline.boxes.index_at(QPointF(6.5, 1.0)) == result.index("ar2")
    assert timeline.boxes.index_at(QPointF(1.0, 0.0)) == result.index("b0")


def test_many_boxes(themed, qtbot):
    plot, timeline = _timeline(qtbot, [f"GPU {i}" for i in range(16)])
    n = 800
    lanes = np.arange(n) % 16
    start = np.arange(n) // 16 * 1.0
    timeline.set_boxes(lanes, start, start + 0.9, [theme.color("compute")] * n,
                       [str(i % 10) for i in range(n)])
    timeline.set_time_range(start.max() + 1)
    assert plot.getPlotItem().viewRange()[0][1] >= 50
    assert not plot.grab().isNull()


def test_thousands_of_touching_thin_boxes_draw_as_one_run_and_click_to_the_right_one(
        themed, qtbot):
    plot, timeline = _timeline(qtbot)
    n = 2000
    start = np.arange(n) * 1.0
    lanes = np.r_[np.zeros(10), np.ones(n)]
    starts = np.r_[np.arange(10) * 200.0, start]
    ends = np.r_[np.arange(1, 11) * 200.0, start + 1.0]
    fills = [theme.color("compute")] * 10 + [theme.color("network")] * n
    timeline.set_boxes(lanes, starts, ends, fills, [f"L{i}" for i in range(10)] + [""] * n)
    drawn = timeline.boxes._array
    assert len(drawn) == 11  # ten wide boxes, one run of 2000 thin ones
    assert drawn[-1].tolist() == [0.0, 1 - 0.35, 2000.0, 0.7]
    hits = []
    timeline.clicked.connect(hits.append)
    timeline._clicked_at(QPointF(1234.5, 1.0))
    timeline._clicked_at(QPointF(450.0, 0.1))
    assert hits == [10 + 1234, 2]


def test_ids_name_the_boxes_of_a_part(themed, qtbot):
    plot, timeline = _timeline(qtbot)
    timeline.set_boxes([0, 1], [5.0, 6.0], [6.0, 8.0], [theme.color("compute")] * 2,
                       ids=np.array([17, 42]))
    hits = []
    timeline.clicked.connect(hits.append)
    timeline._clicked_at(QPointF(7.0, 1.0))
    assert hits == [42]


def test_outlines_part_touching_boxes_of_one_colour_only(themed, qtbot):
    plot, timeline = _timeline(qtbot)
    timeline.set_time_range(100.0, exact=True)
    blue, orange = theme.color("compute"), theme.color("memory")
    # Lane 0: two touching blue boxes, then orange after a sliver of blue (a warp of 1.2);
    # lane 1: a blue box alone, and a blue one of under 1/150 of the time shown.
    timeline.set_boxes([0, 0, 0, 0, 1, 1], [0, 10, 20, 20.5, 0, 50],
                       [10, 20, 20.5, 60, 30, 50.5], [blue, blue, blue, orange, blue, blue])
    outlined = [row for _, rows in timeline.boxes._outline_groups for row in rows.tolist()]
    assert sorted((x, width) for x, _, width, _ in outlined) == [(0.0, 10.0), (10.0, 10.0)]


def test_the_same_boxes_again_leave_the_grid_alone(themed, qtbot, monkeypatch):
    plot, timeline = _timeline(qtbot)
    result = _overlap_schedule()
    blue = theme.color("compute")
    timeline.show_schedule(result, lambda task: blue)
    rebuilt = []
    monkeypatch.setattr(timeline.boxes, "set_cells", lambda *args, **kw: rebuilt.append(1))
    timeline.show_schedule(result, lambda task: blue)
    assert rebuilt == []
    timeline.show_schedule(result, lambda task: theme.color("network"))  # a new colour
    assert rebuilt == [1]
