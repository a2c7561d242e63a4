"""The main window: sidebar, navigation, lesson pane, theme, remembered state."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QEvent, QSettings, Qt
from PySide6.QtGui import QTextOption

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


# --- layout: lesson pane, sidebar, lesson text, Theme menu, shortcuts --------------------
def make_window(qtbot, size, theme_name="dark"):
    from gpuviz import app, theme

    theme.apply(theme_name)
    window = app.make_window(theme_name, remember=False)  # with lecture mode (F5)
    qtbot.addWidget(window)
    window.resize(*size)
    with qtbot.waitActive(window):  # for F5, a shortcut of the active window
        window.show()
    window.show_figure(FIRST)
    return window


@pytest.fixture
def sized(themed, qtbot):
    from gpuviz import theme

    windows = []

    def make(size, theme_name="dark"):
        windows.append(make_window(qtbot, size, theme_name))
        return windows[-1]

    yield make
    for window in windows:
        window.clock.stop()
    theme.apply("dark")


@pytest.mark.parametrize(("size", "theme_name", "collapsed"), [
    ((1280, 800), "dark", True), ((1366, 768), "dark", True),
    ((1920, 1080), "dark", False), ((1920, 1080), "projector", True)])
def test_the_lesson_pane_leaves_the_figure_room(size, theme_name, collapsed, sized, qapp):
    from gpuviz import theme
    from gpuviz.main_window import LESSON_PANE_SHARE, MIN_FIGURE_WIDTH

    window = sized(size, theme_name)
    qapp.processEvents()
    sidebar = window.sidebar.width()
    window.explain()
    qapp.processEvents()
    assert window.lesson_pane.width() == pytest.approx(LESSON_PANE_SHARE * size[0], abs=2)
    assert window.stack.width() >= MIN_FIGURE_WIDTH * theme.current().font_scale
    assert (window.splitter.sizes()[0] == 0) == collapsed
    window.toggle_lesson_pane()  # closed: the sidebar as it was
    qapp.processEvents()
    assert window.splitter.sizes()[0] == sidebar
    assert window.stack.width() == window.splitter.width() - sidebar - window.splitter.handleWidth()


def test_on_a_small_projector_the_lesson_text_takes_the_figures_place(sized, qapp):
    """At 1024x768 in the projector look even a folded sidebar leaves the figure too
    narrow beside the pane: the text takes the figure's place until the pane closes."""
    window = sized((1024, 768), "projector")
    qapp.processEvents()
    sidebar = window.sidebar.width()
    window.explain()
    qapp.processEvents()
    assert window.stack.isHidden()
    assert window.lesson_pane.width() >= window.splitter.width() - 2 * window.splitter.handleWidth()
    window.toggle_lesson_pane()
    qapp.processEvents()
    assert not window.stack.isHidden() and window.splitter.sizes()[0] == sidebar


def test_a_sidebar_collapsed_by_the_pane_comes_back_at_the_next_start(sized, qapp, qtbot):
    window = sized((1280, 800))
    window.explain()
    qapp.processEvents()
    assert window.splitter.sizes()[0] == 0
    window.remember = True
    window.save_state(settings())
    again = MainWindow("dark")
    qtbot.addWidget(again)
    again.restore_state(settings())
    again.show()
    qapp.processEvents()
    assert not again.lesson_pane.isVisible()
    # (the offscreen screen may hold a smaller window: the sidebar's width follows it)
    assert again.splitter.sizes()[0] == again._sidebar_width() > 0


def test_every_figure_title_has_a_tooltip_and_most_fit(sized, qapp):
    from gpuviz.main_window import SIDEBAR_MAX_SHARE

    window = sized((1280, 800))
    qapp.processEvents()
    items = window._items()
    assert [item.toolTip(0) for item in items] == [s.title for s in catalog.all_figures()]
    assert window.sidebar.width() <= SIDEBAR_MAX_SHARE * 1280 + 1
    tree = window.tree
    room = tree.viewport().width() - 2 * tree.indentation()
    fits = [tree.fontMetrics().horizontalAdvance(item.text(0)) <= room for item in items]
    assert sum(fits) > len(fits) / 2
    wide = sized((1920, 1080))
    qapp.processEvents()
    room = wide.tree.viewport().width() - 2 * wide.tree.indentation()
    assert all(wide.tree.fontMetrics().horizontalAdvance(item.text(0)) <= room
               for item in wide._items())


def test_the_sidebar_follows_the_splitter(sized, qapp):
    window = sized((1280, 800))
    qapp.processEvents()
    total = sum(window.splitter.sizes())
    window.splitter.setSizes([450, total - 450, 0])
    qapp.processEvents()
    assert window.sidebar.width() == 450


