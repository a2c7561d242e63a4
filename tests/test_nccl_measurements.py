"""Measurements of one's own on 7.3 and 7.4: nccl-tests output, the ring's alpha and beta
fitted to it, the dots, Apply fit and File > Open measurements."""

from __future__ import annotations

import numpy as np
import pytest

from gpuviz import state
from gpuviz.data import DataError
from gpuviz.imports.nccl_tests import looks_like_nccl_tests, parse_nccl_tests, read_nccl_tests
from gpuviz.models import alpha_beta as ab
from gpuviz.models.collectives import AlphaBetaModel, MultiNodeModel
from gpuviz.paths import resource

SAMPLE = resource("samples", "nccl_tests_all_reduce_2x8xH100.txt")
SAMPLE_TEXT = SAMPLE.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def sample():
    return read_nccl_tests(SAMPLE)


def test_the_sample_is_read_row_by_row(sample):
    assert looks_like_nccl_tests(SAMPLE_TEXT)
    assert (sample.collective, sample.ranks, sample.nodes) == ("all_reduce", 16, 2)
    assert sample.device == "NVIDIA H100 80GB HBM3"
    assert len(sample.sizes) == 31  # 8 B to 8 GiB by 2
    assert sample.sizes[0] == 8 and sample.sizes[-1] == 8 * 2**30
    assert sample.times[0] == pytest.approx(69.12e-6)
    assert sample.times[-1] == pytest.approx(33605e-6)
    assert sample.busbw[-1] == pytest.approx(479.28e9)
    assert sample.in_place_times[-1] == pytest.approx(33628e-6)
    # nccl-tests' bus bandwidth is its algbw times 2(P-1)/P: the sample is self-consistent
    big = sample.sizes > 1e6
    assert np.allclose(sample.busbw[big], sample.algbw[big] * ab.BUS_FACTOR["all_reduce"](16),
                       rtol=2e-3)


def _sample_with(old: str, new: str) -> str:
    assert old in SAMPLE_TEXT
    return SAMPLE_TEXT.replace(old, new, 1)


LAST_ROW = SAMPLE_TEXT.splitlines().index(
    next(line for line in SAMPLE_TEXT.splitlines() if line.strip().startswith("8589934592")))
CUT_ROW = "\n".join(SAMPLE_TEXT.splitlines()[:LAST_ROW] + ["  8589934592    2147483648  float"])


@pytest.mark.parametrize(("text", "says"), [
    ("", "line 1: the file is empty"),
    ("\n".join(SAMPLE_TEXT.splitlines()[:LAST_ROW]), "cut mid-table"),
    (CUT_ROW, f"line {LAST_ROW + 1}: a row with 3 fields"),
    (_sample_with("33605  255.62  479.28       0", "33605  255.62  479.28      12"),
     f"line {LAST_ROW + 1}: #wrong is 12 at 8589934592 B"),
    (_sample_with("starting: all_reduce_perf", "starting: broadcast_perf"),
     "line 18: broadcast_perf is not supported"),
    (_sample_with("# Collective test starting: all_reduce_perf\n", ""), "no test name"),
    ("\n".join(line for line in SAMPLE_TEXT.splitlines() if "Rank" not in line),
     "no '#  Rank"),
])
def test_a_bad_file_gives_one_line_naming_file_and_line(tmp_path, text, says):
    path = tmp_path / "run.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataError) as caught:
        read_nccl_tests(path)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{path}: line ")
    assert says in message


def test_launcher_prefixes_and_older_columns_are_read():
    """srun's "0: " before every line; an older run without `root` and with N/A checks."""
    text = "\n".join(f"0: {line}" for line in SAMPLE_TEXT.splitlines())
    assert len(parse_nccl_tests(text).sizes) == 31
    older = _sample_with("     float     sum      -1    69.12    0.00    0.00       0",
                         "     float     sum    69.12    0.00    0.00     N/A")
    assert parse_nccl_tests(older).times[0] == pytest.approx(69.12e-6)
    assert not looks_like_nccl_tests('name = "my GPU"\n[memory]\nhbm_gb = 80\n')


@pytest.mark.parametrize("collective", ["all_reduce", "all_gather", "reduce_scatter",
                                        "all_to_all"])
