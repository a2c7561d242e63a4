"""Worked questions: the files, the answers the models compute, checking a typed answer,
and `gpuviz --questions L`."""

import json

import pytest

from gpuviz import app as cli
from gpuviz import catalog, questions
from gpuviz.figure_settings import make_model, parse_settings

LESSONS = questions.lesson_numbers()


@pytest.fixture(scope="module")
def every_answer():
    return {n: questions.answered(n) for n in LESSONS}


def test_every_lesson_has_three_to_five_questions_with_unique_keys(every_answer):
    assert len(every_answer) == 13
    for n, answered in every_answer.items():
        assert 3 <= len(answered) <= 5, f"lesson {n}"
        for a in answered:
            assert catalog.lesson_of(catalog.figure(a.question.figure)).number == n
    keys = [a.question.key for answers in every_answer.values() for a in answers]
    assert len(set(keys)) == len(keys)


def test_every_answer_is_in_its_figures_readout_at_its_settings(every_answer):
    """What --readout prints at the question's settings holds the answer (built headless,
    as --readout does), and the working shows that readout's text, no unfilled field."""
    for answered in every_answer.values():
        for a in answered:
            q = a.question
            spec = catalog.figure(q.figure)
            entry = cli.readout_json(spec, make_model(spec, parse_settings(
                spec, list(q.settings))))["readouts"][q.readout]
            value = questions.convert(entry["value"], entry["unit"] or q.unit, q.unit)
            assert value == pytest.approx(a.value, rel=1e-12), q.key
            assert entry["text"] in a.working, q.key
            assert "{" not in a.working, q.key


def answer(text, **changes):
    q = questions.Question(1, "t", "1.3", (), "", "occupancy", "ms", None, None, "", "t.toml")
    fields = {"relative": 0.02} | changes
    import dataclasses

    return questions.Answered(dataclasses.replace(q, **fields), 4.56, "").check(text)


@pytest.mark.parametrize("typed", ["4.56 ms", "4.6ms", "4.5", "4560 µs", "4560us",
                                   "0.00456 s", "4,560 µs"])
def test_an_answer_within_tolerance_in_any_multiple_of_the_unit_is_right(typed):
    assert answer(typed).right


@pytest.mark.parametrize("typed, words", [
    ("4.9 ms", "not within 2%"), ("4.56 GB", "'GB' is not a unit of this answer"),
    ("about four", "does not start with a number"), ("", "does not start with a number")])
def test_a_wrong_answer_says_why(typed, words):
    verdict = answer(typed)
    assert not verdict.right and words in verdict.message


def test_an_absolute_tolerance_is_in_the_questions_unit():
    assert answer("4.9 ms", relative=None, absolute=0.5).right
    assert not answer("5.1 ms", relative=None, absolute=0.5).right


def test_units_convert_between_prefixes_counts_and_percent_words():
    assert questions.convert(46.2, "% of time", "%") == 46.2
    assert questions.convert(1, "GB", "MB") == 1000
    assert questions.convert(186, "sequence", "sequences") == 186
    assert questions.parse_quantity("\u22122.5×") == (-2.5, "×")
    with pytest.raises(questions.QuestionError):
        questions.convert(1, "GB", "ms")


def test_a_broken_file_names_the_file_the_question_and_the_field(tmp_path, monkeypatch):
    lesson = catalog.LESSONS[0]
    path = tmp_path / questions.questions_path(lesson).name
    monkeypatch.setattr(questions, "questions_path", lambda _lesson: path)
    path.write_text('[[question]]\nid = "a"\nfigure = "1.3"\n', encoding="utf-8")
    with pytest.raises(questions.QuestionError, match=r"01-gpu.*question 1: field 'settings'"):
        questions.load_questions(1)
    path.write_text('[[question]\n', encoding="utf-8")
    with pytest.raises(questions.QuestionError, match="cannot be read as TOML"):
        questions.load_questions(1)
    good = ('[[question]]\nid = "a"\nfigure = "1.3"\nsettings = ["threads_per_block=5"]\n'
            'ask = ""\nreadout = "occupancy"\nunit = "%"\nrelative = 0.1\nworking = ""\n')
    path.write_text(good, encoding="utf-8")
    with pytest.raises(questions.QuestionError, match="question 'a': settings: "
                                                      "threads_per_block: 5 is out of range"):
        questions.answered(1)
    path.write_text(good.replace("threads_per_block=5", "gpu=a100_sxm").replace(
        'unit = "%"', 'unit = "ms"'), encoding="utf-8")
    with pytest.raises(questions.QuestionError, match="unit 'ms' is not a multiple"):
        questions.answered(1)


