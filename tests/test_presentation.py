"""Lecture mode: clicker keys, stepping animations, blanking, playlists, the CLI options."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from gpuviz import app as cli
from gpuviz import catalog, state, theme
from gpuviz.core.model import END
from gpuviz.playlist import PlaylistEntry, PlaylistError, parse_playlist, playlist_text
from gpuviz.presentation import Presenter

LESSON_ONE = catalog.LESSONS[0]


@pytest.fixture
def lesson_one(monkeypatch):
    """Only lesson 1 (1.1 still, 1.2 animated, 1.3, 1.4): fast and independent of the
    lessons other people are building."""
    monkeypatch.setattr(catalog, "LESSONS", (LESSON_ONE,))
    return [spec.number for spec in LESSON_ONE.figures]


@pytest.fixture
def window(themed, qtbot, lesson_one):
    state.reset_all()
    window = cli.make_window("dark", remember=False)
    qtbot.addWidget(window)
    window.resize(1280, 800)
    window.show()
    window.show_figure(lesson_one[0])
    yield window
    window.clock.stop()
    theme.apply("dark")


def press(qtbot, window, key):
    qtbot.keyClick(window, key)


def numbers(entries: list[PlaylistEntry]) -> list[str]:
    return [entry.number for entry in entries]


def entries(*numbers: str) -> list[PlaylistEntry]:
    return [PlaylistEntry(number) for number in numbers]


def test_f5_enters_and_esc_leaves_lecture_mode(window, qtbot):
    press(qtbot, window, Qt.Key_F5)
    assert Presenter.of(window).active
    assert theme.current().name == "projector"
    assert not window.sidebar.isVisible() and not window.lesson_pane.isVisible()
    assert not window.menuBar().isVisible()
    assert window.isFullScreen()
    press(qtbot, window, Qt.Key_Escape)
    assert not Presenter.of(window).active
    assert theme.current().name == "dark"
    assert window.sidebar.isVisible() and window.menuBar().isVisible()
    assert not window.isFullScreen()


def test_lecture_mode_has_no_dead_explain_button(window, qtbot):
    """Lecture mode has no lesson text: the header's Explain goes, Questions stays."""
    page = window.pages[window.current]
    assert not page.explain_button.isHidden()
    press(qtbot, window, Qt.Key_F5)
    assert page.explain_button.isHidden() and not page.questions_button.isHidden()
    window.show_figure(window.sequence()[1])  # and on the pages it builds
    assert window.pages[window.current].explain_button.isHidden()
    press(qtbot, window, Qt.Key_Escape)
    assert not window.pages[window.current].explain_button.isHidden()


def test_lecture_mode_covers_the_screen_and_gives_the_window_back(window, qapp):
    flags = window.windowFlags()
    Presenter.of(window).enter()
    # Covers it (the offscreen test screen is narrower than the window can be).
    assert window.geometry().contains(window.screen().geometry())
    assert window.windowFlags() & Qt.FramelessWindowHint
    assert window.windowFlags() & Qt.WindowStaysOnTopHint
    assert window.actions["present"] in window.menus["view"].actions()
    Presenter.of(window).leave()
    assert window.windowFlags() == flags and window.isVisible()
    assert not window.isFullScreen()


def test_page_down_steps_an_animation_then_moves_on(window, qtbot, lesson_one):
    Presenter.of(window).enter()
    press(qtbot, window, Qt.Key_PageDown)
    assert window.current == "1.2"
    model = window.models["1.2"]
    assert not model.finished  # arrived rewound, ready to be stepped
    steps = 0
    while not model.finished:
        press(qtbot, window, Qt.Key_PageDown)
        steps += 1
        assert window.current == "1.2" and steps < 500
    positions = [model._progress]
    press(qtbot, window, Qt.Key_PageUp)  # one step back, still in 1.2
    assert window.current == "1.2" and not model.finished
    positions.append(model._progress)
    assert positions[1] < positions[0]
    press(qtbot, window, Qt.Key_PageDown)
    assert model.finished
    press(qtbot, window, Qt.Key_PageDown)
    assert window.current == "1.3"
    press(qtbot, window, Qt.Key_PageUp)
    assert window.current == "1.2"
    press(qtbot, window, Qt.Key_PageUp)
    assert window.current == "1.1"
    press(qtbot, window, Qt.Key_PageUp)  # no wrapping in a lecture
    assert window.current == "1.1"


def test_space_plays_and_pauses(window, qtbot):
    window.show_figure("1.2")
    press(qtbot, window, Qt.Key_Space)  # not presenting: Space is not ours
    assert not window.models["1.2"].playing
    Presenter.of(window).enter()
    model = window.models["1.2"]
    press(qtbot, window, Qt.Key_Space)
    assert model.playing and window.clock.running
    press(qtbot, window, Qt.Key_Space)
    assert not model.playing and not window.clock.running