def test_the_fit_recovers_alpha_and_beta_of_the_ring(collective):
    sizes = 8.0 * 2.0 ** np.arange(31)
    alpha, beta = 4.5e-6, 1 / 370e9
    times = ab.collective_cost(collective, "ring", 8).time(sizes, alpha, beta)
    fit = ab.fit_alpha_beta(collective, 8, sizes, times)
    assert fit.alpha == pytest.approx(alpha, rel=1e-9)
    assert fit.beta == pytest.approx(beta, rel=1e-9)
    assert fit.worst_error < 1e-9


def test_the_fit_keeps_alpha_and_beta_not_negative():
    """Times that fall with the size would ask for a negative beta: alpha alone then."""
    sizes = np.array([1e3, 1e6, 1e9])
    fit = ab.fit_alpha_beta("all_reduce", 8, sizes, np.array([30e-6, 29e-6, 28e-6]))
    assert fit.beta == 0 and fit.alpha > 0


def test_the_fit_on_the_sample_is_sensible(sample):
    fit = ab.fit_alpha_beta(sample.collective, sample.ranks, sample.sizes, sample.times)
    assert 1e-6 < fit.alpha < 5e-6  # a few µs a step: 30 steps make the ~70 µs floor
    assert 350e9 < 1 / fit.beta < 480e9  # below the 479 GB/s peak busbw it must reach
    assert 0.2 < fit.worst_error < 0.6  # NCCL is no pure ring at mid sizes


def test_7_3_reads_out_the_fit_and_applies_it(sample):
    model = AlphaBetaModel()
    assert "fit_alpha" not in model.readouts()
    model.load_measurements(sample)
    rows = model.readouts()
    assert rows["fit_alpha"].unit == "µs" and rows["fit_bandwidth"].unit == "GB/s"
    fit = model.measured.fit
    model.apply_fit()
    assert model.gpus == 16
    assert model.alpha_us == pytest.approx(fit.alpha / ab.US)
    assert model.bandwidth_gbs == pytest.approx(1 / fit.beta / ab.GB)
    assert model.out.times["ring"][-1] == pytest.approx(fit.time(model.out.sizes[-1]))
    model.reset()  # the measurements are no parameter: Reset keeps them
    assert model.measured is not None
    model.clear_measurements()
    assert "fit_alpha" not in model.readouts()
    model.apply_fit()  # nothing to apply: nothing changes
    assert model.gpus == AlphaBetaModel.gpus.default


def test_7_4_shows_the_measured_bus_bandwidth_at_n_and_applies_the_layout(sample):
    model = MultiNodeModel()
    model.load_measurements(sample)
    model.set("message_bytes", 2**30)
    assert model.readouts()["measured_busbw"].value == pytest.approx(436.95)
    model.apply_fit()
    assert (model.nodes, model.gpus_per_node) == (2, 8)
    model.set("message_bytes", 1e10)  # past the largest size measured: no number
    assert model.readouts()["measured_busbw"].value is None


def test_open_measurements_draws_the_dots_on_7_3(themed, qtbot, tmp_path):
    from gpuviz.main_window import MainWindow

    state.reset_all()
    window = MainWindow("dark")
    qtbot.addWidget(window)
    try:
        window.show_figure("1.1")
        assert not window.offers("open_measurements")
        window.show_figure("7.3")
        bad = tmp_path / "cut.txt"
        bad.write_text(CUT_ROW, encoding="utf-8")
        assert not window.open_measurements(bad)
        assert "cut mid-table" in window.messages[-1]
        assert window.open_measurements(SAMPLE)
        view = window.page("7.3").view
        view.refresh()
        shown = [item for item in view.measured_dots.items if item.isVisible()]
        assert len(shown) == 31
        assert not view.measured_buttons.isHidden()
        view.measured_buttons.apply.click()
        assert window.models["7.3"].gpus == 16
        view.measured_buttons.clear.click()
        view.refresh()
        assert not any(item.isVisible() for item in view.measured_dots.items)
        assert view.measured_buttons.isHidden()
    finally:
        window.clock.stop()
        state.reset_all()


def test_an_imported_table_opens_with_every_7_3_and_7_4_of_the_run():
    """`gpuviz --import run.txt --figure 7.3 --readout` reads out the fit."""
    from gpuviz.imports import NCCL_TESTS, import_file
    from gpuviz.models.collectives import RUN_MEASUREMENTS

    try:
        assert import_file(SAMPLE).kind == NCCL_TESTS
        assert AlphaBetaModel().readouts()["fit_alpha"].value == pytest.approx(2.81, abs=0.01)
        assert MultiNodeModel().measured.table.ranks == 16
    finally:
        RUN_MEASUREMENTS.clear()
    assert AlphaBetaModel().measured is None
