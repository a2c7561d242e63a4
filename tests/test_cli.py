"""The command line: listing, readouts, screenshots and refusing bad input clearly."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from PySide6.QtGui import QImage

from gpuviz import app as cli
from gpuviz import catalog


def run(capsys, *args):
    code = cli.main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_list_names_every_lesson_and_figure(capsys):
    code, out, _ = run(capsys, "--list")
    assert code == 0
    for lesson in catalog.LESSONS:
        assert f"Lesson {lesson.number}: {lesson.title}" in out
    for spec in catalog.all_figures():
        assert spec.number in out and spec.title in out


def test_readout_of_the_failing_launch(capsys):
    code, out, _ = run(capsys, "--figure", "1.3", "--set", "threads_per_block=1024",
                       "--set", "registers_per_thread=65", "--readout")
    assert code == 0
    data = json.loads(out)
    assert data["figure"] == "1.3"
    assert data["parameters"]["threads_per_block"] == 1024
    assert data["readouts"]["resident_blocks"] == {"value": 0, "unit": "blocks",
                                                   "text": "0 blocks"}
    assert data["readouts"]["registers_per_block"]["value"] == 73728
    assert data["readouts"]["launch"] == {"value": False, "unit": "", "text": "fails"}


@pytest.mark.parametrize("args, needle", [
    (["--figure", "9.9"], "unknown figure '9.9'"),
    (["--figure", "1.3", "--set", "nope=1", "--readout"], "no parameter 'nope'"),
    (["--figure", "1.3", "--set", "threads_per_block=2000", "--readout"], "out of range"),
    (["--figure", "1.3", "--set", "threads_per_block=abc", "--readout"], "not a number"),
    (["--figure", "1.3", "--set", "gpu=x100", "--readout"], "not a choice"),
    (["--figure", "1.3", "--set", "threads_per_block", "--readout"], "NAME=VALUE"),
    (["--readout"], "need --figure"),
    (["--figure", "7.1", "--set", "step=-1", "--readout"],
     "--set step: -1 is out of range; allowed: a whole number from 0 to 6, or end"),
    (["--figure", "7.1", "--set", "step=99999", "--readout"], "out of range"),
    (["--figure", "7.1", "--set", "step=abc", "--readout"], "'abc' is not a step"),
    (["--figure", "1.3", "--set", "step=1", "--readout"],
     "figure 1.3 is not animated, so it has no steps; animated figures: 1.2"),
    (["--size", "12"], "WIDTHxHEIGHT"),
    (["--theme", "neon"], "invalid choice"),
    (["--bogus"], "unrecognized arguments"),
])
def test_wrong_input_exits_2_with_one_clear_line(capsys, args, needle):
    code, out, err = run(capsys, *args)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpuviz: error:")
    assert needle in lines[0]


def test_screenshot_writes_a_png(tmp_path, capsys):
    path = tmp_path / "occupancy.png"
    code, _, _ = run(capsys, "--figure", "1.3", "--screenshot", str(path), "--size",
                     "1600x1000", "--theme", "projector")
    assert code == 0
    image = QImage(str(path))
    assert (image.width(), image.height()) == (1600, 1000)


def test_unwritable_screenshot_is_refused(tmp_path, capsys):
    code, _, err = run(capsys, "--figure", "1.3", "--screenshot",
                       str(tmp_path / "missing" / "x.png"))
    assert code == 2 and "cannot write" in err


def test_module_entry_point_never_shows_a_traceback():
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    result = subprocess.run([sys.executable, "-m", "gpuviz", "--figure", "1.3", "--set",
                             "registers_per_thread=-5", "--readout"],
                            capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and "out of range" in result.stderr


def test_a_reader_that_leaves_early_gets_no_traceback():
    """`gpuviz --readout ... | head -2`: the pipe is closed before the JSON is written."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    process = subprocess.Popen([sys.executable, "-m", "gpuviz", "--figure", "8.3",
                                "--readout"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=env)
    process.stdout.close()
    _, err = process.communicate(timeout=60)
    assert "Traceback" not in err.decode() and "BrokenPipe" not in err.decode()


def test_readout_at_a_step(capsys):
    """step= comes after the parameters, whatever the order typed: a new GPU count would
    otherwise rewind 7.1."""
    code, out, _ = run(capsys, "--figure", "7.1", "--set", "step=2", "--set", "gpus=8",
                       "--readout")
    assert code == 0
    data = json.loads(out)
    model = catalog.figure("7.1").make_model()
    model.gpus = 8
    model.step()
    model.step()
    assert (data["step"], data["steps"]) == (2, model.steps)
    assert data == cli.readout_json(catalog.figure("7.1"), model)
    code, out, _ = run(capsys, "--figure", "7.1", "--set", "step=end", "--readout")
    data = json.loads(out)
    assert data["step"] == data["steps"] == 6 and type(data["step"]) is int