@pytest.mark.parametrize("size", [(1280, 800), (1920, 1080)])
def test_lesson_code_blocks_need_no_horizontal_scroll_bar(size, sized, qapp):
    window = sized(size)
    for lesson in catalog.LESSONS:
        if not lesson.figures:
            continue
        window.show_figure(lesson.figures[0].number)
        window.explain()
        qapp.processEvents()
        assert window.lesson_pane.horizontalScrollBar().maximum() == 0, lesson.number
        if size == (1280, 800):  # every table fits there with its numbers whole
            assert window.lesson_pane.wordWrapMode() == QTextOption.WordWrap, lesson.number


def checked_theme(window):
    return [name for name, action in window.theme_actions.items() if action.isChecked()]


def test_the_theme_menu_marks_the_theme_shown(sized, qapp, qtbot):
    window = sized((1280, 800))
    assert checked_theme(window) == ["dark"]
    window.theme_actions["light"].trigger()
    assert checked_theme(window) == ["light"] and window.theme_name == "light"
    qtbot.keyClick(window, Qt.Key_F5)  # lecture mode shows the projector look
    assert checked_theme(window) == ["projector"] and window.theme_name == "projector"
    qtbot.keyClick(window, Qt.Key_Escape)
    assert checked_theme(window) == ["light"] and window.theme_name == "light"
    dialog = window.show_preferences()  # Preferences
    dialog.show_preferences(state.Preferences("system", 1.0, False))
    dialog.accept()
    assert checked_theme(window) == ["system"]
    assert window.theme_actions["system"].text() == (
        f"&System ({window.theme_name.capitalize()})")


def test_the_system_entry_follows_the_desktop(sized, qapp, monkeypatch):
    """The desktop switches between dark and light (offscreen Qt cannot: its answer and
    its signal are played here)."""
    from gpuviz import theme

    window = sized((1280, 800))
    window.set_theme("system")
    resolve = theme.resolve
    for scheme, name in ((Qt.ColorScheme.Light, "light"), (Qt.ColorScheme.Dark, "dark")):
        monkeypatch.setattr(theme, "resolve", lambda n, app=None, s=name: (
            s if n == "system" else resolve(n, app)))
        qapp.styleHints().colorSchemeChanged.emit(scheme)
        assert window.theme_name == name
        assert checked_theme(window) == ["system"]
        assert window.theme_actions["system"].text() == f"&System ({name.capitalize()})"
    window.set_theme("dark")  # not following: the entry still names the desktop's look
    monkeypatch.setattr(theme, "resolve", lambda n, app=None: (
        "light" if n == "system" else resolve(n, app)))
    qapp.styleHints().colorSchemeChanged.emit(Qt.ColorScheme.Light)
    assert window.theme_name == "dark" and checked_theme(window) == ["dark"]
    assert window.theme_actions["system"].text() == "&System (Light)"


@pytest.mark.parametrize("theme_name", ["dark", "projector"])
def test_the_shortcuts_dialog_is_a_two_column_table(theme_name, sized, qapp, qtbot):
    from gpuviz.main_window import SHORTCUTS

    window = sized((1280, 800), theme_name)
    dialog = window.show_shortcuts()
    qapp.processEvents()
    table = dialog.table
    assert (table.rowCount(), table.columnCount()) == (len(SHORTCUTS), 2)
    assert [table.item(r, 0).text() for r in range(table.rowCount())] == [
        keys for _, keys in SHORTCUTS]
    assert table.horizontalScrollBar().maximum() == 0
    assert table.verticalScrollBar().maximum() == 0
    widest = max(table.fontMetrics().horizontalAdvance(what) for what, _ in SHORTCUTS)
    assert table.columnWidth(1) >= widest
    assert table.font().pointSizeF() == qapp.font().pointSizeF()  # the look's size
    closed = []
    dialog.finished.connect(closed.append)
    qtbot.keyClick(dialog, Qt.Key_Escape)
    assert closed


def test_lecture_mode_over_an_open_lesson_pane_gives_the_layout_back(sized, qapp, qtbot):
    window = sized((1280, 800))
    window.explain()
    qapp.processEvents()
    opened = window.splitter.sizes()
    qtbot.keyClick(window, Qt.Key_F5)
    qtbot.keyClick(window, Qt.Key_Escape)
    # The offscreen screen is 800 px wide and holds the restored window to that (the
    # sidebar is squeezed there): the pane follows the window's width back.
    window.resize(1280, 800)
    qapp.processEvents()
    assert window.lesson_pane.isVisible() and window.splitter.sizes() == opened
    window.toggle_lesson_pane()
    qapp.processEvents()
    assert window.splitter.sizes()[0] > 0 and window.sidebar.isVisible()


def test_the_pane_follows_the_window_and_gives_the_sidebar_back_when_there_is_room(sized, qapp):
    window = sized((1280, 800))
    qapp.processEvents()
    window.explain()
    qapp.processEvents()
    assert window.splitter.sizes()[0] == 0
    window.resize(1920, 1080)
    qapp.processEvents()
    sidebar, _, pane = window.splitter.sizes()
    assert sidebar > 0 and pane == round(0.3 * 1920)
    window.resize(1280, 800)
    qapp.processEvents()
    assert window.splitter.sizes()[0] == 0
