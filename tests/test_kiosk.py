"""Kiosk mode: refused shortcuts, the idle countdown, starting over, config checking."""

from __future__ import annotations

import gc
from collections import Counter

import pytest
from PySide6.QtCore import QCoreApplication, QEvent, Qt
from PySide6.QtWidgets import QApplication

from gpuviz import app as cli
from gpuviz import catalog, state
from gpuviz.core.model import END, AnimatedModel
from gpuviz.kiosk import (
    Kiosk,
    KioskConfig,
    KioskConfigError,
    config_from_mapping,
    live_qobjects,
    load_config,
)


@pytest.fixture
def lesson_one(monkeypatch):
    monkeypatch.setattr(catalog, "LESSONS", (catalog.LESSONS[0], catalog.LESSONS[-1]))


def make_kiosk(qtbot, **config):
    window = cli.make_window("dark", kiosk=KioskConfig(**config))
    qtbot.addWidget(window)
    window.resize(1280, 800)
    Kiosk.of(window).show()
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=2000)  # so shortcuts reach it
    window.show_figure(Kiosk.of(window).config.first)  # what app.run_window does
    return window


def shut(window):
    Kiosk.of(window).leave()
    window.clock.stop()


@pytest.fixture
def kiosk(themed, qtbot, lesson_one):
    window = make_kiosk(qtbot, idle_reset=0, lessons=(1,))
    yield window
    shut(window)


def test_no_menus_no_quit_no_escape(kiosk, qtbot):
    assert not kiosk.menuBar().isVisible()
    for key, modifier in ((Qt.Key_Q, Qt.ControlModifier), (Qt.Key_F4, Qt.AltModifier),
                          (Qt.Key_Escape, Qt.NoModifier), (Qt.Key_F11, Qt.NoModifier),
                          (Qt.Key_F5, Qt.NoModifier)):
        qtbot.keyClick(kiosk, key, modifier)
        assert kiosk.isVisible() and kiosk.isFullScreen()
        assert "present" not in kiosk.actions
    qtbot.keyClick(kiosk, Qt.Key_PageDown)  # keys do reach the window
    assert kiosk.current == kiosk.sequence()[1]
    assert not kiosk.close()  # what Alt+F4 and the title-bar button ask for
    assert kiosk.isVisible()
    assert "export" not in kiosk.actions and "quit" not in kiosk.actions
    assert not kiosk.export_figure() and not kiosk.copy_figure() and not kiosk.export_data()
    assert not kiosk.open_playlist() and not kiosk.save_playlist()


def test_lessons_limit_the_sidebar_and_navigation(kiosk):
    assert kiosk.tree.topLevelItemCount() == 1
    assert kiosk.sequence() == [spec.number for spec in catalog.LESSONS[0].figures]
    kiosk.step_figure(-1)
    assert kiosk.current == kiosk.sequence()[-1]


def test_operator_chord_leaves(themed, qtbot, lesson_one):
    window = make_kiosk(qtbot, idle_reset=0)
    qtbot.keyClick(window, Qt.Key_Q, Qt.ControlModifier | Qt.AltModifier | Qt.ShiftModifier)
    assert not window.isVisible()
    window.clock.stop()


def test_operator_chord_with_pin(themed, qtbot, lesson_one):
    window = make_kiosk(qtbot, idle_reset=0, pin="4711")
    window.actions["operator_exit"].trigger()
    dialog = Kiosk.of(window).pin_dialog
    assert dialog is not None and dialog.isVisible()
    dialog.setTextValue("0000")
    dialog.accept()
    assert window.isVisible()
    window.actions["operator_exit"].trigger()
    Kiosk.of(window).pin_dialog.setTextValue("4711")
    Kiosk.of(window).pin_dialog.accept()
    assert not window.isVisible()
    window.clock.stop()


def test_idle_countdown_keep_exploring(themed, qtbot, lesson_one):
    window = make_kiosk(qtbot, idle_reset=1, countdown=5)
    window.show_figure("1.3")
    window.models["1.3"].set("threads_per_block", 1024)
    countdown = Kiosk.of(window).countdown
    qtbot.waitUntil(countdown.isVisible, timeout=3000)
    assert "5 seconds" in countdown.label.text()
    qtbot.mouseClick(countdown.keep, Qt.LeftButton)
    assert not countdown.isVisible()
    assert window.current == "1.3" and window.models["1.3"].threads_per_block == 1024
    shut(window)


