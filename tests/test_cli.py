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
