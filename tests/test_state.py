"""Remembered state: figure values survive a restart; bad entries and files are harmless."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings

from gpuviz import app as cli
from gpuviz import state
from gpuviz.main_window import MainWindow
from gpuviz.models.gpu_architecture import OccupancyModel


@pytest.fixture(autouse=True)
def fresh_settings():
    state.reset_all()
    yield
    state.reset_all()


def test_values_round_trip_and_only_changes_are_stored(tmp_path):
    store = QSettings(str(tmp_path / "s.conf"), QSettings.IniFormat)
    model = OccupancyModel()
    model.set("threads_per_block", 1024)
    model.set("registers_per_thread", 65)
    state.save_figure(store, "1.3", model)
    store.sync()
    again = QSettings(str(tmp_path / "s.conf"), QSettings.IniFormat)
    assert set(again.allKeys()) == {"figures/1.3/threads_per_block",
                                    "figures/1.3/registers_per_thread"}
    fresh = OccupancyModel()
    assert state.load_figure(again, "1.3", fresh) == []
    assert fresh.values() == model.values()


def test_unknown_and_invalid_entries_are_ignored(tmp_path):
    store = QSettings(str(tmp_path / "s.conf"), QSettings.IniFormat)
    store.setValue("figures/1.3/no_such_parameter", 5)
    store.setValue("figures/1.3/threads_per_block", "lots")
    store.setValue("figures/1.3/gpu", "x9000")
    store.setValue("figures/1.3/registers_per_thread", "nan")
    store.setValue("figures/1.3/shared_memory_kb", "1e9")  # clamped, not refused
    model = OccupancyModel()
    ignored = state.load_figure(store, "1.3", model)
    assert set(ignored) == {"no_such_parameter", "threads_per_block", "gpu",
                            "registers_per_thread"}
    defaults = OccupancyModel()
    assert model.threads_per_block == defaults.threads_per_block
    assert model.shared_memory_kb == OccupancyModel.parameter("shared_memory_kb").maximum


def test_figure_values_survive_a_restart_and_reset_forgets_them(themed, qtbot):
    window = MainWindow("dark")
    qtbot.addWidget(window)
    window.show_figure("1.3")
    window.models["1.3"].set("registers_per_thread", 128)
    window.close()
    second = MainWindow("dark")
    qtbot.addWidget(second)
    second.show_figure("1.3")
    assert second.models["1.3"].registers_per_thread == 128
    second.reset_figure()
    second.close()
    third = MainWindow("dark")
    qtbot.addWidget(third)
    assert third.model("1.3").registers_per_thread == OccupancyModel().registers_per_thread


def test_corrupt_file_is_moved_aside_and_reported_once(tmp_path):
    path = tmp_path / "gpuviz.conf"
    bad = b"\x00\xff[figures]\n1.3\\threads_per_block=@ByteArray(\n"
    path.write_bytes(bad)
    message = state.recover_corrupt_settings(path)
    assert message and "default settings" in message and ".bak" in message
    assert (tmp_path / "gpuviz.conf.bak").read_bytes() == bad
    assert not path.exists()
    assert state.recover_corrupt_settings(path) is None  # said once, not at every start
    path.write_bytes(b"[x\n===\n[[[\n")
    assert state.recover_corrupt_settings(path)
    assert (tmp_path / "gpuviz.conf.bak.1").exists()  # the older copy is kept too


def test_a_good_file_is_left_alone(tmp_path):
    path = tmp_path / "gpuviz.conf"
    path.write_text("[view]\ntheme=dark\n", encoding="utf-8")
    assert state.recover_corrupt_settings(path) is None
    assert path.exists()


def test_bad_preferences_fall_back_to_defaults(tmp_path):
    store = QSettings(str(tmp_path / "p.conf"), QSettings.IniFormat)
    store.setValue(state.THEME_KEY, "neon")
    store.setValue(state.TEXT_SCALE_KEY, "huge")
    assert state.load_preferences(store) == state.Preferences()
    store.setValue(state.TEXT_SCALE_KEY, 99)
    assert state.load_preferences(store).text_scale == 1.0


def test_reset_settings_option_clears_everything(capsys):
    store = state.settings()
    store.setValue("figures/1.3/threads_per_block", 1024)
    store.setValue(state.THEME_KEY, "light")
    store.sync()
    assert cli.main(["--reset-settings"]) == 0
    assert "settings cleared" in capsys.readouterr().out
    assert state.settings().allKeys() == []