def test_idle_countdown_runs_out_and_starts_over(themed, qtbot, lesson_one):
    window = make_kiosk(qtbot, idle_reset=1, countdown=1, attract=2)
    window.show_figure("1.3")
    window.models["1.3"].set("threads_per_block", 1024)
    window.explain()
    qtbot.waitUntil(lambda: Kiosk.of(window).attracting, timeout=5000)
    assert window.current == window.sequence()[0]
    assert window.models["1.3"].threads_per_block == 256
    assert not window.lesson_pane.isVisible()
    first = window.current
    qtbot.waitUntil(lambda: window.current != first, timeout=4000)  # the attract loop
    qtbot.keyClick(window, Qt.Key_Right)  # a visitor: the loop stops
    assert not Kiosk.of(window).attracting
    shut(window)


def test_attract_loop_keeps_as_many_qobjects(themed, qtbot, monkeypatch):
    """200 attract steps (the timers' slots called directly, the animated figures playing a
    few frames), with a visitor and an idle reset every 45. After the first full cycle
    (every page built once), each time the loop is back at its first figure with the same
    pages kept, the same QObjects are alive, class by class, with Python's garbage
    collector off: a page in a reference cycle would outlive its deletion until a full
    collection, which gc.freeze() makes rare in the app (issue 36)."""
    monkeypatch.setattr("gpuviz.main_window.MAX_PAGES", 2)  # every step deletes a page
    window = make_kiosk(qtbot, idle_reset=3, countdown=2, attract=2, lessons=(1, 2))
    kiosk = Kiosk.of(window)
    figures = kiosk.config.figures

    def idle_reset() -> None:  # a visitor, then nobody: the countdown runs out
        qtbot.keyClick(window, Qt.Key_Right)
        kiosk.show_countdown()
        while kiosk.countdown.isVisible():
            kiosk._tick()

    gc.collect()
    gc.disable()
    try:
        idle_reset()
        seen: dict[frozenset[str], Counter] = {}  # the live QObjects by the pages kept
        compared = 0
        for step in range(1, 201):
            kiosk.attract_timer.stop()  # the test steps the loop, not the timer
            idle_reset() if step % 45 == 0 else kiosk._attract_step()
            model = window.models[window.current]
            for _ in range(3):  # a few frames of the clock, each refreshing the view
                if isinstance(model, AnimatedModel) and model.playing:
                    model.advance(0.2)
                QApplication.processEvents()  # a pass of the event loop: refreshes
            QCoreApplication.sendPostedEvents(None, QEvent.DeferredDelete)
            if len(window.models) < len(figures) or window.current != kiosk.config.first:
                continue
            counts = live_qobjects()
            before = seen.setdefault(frozenset(window.pages), counts)
            compared += before is not counts
            assert counts == before, f"step {step}: {counts - before} more, " \
                                     f"{before - counts} fewer"
    finally:
        gc.enable()
    assert compared >= 10
    shut(window)


def test_activity_postpones_the_countdown(themed, qtbot, lesson_one):
    window = make_kiosk(qtbot, idle_reset=2, countdown=5)
    for _ in range(5):  # 2.5 s in all, more than the idle time, with input every 0.5 s
        qtbot.wait(500)
        qtbot.keyClick(window.tree, Qt.Key_Down)
        assert not Kiosk.of(window).countdown.isVisible()
    shut(window)


def test_start_over_button(themed, qtbot, lesson_one):
    window = make_kiosk(qtbot, idle_reset=1, countdown=30)
    window.show_figure("1.3")
    window.models["1.3"].set("registers_per_thread", 128)
    qtbot.waitUntil(Kiosk.of(window).countdown.isVisible, timeout=3000)
    qtbot.mouseClick(Kiosk.of(window).countdown.start_over, Qt.LeftButton)
    assert window.current == window.sequence()[0]
    assert window.models["1.3"].registers_per_thread == 32
    assert not Kiosk.of(window).attracting
    shut(window)


def test_kiosk_starts_and_starts_over_at_its_figure(themed, qtbot, lesson_one):
    window = make_kiosk(qtbot, idle_reset=1, countdown=30, lessons=(1,), start="1.3")
    assert window.current == "1.3"
    window.show_figure("1.4")
    qtbot.waitUntil(Kiosk.of(window).countdown.isVisible, timeout=3000)
    qtbot.mouseClick(Kiosk.of(window).countdown.start_over, Qt.LeftButton)
    assert window.current == "1.3"
    shut(window)


