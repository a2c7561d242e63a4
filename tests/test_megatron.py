"""Figure 9.1: the Megatron MLP split (tensor_pipeline.megatron)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuviz.models.tensor_pipeline import megatron as mg

MODES = [m for m, _ in mg.MODES]


@pytest.mark.parametrize("t", [2, 4])
@pytest.mark.parametrize("seed", range(6))
def test_the_splits_equal_the_unsplit_mlp_on_random_float32_matrices(t, seed):
    check = mg.split_check(t, seed)
    assert check.forward < 1e-5 and check.backward < 1e-5 and check.rows_first < 1e-5
    # GeLU of partial sums is not GeLU of the sum: without the extra all-reduce it is wrong.
    assert check.rows_first_no_allreduce > 1e-2 * check.scale


def test_forward_has_one_allreduce_after_local_column_then_row_matmuls():
    m = mg.MegatronModel()
    out = m.out
    assert [s.kind for s in out.stages] == [mg.COMPUTE] * 3 + [mg.ALLREDUCE]
    assert out.allreduces == 1 and out.allreduced_width == 1
    assert out.stages[0].blocks == ("Y₁ = X A₁", "Y₂ = X A₂")
    assert out.stages[0].width == 2  # 4h / t columns of X A on each of 2 GPUs
    assert m.readouts()["step"].text == "0 of 4"
    m.step()
    assert m.readouts()["step"].value == 1 and "column-parallel" in m.readouts()["now"].text
    m.finish()
    assert m.readouts()["step"].text == "4 of 4" and m.finished


def test_backward_moves_the_allreduce_to_the_input_gradient():
    stages = mg.stages("backward", 4)
    assert [s.kind for s in stages][-1] == mg.ALLREDUCE
    assert "dX" in stages[-1].blocks[0] and "input gradient" in stages[-1].title
    assert all(s.kind == mg.COMPUTE for s in stages[:-1])


def test_wrong_split_adds_an_allreduce_four_times_larger_before_the_gelu():
    m = mg.MegatronModel()
    m.mode = "wrong"
    out = m.out
    kinds = [s.kind for s in out.stages]
    assert kinds == [mg.COMPUTE, mg.EXTRA, mg.COMPUTE, mg.COMPUTE, mg.ALLREDUCE]
    assert "GeLU" in out.stages[2].title  # the extra all-reduce comes before the GeLU
    assert out.allreduces == 2 and out.allreduced_width == 5
    assert m.readouts()["extra"].value == 4.0 and m.readouts()["extra"].text == "4.00×"


def test_a_new_seed_keeps_the_step_and_another_setting_rewinds():
    m = mg.MegatronModel()
    m.step()
    m.step()
    m.seed = 5
    assert m.steps_done == 2 and m.out.check == mg.split_check(2, 5)
    m.gpus = 4
    assert m.steps_done == 0


@given(t=st.sampled_from([2, 4]), mode=st.sampled_from(MODES), seed=st.integers(0, 9999),
       steps=st.integers(0, 8), dt=st.floats(0, 20))
@settings(max_examples=60, deadline=None)
def test_sweep(t, mode, seed, steps, dt):
    m = mg.MegatronModel()
    with m.batch():
        m.gpus, m.mode, m.seed = t, mode, seed
    for _ in range(steps):
        m.step()
    m.set_playing(True)
    m.advance(dt)
    out = m.out
    assert 0 <= out.done <= len(out.stages) == m.total_steps
    assert all(len(s.blocks) in (1, t) for s in out.stages)
    check = out.check
    assert max(check.forward, check.backward, check.rows_first) < 1e-5
    assert all(r.text for r in m.readouts().values())
    m.set_playing(False)


@pytest.mark.parametrize("size", [(900, 720), (1000, 700)])  # the page at 1280x800, 1024x768
def test_its_texts_keep_to_their_columns_on_a_small_projector(qapp, qtbot, size):
    """At 1024x768 in the projector look "column-parallel" ran into its neighbours and
    "GPU 1" off the canvas: the headers and boxes break their lines to their column."""
    from PySide6.QtCore import QPointF
    from PySide6.QtGui import QFontMetricsF

    from gpuviz import catalog, theme
    from gpuviz.views.tensor_pipeline.megatron import CELL_W
    from tests import figure_driver as drive

    theme.apply("projector", qapp)
    try:
        page = drive.build_page(catalog.figure("9.1"), size)
        qtbot.addWidget(page)
        view = page.view
        box = view.box

        def x_px(x: float) -> float:
            return box.mapViewToScene(QPointF(x, 0)).x()

        metrics = QFontMetricsF(theme.font(9))
        lines = [line for grid in (view.headers, view.cells) for text in grid._texts
                 for line in text.split("\n")]
        assert "parallel" in lines  # broken after its hyphen
        assert max(map(metrics.horizontalAdvance, lines)) <= x_px(CELL_W) - x_px(0)
        names = QFontMetricsF(theme.font(9, bold=True))
        assert x_px(view.gpu_labels[0].x) - names.horizontalAdvance("GPU 1") >= x_px(
            box.viewRange()[0][0])
    finally:
        theme.apply("dark", qapp)