def test_readout_gives_steps_only_for_animated_figures(capsys):
    playhead = json.loads(run(capsys, "--figure", "8.3", "--readout")[1])
    assert playhead["step"] == playhead["steps"] > 0  # it opens with the timeline drawn
    assert list(playhead)[:4] == ["figure", "parameters", "step", "steps"]
    assert "step" not in json.loads(run(capsys, "--figure", "1.3", "--readout")[1])


def test_screenshot_at_a_step(tmp_path, capsys):
    images = []
    for step in ("0", "end"):
        path = tmp_path / f"walk-{step}.png"
        assert run(capsys, "--figure", "6.3", "--set", f"step={step}", "--screenshot",
                   str(path))[0] == 0
        images.append(QImage(str(path)))
    assert images[0] != images[1]  # the table filled


def test_the_window_opens_at_the_step_after_the_saved_settings(qapp, monkeypatch):
    """gpuviz --figure 7.1 --set step=end: the saved GPU count (which rewinds 7.1 when
    set) is restored first, the step is taken last, and Play starts over from the end."""
    from gpuviz import state

    state.reset_all()
    saved = catalog.figure("7.1").make_model()
    saved.gpus = 8
    state.save_figure(state.settings(), "7.1", saved)
    windows = []
    make_window = cli.make_window
    monkeypatch.setattr(cli, "make_window",
                        lambda *a, **k: windows.append(make_window(*a, **k)) or windows[-1])
    monkeypatch.setattr(type(qapp), "exec", lambda self: 0)
    assert cli.main(["--figure", "7.1", "--set", "step=end"]) == 0
    window = windows[0]
    try:
        qapp.processEvents()
        model = window.models["7.1"]
        assert window.current == "7.1" and model.gpus == 8
        assert model.finished and model.current_step == model.steps
        model.set_playing(True)
        assert model.current_step == 0 and model.playing
        model.set_playing(False)
    finally:
        window.clock.stop()
        window.remember = False
        window.close()
        window.deleteLater()
        state.reset_all()


def test_set_revealed_holds_whatever_the_order_of_the_guess():
    spec = catalog.figure("10.1")
    model = cli.make_model(spec, {"revealed": True, "guess_idle": 40.0})
    assert model.revealed and model.guess_idle == 40.0


def test_set_applies_in_the_models_order_whatever_the_typed_order():
    """2.1 keeps a scale per op: a scale typed before its op once landed on the op shown
    before and was lost."""
    spec = catalog.figure("2.1")
    for values in ({"intensity_scale": 64.0, "selected_op": "prefill_matmul"},
                   {"selected_op": "prefill_matmul", "intensity_scale": 64.0}):
        model = cli.make_model(spec, values)
        assert (model.selected_op, model.intensity_scale) == ("prefill_matmul", 64.0)


FIRST_USE_SCRIPT = """
import sys
from PySide6.QtWidgets import QApplication, QPushButton, QSlider
from gpuviz import app
from gpuviz.main_window import MainWindow

def exec_(_app=None):
    for _ in range(10):  # the window, the figure, then what runs once they are painted
        QApplication.processEvents()
    window = next(w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow))
    window.remember = False
    page = window.page(window.current)
    loaded = set(sys.modules)
    for slider in page.findChildren(QSlider):
        for value in range(slider.minimum(), slider.maximum() + 1,
                           max(1, (slider.maximum() - slider.minimum()) // 20)):
            slider.setValue(value)
            QApplication.processEvents()
    for button in page.view.findChildren(QPushButton):
        if button.isVisible() and button.isEnabled() and not button.isCheckable():
            button.click()
            QApplication.processEvents()
    print(sorted(set(sys.modules) - loaded))
    return 0

QApplication.exec = exec_
sys.exit(app.main(["--figure", sys.argv[1]]))
"""


@pytest.mark.parametrize("number", ["12.1", "12.5"])
def test_first_drags_and_presses_import_nothing(number, tmp_path):
    """What numpy imports on first use (numpy.ma on the first np.unique, numpy.random)
    is imported once the window is painted, not in the learner's first drag of a slider
    (7-20 ms: 12.1's context, with 12.1 opened first) or press of a button (12.5's
    Simulate)."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "HOME": str(tmp_path),
           "XDG_CONFIG_HOME": str(tmp_path / "config")}
    result = subprocess.run([sys.executable, "-c", FIRST_USE_SCRIPT, number],
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"
