"""The Questions panel of a lesson, and its printed handout.

One card per question: the question, "Set it up" (the figure at the question's settings),
a field for the answer with its unit, the verdict, and "Show the working". The panel
knows nothing of the window: it asks for a figure through `set_up` and says a question
was answered right through `answered_right`; the window decides what is remembered.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QMarginsF, Qt, QTimer, Signal
from PySide6.QtGui import (
    QPageLayout,
    QPageSize,
    QPdfWriter,
    QTextCursor,
    QTextDocument,
    QTextFormat,
)
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from gpuviz import catalog
from gpuviz.questions import Answered

ANSWERS_HEADING = "Answers"


def _markdown_label(text: str) -> QLabel:
    label = QLabel(text)
    label.setTextFormat(Qt.MarkdownText)
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextSelectableByMouse)
    return label


class QuestionCard(QFrame):
    set_up = Signal(object)  # the Question
    answered_right = Signal(object)  # the Question

    def __init__(self, index: int, answered: Answered, done: bool) -> None:
        super().__init__()
        self.answered = answered
        q = answered.question
        self.setFrameShape(QFrame.StyledPanel)
        self.ask = _markdown_label(f"**{index}.** {q.ask.strip()}")
        # Full size: the lecture hall's smallest text is the widgets' (16 px and up).
        self.where = QLabel(f"<i>{q.where_text()}.</i> Answer in {q.unit or 'a number'}, "
                            f"{q.tolerance_text()}.")
        self.where.setWordWrap(True)
        self.setup_button = QPushButton("Set it up")
        self.setup_button.setToolTip(f"Open figure {q.figure} at these settings")
        self.setup_button.clicked.connect(lambda: self.set_up.emit(q))
        self.entry = QLineEdit()
        self.entry.setPlaceholderText(f"your answer, e.g. 12.5 {q.unit}".rstrip())
        self.entry.setAccessibleName(f"Answer to question {index}")
        self.entry.returnPressed.connect(self.check)
        self.check_button = QPushButton("Check")
        self.check_button.clicked.connect(self.check)
        self.verdict = QLabel("Answered right before." if done else "")
        self.verdict.setWordWrap(True)
        self.working_button = QPushButton("Show the working")
        self.working_button.setCheckable(True)
        self.working_button.toggled.connect(self.show_working)
        self.working = _markdown_label(answered.working.strip())
        self.working.hide()
        row = QHBoxLayout()
        row.addWidget(self.entry, 1)
        row.addWidget(self.check_button)
        buttons = QHBoxLayout()
        buttons.addWidget(self.setup_button)
        buttons.addWidget(self.working_button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        for widget in (self.ask, self.where):
            layout.addWidget(widget)
        layout.addLayout(buttons)
        layout.addLayout(row)
        layout.addWidget(self.verdict)
        layout.addWidget(self.working)

    def check(self) -> bool:
        verdict = self.answered.check(self.entry.text())
        self.verdict.setText(("✓ " if verdict.right else "✗ ") + verdict.message)
        if verdict.right:
            self.answered_right.emit(self.answered.question)
        return verdict.right

    def show_working(self, shown: bool) -> None:
        self.working.setVisible(shown)
        self.working_button.setText("Hide the working" if shown else "Show the working")


class QuestionsPanel(QWidget):
    """A lesson's questions, one card each, in a scrolling column."""

    set_up = Signal(object)  # a Question: open its figure at its settings
    answered_right = Signal(object)  # a Question
    close_requested = Signal()  # Close: a button a finger can hit (the dock's is tiny)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.lesson: int | None = None
        self.cards: list[QuestionCard] = []
        self.heading = QLabel()
        self.heading.setWordWrap(True)
        self.close_button = QPushButton("Close")
        self.close_button.setToolTip("Close the questions (F2 opens them again)")
        self.close_button.clicked.connect(self.close_requested)
        self.body = QWidget()
        self.column = QVBoxLayout(self.body)
        self.column.addStretch(1)
        self.scroll = scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)  # the cards wrap instead
        scroll.setFrameShape(QFrame.NoFrame)
        scroll.setWidget(self.body)
        layout = QGridLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(self.heading, 0, 0)
        layout.addWidget(self.close_button, 0, 1, Qt.AlignTop)
        layout.addWidget(scroll, 1, 0, 1, 2)
        layout.setColumnStretch(0, 1)

    def show_lesson(self, lesson: catalog.Lesson, answered: list[Answered] | str,
                    done: set[str]) -> None:
        """The lesson's questions (or the sentence saying why they could not be loaded),
        those in `done` marked as answered right before."""
        self.lesson = lesson.number
        for card in self.cards:
            self.column.removeWidget(card)
            card.deleteLater()
        self.cards = []
        if isinstance(answered, str):
            self.heading.setText(f"<b>Lesson {lesson.number} questions</b><br>{answered}")
            return
        self.heading.setText(f"<b>Lesson {lesson.number}: {lesson.title}</b><br>"
                             f"{len(answered)} questions, each answered by a figure.")
        for index, item in enumerate(answered, 1):
            card = QuestionCard(index, item, item.question.key in done)
            card.set_up.connect(self.set_up)
            card.answered_right.connect(self.answered_right)
            self.column.insertWidget(self.column.count() - 1, card)
            self.cards.append(card)


    def focus_question(self, key: str) -> None:
        """Scroll to the question `key` (Question.key) and put the cursor in its answer."""
        card = next((c for c in self.cards if c.answered.question.key == key), None)
        if card is not None:
            card.entry.setFocus()
            # Cards made just now are laid out later: scroll once they have their places.
            QTimer.singleShot(0, self, lambda: self._scroll_to(key))

    def _scroll_to(self, key: str) -> None:
        card = next((c for c in self.cards if c.answered.question.key == key), None)
        if card is not None:
            self.scroll.ensureWidgetVisible(card, 0, 0)