def test_figure_option_picks_where_the_kiosk_starts(monkeypatch, capsys):
    seen = {}
    monkeypatch.setattr("gpuviz.app.run_window", lambda *a, **k: seen.update(k) or 0)
    assert cli.main(["--kiosk", "--figure", "1.3"]) == 0
    assert seen["kiosk"].first == "1.3"
    assert cli.main(["--kiosk", "--lessons", "1", "--figure", "2.1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "figure 2.1 is not in the chosen lessons" in err[0]


def test_kiosk_covers_the_screen_and_follows_it(kiosk, qapp):
    screen = kiosk.screen()
    assert kiosk.geometry().contains(screen.geometry())
    assert kiosk.windowFlags() & Qt.FramelessWindowHint
    assert kiosk.windowFlags() & Qt.WindowStaysOnTopHint
    kiosk.setGeometry(10, 10, 400, 300)  # as if the screen had changed under it
    screen.geometryChanged.emit(screen.geometry())
    assert kiosk.geometry().contains(screen.geometry()) and kiosk.isFullScreen()


def test_kiosk_saves_no_settings(themed, qtbot, lesson_one):
    state.reset_all()
    window = make_kiosk(qtbot, idle_reset=0)
    window.show_figure("1.3")
    window.models["1.3"].set("registers_per_thread", 128)
    shut(window)
    assert state.settings().allKeys() == []


def test_config_file(tmp_path):
    path = tmp_path / "kiosk.toml"
    path.write_text('[kiosk]\nlessons = "1"\nidle_reset = 60\ncountdown = 10\n'
                    'attract = 15\npin = "4711"\ntheme = "projector"\n', encoding="utf-8")
    config = load_config(path)
    assert config == KioskConfig((1,), 60.0, 10.0, 15.0, "4711", "projector")
    assert config_from_mapping({"lessons": [1, "3-4"]}).lessons == (1, 3, 4)


@pytest.mark.parametrize("content, needle", [
    ("idle_reset = [", "not valid TOML"),
    ("idle_reset = 'soon'", "expected a number"),
    ("idle_reset = -5", "out of range"),
    ("countdown = 0", "out of range"),
    ("attract = true", "expected a number"),
    ("lessons = '4-1'", "backwards"),
    ("lessons = '99'", "no lesson 99"),
    ("lessons = 'x'", "not a number"),
    ("pin = ''", "pin"),
    ("theme = 'neon'", "theme"),
    ("idel_reset = 5", "unknown setting 'idel_reset'"),
    ("figure = '9.9'", "figure: unknown figure '9.9'"),
    ("figure = '1.2'\nstep = 99999", "step: 99999 is out of range; allowed: a whole number"),
    ("figure = '1.3'\nstep = 1", "step: figure 1.3 is not animated"),
    ("step = true", "step: expected a number or \"end\""),
])
def test_bad_config_is_refused_before_a_window_opens(tmp_path, capsys, monkeypatch,
                                                     content, needle):
    monkeypatch.setattr("gpuviz.app.run_window",
                        lambda *a, **k: pytest.fail("a window was opened"))
    path = tmp_path / "kiosk.toml"
    path.write_text(content, encoding="utf-8")
    code = cli.main(["--kiosk", "--config", str(path)])
    err = capsys.readouterr().err
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpuviz: error: kiosk:")
    assert needle in lines[0]


@pytest.mark.parametrize("args, needle", [
    (["--kiosk", "--idle-reset", "abc"], "not a number"),
    (["--kiosk", "--idle-reset", "1e9"], "out of range"),
    (["--kiosk", "--lessons", "0-2"], "no lesson 0"),
    (["--kiosk", "--config", "/nonexistent/kiosk.toml"], "No such file"),
    (["--idle-reset", "5"], "need --kiosk"),
])
def test_bad_kiosk_options_exit_2(capsys, args, needle):
    assert cli.main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0]


def test_command_line_wins_over_the_config(tmp_path, monkeypatch):
    path = tmp_path / "kiosk.toml"
    path.write_text("idle_reset = 60\nlessons = '1-2'\n", encoding="utf-8")
    seen = {}
    monkeypatch.setattr("gpuviz.app.run_window",
                        lambda *a, **k: seen.update(k) or 0)
    assert cli.main(["--kiosk", "--config", str(path), "--idle-reset", "30",
                     "--lessons", "1"]) == 0
    config = seen["kiosk"]
    assert config.idle_reset == 30 and config.lessons == (1,)
    assert config.figures == tuple(s.number for s in catalog.LESSONS[0].figures)


def test_lessons_without_figures_are_refused(monkeypatch):
    empty = catalog.Lesson(99, "empty", "Empty", "99-empty.md")
    monkeypatch.setattr(catalog, "LESSONS", (catalog.LESSONS[0], empty))
    with pytest.raises(KioskConfigError, match="no figures"):
        KioskConfig(lessons=(99,)).with_figures()


def test_the_kiosk_starts_and_starts_over_at_its_step(themed, qtbot, lesson_one, tmp_path,
                                                      monkeypatch):
    path = tmp_path / "kiosk.toml"
    path.write_text("figure = '1.2'\nstep = 3\nidle_reset = 1\ncountdown = 30\n",
                    encoding="utf-8")
    seen = {}
    monkeypatch.setattr("gpuviz.app.run_window", lambda *a, **k: seen.update(k) or 0)
    assert cli.main(["--kiosk", "--config", str(path)]) == 0
    config = seen["kiosk"]
    assert (config.first, config.step) == ("1.2", 3)
    assert cli.main(["--kiosk", "--config", str(path), "--figure", "1.2", "--set",
                     "step=end"]) == 0  # the command line wins
    assert (seen["kiosk"].first, seen["kiosk"].step) == ("1.2", END)
    window = make_kiosk(qtbot, **{name: getattr(config, name) for name in
                                  ("lessons", "idle_reset", "countdown", "start", "step")})
    Kiosk.of(window).go_to_start_step()  # what app.run_window does after showing it
    model = window.models["1.2"]
    assert model.current_step == 3
    model.step()
    window.show_figure("1.3")
    qtbot.waitUntil(Kiosk.of(window).countdown.isVisible, timeout=3000)
    qtbot.mouseClick(Kiosk.of(window).countdown.start_over, Qt.LeftButton)
    assert window.current == "1.2" and model.current_step == 3
    shut(window)


def test_buttons_share_the_application_palette_so_rebuilt_pages_leave_nothing(themed, qtbot):
    """Issue 36: under our palette Qt gives every widget a copy with its own key, and
    Fusion keys the pixmaps of button panels, combo and spin boxes by it; each new one
    left 270-900 bytes for good (4 MB an hour of a kiosk rebuilding its figures). The
    style draws them with the application's palette where the colours are the same."""
    import ctypes

    from PySide6.QtGui import QPalette
    from PySide6.QtWidgets import (
        QComboBox,
        QPushButton,
        QSpinBox,
        QStyleOptionButton,
        QVBoxLayout,
        QWidget,
    )

    from gpuviz.theme import _with_shared_palette

    host = QWidget()
    qtbot.addWidget(host)
    layout = QVBoxLayout(host)
    host.show()
    button = QPushButton("Press")
    layout.addWidget(button)
    option = QStyleOptionButton()
    option.initFrom(button)
    assert option.palette.cacheKey() != QApplication.palette().cacheKey()
    option.palette.setCurrentColorGroup(QPalette.Disabled)
    shared = _with_shared_palette(option)
    assert shared.palette.cacheKey() == QApplication.palette().cacheKey()
    assert shared.palette.currentColorGroup() == QPalette.Disabled
    assert shared.rect == option.rect and shared.state == option.state
    own = QPalette(button.palette())
    own.setColor(QPalette.Button, Qt.red)  # a widget of its own colours keeps them
    button.setPalette(own)
    option.initFrom(button)
    assert _with_shared_palette(option) is option

    try:
        mallinfo2 = ctypes.CDLL("libc.so.6").mallinfo2
    except (OSError, AttributeError):
        pytest.skip("no glibc mallinfo2 to count the bytes in use")

    class MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
            "uordblks", "fordblks", "keepcost")]

    mallinfo2.restype = MallInfo2

    def build_and_drop(count: int) -> None:
        for _ in range(count):
            for widget in (QPushButton("Press"), QComboBox(), QSpinBox()):
                layout.addWidget(widget)
                QApplication.processEvents()  # shown, laid out, painted
                widget.deleteLater()
            QCoreApplication.sendPostedEvents(None, QEvent.DeferredDelete)

    build_and_drop(100)  # the caches the first ones fill
    gc.collect()
    before = mallinfo2().uordblks
    build_and_drop(400)
    gc.collect()
    grown = mallinfo2().uordblks - before
    # About 2,000 bytes a triple without the shared palette; heap bookkeeping adds ~100 KB.
    assert grown < 400 * 600, f"{grown / 400:.0f} bytes left per button, combo and spin box"