def test_b_and_period_blank_the_screen(window, qtbot):
    Presenter.of(window).enter()
    press(qtbot, window, Qt.Key_B)
    assert Presenter.of(window).blanked
    blank = Presenter.of(window).blank
    assert blank.geometry() == window.rect()
    image = blank.grab().toImage()
    assert image.pixelColor(image.width() // 2, image.height() // 2).name() == "#000000"
    press(qtbot, window, Qt.Key_B)
    assert not Presenter.of(window).blanked
    press(qtbot, window, Qt.Key_Period)
    assert Presenter.of(window).blanked
    press(qtbot, window, Qt.Key_Period)
    assert not Presenter.of(window).blanked


def test_models_survive_the_theme_switch_of_lecture_mode(window):
    window.show_figure("1.3")
    window.models["1.3"].set("registers_per_thread", 128)
    Presenter.of(window).enter()
    Presenter.of(window).leave()
    assert window.models["1.3"].registers_per_thread == 128


def test_playlist_orders_the_figures(window, qtbot, tmp_path):
    path = tmp_path / "talk.gpuviz-playlist"
    path.write_text("# my talk\n1.3\n1.1, 1.4\n", encoding="utf-8")
    assert window.open_playlist(path)
    assert numbers(window.playlist) == ["1.3", "1.1", "1.4"] and window.current == "1.3"
    Presenter.of(window).enter()
    press(qtbot, window, Qt.Key_PageDown)
    assert window.current == "1.1"
    press(qtbot, window, Qt.Key_PageDown)
    assert window.current == "1.4"
    press(qtbot, window, Qt.Key_PageDown)
    assert window.current == "1.4"
    saved = tmp_path / "again.gpuviz-playlist"
    assert window.save_playlist(saved)
    assert numbers(parse_playlist(saved.read_text(encoding="utf-8"))) == ["1.3", "1.1", "1.4"]


@pytest.mark.parametrize("content", ["1.3\n9.9\n", "[1.3, {\"x\": 1}]", "{\"figures\": 3}",
                                     "[broken", "", "# nothing\n"])
def test_a_bad_playlist_changes_nothing(window, tmp_path, content):
    window.set_playlist(entries("1.4", "1.3"))
    path = tmp_path / "bad.txt"
    path.write_text(content, encoding="utf-8")
    assert not window.open_playlist(path)
    assert numbers(window.playlist) == ["1.4", "1.3"]
    assert window.messages and "Nothing was changed" in window.messages[-1]


def test_binary_playlist_is_refused(window, tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"\xff\xfe\x00junk")
    assert not window.open_playlist(path)
    assert "not text" in window.messages[-1]


def test_playlist_formats(lesson_one):
    assert numbers(parse_playlist('{"figures": ["1.2", "1.1"]}')) == ["1.2", "1.1"]
    assert numbers(parse_playlist("[1.2, \"1.4\"]")) == ["1.2", "1.4"]
    assert numbers(parse_playlist(playlist_text(entries("1.1", "1.3")))) == ["1.1", "1.3"]
    with pytest.raises(PlaylistError, match="unknown figure '7.7'"):
        parse_playlist("1.1,7.7")


def test_a_playlist_entry_may_give_a_step(lesson_one):
    stepped = [PlaylistEntry("1.1"), PlaylistEntry("1.2", 3), PlaylistEntry("1.2", END)]
    assert parse_playlist("1.1, 1.2 step=3\n1.2 step=end  # filled") == stepped
    assert parse_playlist('["1.1", "1.2 step=3", "1.2 step=END"]') == stepped
    assert parse_playlist(playlist_text(stepped)) == stepped


@pytest.mark.parametrize("text, needle", [
    ("1.1 step=2", "1.1 step=2: figure 1.1 is not animated"),
    ("step=1 1.2", "'step=1' comes before any figure"),
    ("1.2 step=99999", "out of range; allowed: a whole number from 0 to"),
    ("1.2 step=x", "'x' is not a step"),
    ("1.2 step=1 step=2", "figure 1.2 is given two steps"),
])
def test_a_bad_playlist_step_is_refused(lesson_one, text, needle):
    with pytest.raises(PlaylistError, match=needle):
        parse_playlist(text)


def test_lecture_opens_a_playlist_entry_at_its_step(window, qtbot):
    window.set_playlist(parse_playlist("1.2 step=2, 1.3, 1.2 step=3"))
    model = window.models["1.2"]
    assert window.current == "1.2" and model.current_step == 2
    Presenter.of(window).enter()
    press(qtbot, window, Qt.Key_PageUp)  # back from the step it opened at
    assert window.current == "1.2" and model.current_step == 1
    while not model.finished:
        press(qtbot, window, Qt.Key_PageDown)
    press(qtbot, window, Qt.Key_PageDown)
    assert window.current == "1.3"
    press(qtbot, window, Qt.Key_PageUp)  # the playlist's 1.2 again, at its step
    assert window.current == "1.2" and model.current_step == 2
    press(qtbot, window, Qt.Key_PageUp)
    assert model.current_step == 1


def test_the_playlist_option_takes_steps(monkeypatch):
    seen = {}
    monkeypatch.setattr("gpuviz.app.run_window", lambda *a, **k: seen.update(k) or 0)
    assert cli.main(["--present", "--playlist", "1.3, 6.3 step=end, 7.1 step=3"]) == 0
    assert seen["playlist"] == [PlaylistEntry("1.3"), PlaylistEntry("6.3", END),
                                PlaylistEntry("7.1", 3)]


def run(capsys, *args):
    code = cli.main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("args, needle", [
    (["--present", "--playlist", "1.1,9.9"], "unknown figure '9.9'"),
    (["--playlist", ""], "names no figures"),
    (["--playlist", "6.3 step=-1"], "--playlist: 6.3 step=-1: -1 is out of range"),
    (["--kiosk", "--present"], "cannot be combined"),
    (["--lessons", "1-2"], "need --kiosk"),
])
def test_bad_lecture_options_exit_2(capsys, args, needle):
    code, out, err = run(capsys, *args)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpuviz: error:") and needle in lines[0]


def test_present_option_opens_lecture_mode(monkeypatch, capsys):
    seen = {}

    def fake_run_window(spec, values, theme_name, warnings, **options):
        seen.update(options)
        return 0

    monkeypatch.setattr("gpuviz.app.run_window", fake_run_window)
    assert cli.main(["--present", "--playlist", "1.3,1.1"]) == 0
    assert seen == {"present": True, "playlist": entries("1.3", "1.1"), "kiosk": None}