def test_questions_option_prints_the_computed_answers(capsys):
    assert cli.main(["--questions", "12"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert [q["id"] for q in printed] == [a.question.id for a in questions.answered(12)]
    first = printed[0]
    assert first["figure"] == "12.1" and first["unit"] == "sequences"
    assert set(first) >= {"id", "figure", "settings", "answer", "unit", "tolerance"}


@pytest.mark.parametrize("lesson, words", [("14", "there is no lesson 14"),
                                           ("x", "'x' is not a lesson number")])
def test_questions_option_refuses_a_lesson_that_is_not_there(capsys, lesson, words):
    assert cli.main(["--questions", lesson]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1


# --- the window: the panel, progress, modes, the handout ------------------------------------
@pytest.fixture
def window(themed):
    from gpuviz import state
    from gpuviz.main_window import MainWindow

    state.forget_progress(state.settings())
    win = MainWindow("dark")
    win.resize(1280, 800)
    win.show()
    yield win
    state.forget_progress(state.settings())
    win.close()
    win.deleteLater()


def answer_right(window, number, index=0):
    window.show_figure(number)
    window.show_questions()
    card = window.questions_dock.widget().cards[index]
    card.entry.setText(card.answered.text)
    assert card.check()
    return card


def lesson_line(window, lesson):
    return window.tree.topLevelItem(lesson - 1).text(1)


def test_a_right_answer_is_remembered_counted_in_the_sidebar_and_reset(window, themed):
    from gpuviz import state
    from gpuviz.main_window import MainWindow

    assert lesson_line(window, 12).endswith("0/5")
    card = answer_right(window, "12.1")
    assert lesson_line(window, 12).endswith("1/5")
    assert card.answered.question.key in state.load_progress(state.settings())
    again = MainWindow("dark")  # the next start
    assert again.tree.topLevelItem(11).text(1) == "1/5"
    again.deleteLater()
    window.reset_progress()
    assert lesson_line(window, 12).endswith("0/5")
    assert state.load_progress(state.settings()) == set()


def test_set_it_up_opens_the_figure_at_the_questions_settings(window):
    window.show_figure("1.1")
    window.show_questions()
    card = window.questions_dock.widget().cards[2]  # 1.3 at 1,024 threads, 64 registers
    card.setup_button.click()
    assert window.current == "1.3"
    model = window.models["1.3"]
    readout = model.readouts()[card.answered.question.readout]
    assert readout.value == pytest.approx(card.answered.value)
    card.working_button.click()
    assert card.working.isVisibleTo(window) and readout.text in card.working.text()


def test_lecture_and_kiosk_modes_show_the_questions_but_remember_nothing(window, themed):
    from gpuviz import state
    from gpuviz.app import make_window
    from gpuviz.kiosk import KioskConfig
    from gpuviz.presentation import Presenter

    Presenter(window).enter()
    answer_right(window, "3.1")
    assert lesson_line(window, 3).endswith("0/4")
    Presenter.of(window).leave()
    kiosk = make_window("dark", kiosk=KioskConfig().with_figures())
    answer_right(kiosk, "3.1")
    assert state.load_progress(state.settings()) == set()
    kiosk.deleteLater()


def test_the_handout_has_the_answers_on_a_page_after_the_questions(window, tmp_path):
    from gpuviz.questions_panel import handout_markdown

    window.show_figure("9.2")
    path = tmp_path / "lesson-9.pdf"
    assert window.export_questions(path)
    pages = path.read_bytes().count(b"/Type /Page\n")
    assert pages >= 2
    text = handout_markdown(catalog.LESSONS[8], questions.answered(9))
    asks, answers = text.split("# Answers")
    assert all(a.question.ask.strip() in asks and a.text in answers
               for a in questions.answered(9))


def test_the_handouts_answers_start_a_page_of_their_own(themed):
    """Laid out on A4 (the PDF's page less its margins), the answers' heading is the top
    of a page after the last question's."""
    from PySide6.QtCore import QSizeF

    from gpuviz.questions_panel import answers_heading, handout_document

    lesson = catalog.LESSONS[11]
    document = handout_document(lesson, questions.answered(12))
    height = (297 - 36) / 25.4 * 72
    document.setPageSize(QSizeF((210 - 36) / 25.4 * 72, height))
    layout = document.documentLayout()
    block = document.begin()
    while block.text() != answers_heading(lesson):
        last_question = block
        block = block.next()
    top = layout.blockBoundingRect(block).top()
    assert top // height > layout.blockBoundingRect(last_question).top() // height
    assert top % height < 0.1 * height


# --- the tour --------------------------------------------------------------------------------
def run_app(monkeypatch, *args):
    """gpuviz with `args` up to its event loop: the window it opened (events run once)."""
    import gc

    from PySide6.QtWidgets import QApplication

    from gpuviz.main_window import MainWindow

    before = set(QApplication.topLevelWidgets())
    opened = []

    def exec_once(_app=None):
        for _ in range(5):
            QApplication.processEvents()
        opened.extend(w for w in QApplication.topLevelWidgets()
                      if isinstance(w, MainWindow) and w not in before)
        return 0

    monkeypatch.setattr(QApplication, "exec", exec_once)
    assert cli.main(list(args)) == 0
    gc.unfreeze()
    window = opened[-1]
    window.remember = False  # leave the settings as the test found them on closing
    return window


def test_the_tour_comes_once_on_the_first_run_and_never_in_lecture_mode(themed, monkeypatch):
    from gpuviz import state
    from gpuviz.tour import STEPS, Tour

    state.reset_all()
    first = run_app(monkeypatch, "--figure", "1.1")
    tour = Tour.of(first)
    assert tour is not None and len(STEPS) == 6
    for index in range(len(STEPS)):  # each step points at a part of the window
        tour.go(index)
        assert tour.target is not None and tour.bubble.isVisible(), STEPS[index].title
    assert first.current == "2.2"  # the predict-first step opened a figure that has it
    qtbot_key(tour, "Escape")
    assert Tour.of(first) is None and first.current == "1.1"
    first.close()
    again = run_app(monkeypatch, "--figure", "1.1")
    assert Tour.of(again) is None  # remembered as seen
    again.close()
    state.reset_all()
    lecture = run_app(monkeypatch, "--present", "--figure", "1.1")
    assert Tour.of(lecture) is None
    lecture.start_tour()  # Help > Tour is off in lecture mode
    assert Tour.of(lecture) is None
    lecture.close()
    state.reset_all()


def qtbot_key(widget, name):
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    QTest.keyClick(widget, getattr(Qt, f"Key_{name}"))


def test_no_tour_in_kiosk_mode(themed):
    from gpuviz.app import make_window
    from gpuviz.kiosk import KioskConfig
    from gpuviz.tour import Tour

    kiosk = make_window("dark", kiosk=KioskConfig().with_figures())
    kiosk.start_tour()
    assert Tour.of(kiosk) is None and "tour" not in kiosk.actions
    kiosk.deleteLater()


# --- the end of each lesson's text ------------------------------------------------------------
def lesson_links(document):
    """The links of a rendered lesson text, in order."""
    hrefs = []
    block = document.begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            href = it.fragment().charFormat().anchorHref()
            if href and (not hrefs or hrefs[-1] != href):
                hrefs.append(href)
            it += 1
        block = block.next()
    return hrefs


@pytest.mark.parametrize("lesson", catalog.LESSONS, ids=lambda lesson: str(lesson.number))
def test_every_lesson_text_ends_with_its_questions_and_their_links(themed, lesson):
    """The pane's text ends with a Questions section made from the questions file: each
    question as asked, its figure, and two links that name it; never an answer (the
    section is made without building a model)."""
    from PySide6.QtGui import QTextDocument

    from gpuviz.lessons import lesson_text

    document = QTextDocument()
    document.setMarkdown(lesson_text(lesson).markdown)
    blocks = []
    block = document.begin()
    while block.isValid():
        blocks.append(block)
        block = block.next()
    headings = [b for b in blocks if b.blockFormat().headingLevel() > 0]
    assert headings[-1].text() == questions.SECTION_HEADING
    after = " ".join(b.text() for b in blocks[blocks.index(headings[-1]):])
    asked = questions.load_questions(lesson.number)
    places = [after.index(" ".join(q.ask.split())) for q in asked]
    assert places == sorted(places)
    for q in asked:
        assert f"Figure {q.figure}, {catalog.figure(q.figure).title}" in after
    links = [h for h in lesson_links(document) if ":" in h and not h.startswith("http")]
    assert links[-2 * len(asked):] == [q.link(kind) for q in asked
                                       for kind in (questions.ANSWER_LINK,
                                                    questions.SETUP_LINK)]
    for href in links[-2 * len(asked):]:
        kind, found = questions.linked_question(href)
        assert found in asked and href == found.link(kind)


def test_a_link_that_names_no_question_is_none():
    for href in ("question:1-no-such", "setup:99-x", "https://example.org", "question:x-y",
                 "question:", ""):
        assert questions.linked_question(href) is None


def test_the_lesson_texts_links_open_the_question_and_set_it_up(window):
    from PySide6.QtCore import QUrl
    from PySide6.QtWidgets import QApplication

    from gpuviz.main_window import MIN_FIGURE_WIDTH

    window.show_figure("1.1")
    window.explain()
    asked = questions.load_questions(1)
    last = asked[-1]
    window.lesson_pane.anchorClicked.emit(QUrl(last.link(questions.ANSWER_LINK)))
    panel = window.questions_dock.widget()
    assert window.questions_dock.isVisible() and panel.lesson == 1
    assert window.focusWidget() is panel.cards[-1].entry
    for _ in range(3):  # the dock takes its width: the sidebar folds, then the text closes
        QApplication.processEvents()
    assert window.lesson_pane.isHidden()
    assert window.splitter.sizes()[1] >= MIN_FIGURE_WIDTH  # room to answer with the figure
    window.lesson_pane.anchorClicked.emit(QUrl(last.link(questions.SETUP_LINK)))
    assert window.current == last.figure
    model = window.models[last.figure]
    assert model.readouts()[last.readout].value == pytest.approx(
        panel.cards[-1].answered.value)
    window.lesson_pane.anchorClicked.emit(QUrl("https://example.org"))  # nothing happens


# --- a visible way to the questions: the figure's header, and a small screen ------------------
def test_the_headers_questions_button_opens_and_closes_them(window):
    window.show_figure("4.1")
    page = window.pages["4.1"]
    assert page.questions_button.isVisible()
    page.questions_button.click()
    assert window.questions_dock.isVisible() and window.questions_dock.widget().lesson == 4
    window.questions_dock.widget().close_button.click()
    assert not window.questions_dock.isVisible()


@pytest.mark.parametrize("mode", ["kiosk", "lecture"])
def test_kiosk_and_lecture_visitors_open_the_questions_from_the_header_and_leave_no_trace(
        themed, mode):
    from PySide6.QtCore import QUrl
    from PySide6.QtWidgets import QDockWidget

    from gpuviz import state
    from gpuviz.app import make_window
    from gpuviz.kiosk import KioskConfig
    from gpuviz.presentation import Presenter

    store = state.settings()
    store.sync()
    before = {key: store.value(key) for key in store.allKeys()}
    window = make_window("dark", kiosk=KioskConfig().with_figures() if mode == "kiosk"
                         else None, remember=mode != "kiosk")
    window.resize(1280, 800)
    window.show()
    window.show_figure("3.1")
    if mode == "lecture":
        Presenter.of(window).enter()
    page = window.pages[window.current]
    assert page.questions_button.isVisible()  # no menu bar: this button is the way in
    page.questions_button.click()
    floats = bool(window.questions_dock.features() & QDockWidget.DockWidgetFloatable)
    assert floats == (mode == "lecture")  # a kiosk's panel cannot be torn off and lost
    card = window.questions_dock.widget().cards[0]
    card.setup_button.click()
    card.entry.setText(card.answered.text)
    assert card.check()
    if mode == "kiosk":  # the lesson text's links too
        window.explain()
        window.lesson_pane.anchorClicked.emit(QUrl(card.answered.question.link(
            questions.SETUP_LINK)))
    else:
        Presenter.of(window).leave()
        window.remember = False  # closing the test's window saves nothing either
    window.close()  # a kiosk refuses: hidden, its page no longer fits the look to itself
    window.hide()
    store.sync()
    assert {key: store.value(key) for key in store.allKeys()} == before
    window.deleteLater()


def test_on_a_small_projector_the_questions_take_the_figures_place_until_set_up(themed):
    from gpuviz import theme
    from gpuviz.main_window import MainWindow

    theme.apply("projector")
    window = MainWindow("projector", remember=False)
    window.resize(1024, 768)
    window.show()
    window.show_figure("12.1")
    window.show_questions()
    themed.processEvents()
    panel = window.questions_dock.widget()
    assert window.splitter.isHidden() and window.questions_dock.width() > 900
    card = panel.cards[1]
    card.entry.setText("12 ms")
    card.setup_button.click()  # the figure comes back, the panel steps aside
    assert not window.splitter.isHidden() and not window.questions_dock.isVisible()
    assert window.stack.currentWidget() is window.pages["12.1"]
    window.pages["12.1"].questions_button.click()  # and back, as it was left
    assert window.splitter.isHidden() and panel.cards[1].entry.text() == "12 ms"
    window.close()
    window.deleteLater()
    theme.apply("dark")
    theme.fit_to(1280, 800)  # as the other tests expect the look
