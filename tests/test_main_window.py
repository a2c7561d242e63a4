"""The main window: sidebar, navigation, lesson pane, theme, remembered state."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QEvent, QSettings, Qt

from gpuviz import catalog, state
from gpuviz.main_window import MainWindow, saved_figure, settings

FIRST = catalog.all_figures()[0].number


@pytest.fixture(autouse=True)
def fresh_settings():
    state.reset_all()
    yield
    state.reset_all()


@pytest.fixture
def window(themed, qtbot):
    window = MainWindow("dark")
    qtbot.addWidget(window)
    window.resize(1280, 800)
    window.show()
    window.show_figure(FIRST)
    yield window
    window.clock.stop()


def lesson_items(window):
    return [window.tree.topLevelItem(i) for i in range(window.tree.topLevelItemCount())]


def test_sidebar_lists_all_lessons_and_greys_unbuilt_ones(window):
    items = lesson_items(window)
    assert [item.text(0) for item in items] == [f"{l.number}. {l.title}"
                                                for l in catalog.LESSONS]
    for item, lesson in zip(items, catalog.LESSONS, strict=True):
        assert bool(item.flags() & Qt.ItemIsEnabled) == bool(lesson.figures)
        assert item.childCount() == len(lesson.figures)


def test_page_down_and_up_walk_the_figures(window, qtbot):
    numbers = [spec.number for spec in catalog.all_figures()]
    qtbot.keyClick(window, Qt.Key_PageDown)
    assert window.current == numbers[1 % len(numbers)]
    qtbot.keyClick(window, Qt.Key_PageUp)
    assert window.current == FIRST
    window.step_figure(-1)
    assert window.current == numbers[-1]


def test_filter_hides_figures_that_do_not_match(window):
    window.apply_filter("occupancy")
    visible = [item.data(0, Qt.UserRole) for item in window._items() if not item.isHidden()]
    assert visible == ["1.3"]
    window.apply_filter("")
    assert all(not item.isHidden() for item in window._items())


def test_explain_opens_the_lesson_at_the_section(window):
    window.show_figure("1.3")
    window.explain()
    assert window.lesson_pane.isVisible()
    if window._lesson_headings:  # the lesson text may still be being written
        assert "ccupancy" in window.lesson_pane.textCursor().block().text()
    window.toggle_lesson_pane()
    assert not window.lesson_pane.isVisible()


def test_theme_switch_keeps_the_figure_state(window):
    window.show_figure("1.3")
    window.models["1.3"].set("registers_per_thread", 128)
    window.set_theme("projector")
    assert window.models["1.3"].registers_per_thread == 128
    assert window.stack.currentWidget() is window.pages["1.3"]
    window.set_theme("dark")


def test_window_keeps_its_size_through_every_figure_in_the_projector_look(window, qapp):
    window.set_theme("projector")
    for spec in catalog.all_figures():
        window.show_figure(spec.number)
        qapp.processEvents()
        assert (window.width(), window.height()) == (1280, 800), spec.number
    window.set_theme("dark")


def test_reset_shortcut_restores_defaults(window, qtbot):
    window.show_figure("1.3")
    window.models["1.3"].set("threads_per_block", 1024)
    qtbot.keyClick(window, Qt.Key_R, Qt.ControlModifier)
    assert window.models["1.3"].threads_per_block == 256


def test_last_figure_and_geometry_are_remembered(window):
    window.show_figure("1.3")
    window.close()
    assert saved_figure(settings()) == "1.3"
    assert settings().value("window/geometry") is not None


def test_a_corrupt_settings_file_gives_defaults(themed, qtbot, tmp_path):
    path = tmp_path / "broken.conf"
    path.write_bytes(b"\x00\xff[window]\ngeometry=@ByteArray(garbage\nfigure=99.99\n")
    store = QSettings(str(path), QSettings.IniFormat)
    assert saved_figure(store) is None
    window = MainWindow("dark")
    qtbot.addWidget(window)
    window.restore_state(store)
    assert window.width() >= 640


def test_preferences_apply_theme_text_scale_and_reduced_motion(window):
    dialog = window.show_preferences()
    dialog.show_preferences(state.Preferences("projector", 1.3, True))
    dialog.accept()
    assert window.theme_name == "projector"
    assert window.clock.reduced_motion
    assert state.load_preferences(settings()) == state.Preferences("projector", 1.3, True)
    dialog = window.show_preferences()
    dialog.show_preferences(state.Preferences())  # what Restore defaults does
    dialog.accept()
    assert state.load_preferences(settings()) == state.Preferences()
    assert not window.clock.reduced_motion


def test_at_most_four_pages_are_kept_and_the_rest_deleted(window, qapp):
    from gpuviz.main_window import MAX_PAGES

    numbers = [spec.number for spec in catalog.all_figures()][:MAX_PAGES + 2]
    for number in numbers:
        window.show_figure(number)
    assert list(window.pages) == numbers[-MAX_PAGES:]
    assert window.stack.count() == MAX_PAGES + 1  # and the placeholder
    assert window.stack.currentWidget() is window.pages[numbers[-1]]
    window.show_figure(numbers[-MAX_PAGES])  # a revisit counts as recent
    window.show_figure(numbers[0])
    assert numbers[-MAX_PAGES] in window.pages and numbers[-MAX_PAGES + 1] not in window.pages
    assert set(window.models) == set(numbers)  # the models stay


def test_a_revisited_evicted_figure_shows_its_state_as_left(window, qapp):
    from gpuviz.main_window import MAX_PAGES

    def shown(page):
        controls = {c.name: c.value_label.text() for c in page.view.controls.controls
                    if hasattr(c, "value_label")}
        return controls, page.view.readouts.texts()

    window.show_figure("1.3")
    window.models["1.3"].set("threads_per_block", 1024)
    qapp.processEvents()
    before = shown(window.pages["1.3"])
    assert before[0]["threads_per_block"] == "1,024 threads"
    deleted = []
    window.pages["1.3"].destroyed.connect(lambda: deleted.append(True))
    others = [spec.number for spec in catalog.all_figures() if spec.number != "1.3"]
    for number in others[:MAX_PAGES]:
        window.show_figure(number)
    assert "1.3" not in window.pages
    qapp.sendPostedEvents(None, QEvent.DeferredDelete)  # the page is really deleted
    assert deleted
    window.show_figure("1.3")
    qapp.processEvents()
    assert shown(window.pages["1.3"]) == before