# --- the handout ---------------------------------------------------------------------------
def answers_heading(lesson: catalog.Lesson) -> str:
    return f"{ANSWERS_HEADING}, lesson {lesson.number}"


def handout_markdown(lesson: catalog.Lesson, answered: list[Answered]) -> str:
    """The questions, then (from the heading ANSWERS_HEADING on) the answers and working."""
    parts = [f"# Lesson {lesson.number}: {lesson.title}\n\nWorked questions. Each is "
             "answered by a figure of gpuviz at the settings given.\n"]
    for index, item in enumerate(answered, 1):
        q = item.question
        parts.append(f"**{index}.** {q.ask.strip()}\n\n*{q.where_text()}. Answer in "
                     f"{q.unit or 'a number'}.*\n\nAnswer: ______________________\n")
    parts.append(f"# {answers_heading(lesson)}\n")  # its page may leave the others
    for index, item in enumerate(answered, 1):
        parts.append(f"**{index}.** **{item.text}** ({item.question.tolerance_text()})\n\n"
                     f"{item.working.strip()}\n")
    return "\n".join(parts)


def handout_document(lesson: catalog.Lesson, answered: list[Answered]) -> QTextDocument:
    """The handout as a document: the answers start on a page of their own."""
    document = QTextDocument()
    document.setMarkdown(handout_markdown(lesson, answered))
    block = document.begin()
    while block.isValid() and block.text() != answers_heading(lesson):
        block = block.next()
    if block.isValid():
        fmt = block.blockFormat()
        fmt.setPageBreakPolicy(QTextFormat.PageBreak_AlwaysBefore)
        QTextCursor(block).setBlockFormat(fmt)
    return document


def write_handout(lesson: catalog.Lesson, answered: list[Answered], path: Path) -> None:
    """A PDF (A4) of the lesson's questions, answers on a new page; raises OSError when
    the file cannot be written."""
    document = handout_document(lesson, answered)
    writer = QPdfWriter(str(path))
    writer.setTitle(f"gpuviz lesson {lesson.number} questions")
    writer.setPageLayout(QPageLayout(QPageSize(QPageSize.A4), QPageLayout.Portrait,
                                     QMarginsF(18, 18, 18, 18), QPageLayout.Millimeter))
    document.print_(writer)
    del writer  # the file is finished when the writer goes
    if not path.exists() or path.stat().st_size == 0:
        raise OSError(f"cannot write {path}")
